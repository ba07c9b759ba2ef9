// Forward over mixed batches: a sequence's logits must not depend on what
// else is in the batch (exactly), on how its prompt was chunked, or on the
// thread count; malformed batches are rejected with InvalidArgument.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "model/dense_model.h"
#include "model/model.h"
#include "model/testing.h"

namespace deepinfer {
namespace {

std::unique_ptr<Model> MakeModel(const ModelConfig& c, uint64_t seed, int threads) {
  auto weights = testing::MakeRandomWeights(c, WeightNaming::kHf, seed);
  auto model = CreateDenseModel(c, weights, threads);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return model.ok() ? std::move(model).value() : nullptr;
}

std::vector<int32_t> Tokens(int n, int offset, int vocab) {
  std::vector<int32_t> t(n);
  for (int i = 0; i < n; ++i) {
    t[i] = (i * 37 + offset * 11 + 5) % vocab;
  }
  return t;
}

// One sequence's history: `prefix` tokens already in the cache, then `chunk`.
struct Case {
  std::vector<int32_t> prefix;
  std::vector<int32_t> chunk;
  SequenceChunk::Logits logits;
};

// Runs each case's prefix alone, then either every chunk alone or all
// chunks in one batch, and returns the logit rows of the chunk step(s).
std::vector<float> RunCases(Model& model, const std::vector<Case>& cases, bool batched, int64_t block_size,
                            DType kv_dtype = DType::kF32) {
  const ModelConfig& c = model.config();
  // Each sequence gets its own interleaved set of blocks from one pool.
  const int64_t per_seq = 16;
  KvCache kv(c, per_seq * static_cast<int64_t>(cases.size()), block_size, kv_dtype);
  std::vector<SequenceChunk> seqs;
  for (size_t s = 0; s < cases.size(); ++s) {
    SequenceChunk seq;
    for (int64_t b = 0; b < per_seq; ++b) {
      seq.block_table.push_back(static_cast<int32_t>(b * cases.size() + s));
    }
    if (!cases[s].prefix.empty()) {
      ForwardBatch prefill;
      seq.tokens = cases[s].prefix;
      seq.logits = SequenceChunk::Logits::kNone;
      prefill.seqs.push_back(seq);
      EXPECT_EQ(prefill.NumLogitRows(), 0);
      EXPECT_TRUE(model.Forward(prefill, kv, nullptr).ok());
    }
    seq.start_pos = static_cast<int64_t>(cases[s].prefix.size());
    seq.tokens = cases[s].chunk;
    seq.logits = cases[s].logits;
    seqs.push_back(seq);
  }
  std::vector<float> out;
  auto run = [&](const ForwardBatch& batch) {
    std::vector<float> logits(static_cast<size_t>(batch.NumLogitRows() * c.vocab_size));
    Status st = model.Forward(batch, kv, logits.data());
    EXPECT_TRUE(st.ok()) << st.ToString();
    out.insert(out.end(), logits.begin(), logits.end());
  };
  if (batched) {
    ForwardBatch batch;
    batch.seqs = seqs;
    run(batch);
  } else {
    for (const auto& seq : seqs) {
      ForwardBatch batch;
      batch.seqs.push_back(seq);
      run(batch);
    }
  }
  return out;
}

class ForwardArchTest : public ::testing::TestWithParam<std::string> {};

// In every KV cache dtype (the determinism contract holds for each).
TEST_P(ForwardArchTest, BatchedEqualsAloneExactly) {
  for (DType kv_dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0}) {
    ModelConfig c = testing::TinyConfig(GetParam());
    if (GetParam() == "mistral") {
      c.sliding_window = {5, 5};
    }
    if (kv_dtype == DType::kQ8_0) {  // q8_0 rows are whole blocks of 32
      c.head_dim = 32;
      c.rope_dim = 32;
    }
    ASSERT_TRUE(KvCache::CheckDType(c, kv_dtype).ok());
    auto model = MakeModel(c, 7, 2);
    ASSERT_NE(model, nullptr);
    const int v = static_cast<int>(c.vocab_size);
    const std::vector<Case> cases = {
        {{}, Tokens(13, 1, v), SequenceChunk::Logits::kAll},              // fresh prefill
        {Tokens(6, 2, v), Tokens(5, 3, v), SequenceChunk::Logits::kAll},  // 2nd chunk
        {Tokens(11, 4, v), {17}, SequenceChunk::Logits::kLast},           // decode step
        {Tokens(3, 5, v), Tokens(9, 6, v), SequenceChunk::Logits::kLast},
        {Tokens(2, 7, v), Tokens(4, 8, v), SequenceChunk::Logits::kNone},  // mid-prompt chunk
        {{}, {42}, SequenceChunk::Logits::kLast},                          // 1-token prompt
    };
    const auto alone = RunCases(*model, cases, /*batched=*/false, 4, kv_dtype);
    const auto batched = RunCases(*model, cases, /*batched=*/true, 4, kv_dtype);
    ASSERT_EQ(alone.size(), static_cast<size_t>((13 + 5 + 1 + 1 + 1) * c.vocab_size));
    ASSERT_EQ(alone.size(), batched.size());
    for (size_t i = 0; i < alone.size(); ++i) {
      ASSERT_EQ(alone[i], batched[i]) << DTypeName(kv_dtype) << " logit " << i;  // bit-identical
    }
    if (kv_dtype != DType::kF32) {  // and the narrow cache really is in use: the logits moved
      const auto f32 = RunCases(*model, cases, /*batched=*/true, 4, DType::kF32);
      EXPECT_NE(f32, batched) << DTypeName(kv_dtype);
    }
  }
}

TEST_P(ForwardArchTest, ChunkedPrefillMatchesOneChunk) {
  ModelConfig c = testing::TinyConfig(GetParam());
  if (GetParam() == "mistral") {
    c.sliding_window = {6, 6};
  }
  auto model = MakeModel(c, 8, 2);
  ASSERT_NE(model, nullptr);
  const auto tokens = Tokens(40, 9, static_cast<int>(c.vocab_size));
  const auto one = testing::RunChunks(*model, tokens, {40}, 4);
  for (const auto& chunks : std::vector<std::vector<int64_t>>{{1, 39}, {7, 7, 7, 19}, {13, 1, 1, 25}}) {
    const auto chunked = testing::RunChunks(*model, tokens, chunks, 4);
    for (size_t i = 0; i < one.size(); ++i) {
      ASSERT_NEAR(one[i], chunked[i], 1e-5) << "logit " << i << ", chunks of " << chunks[0];
    }
  }
}

TEST_P(ForwardArchTest, ThreadCountDoesNotChangeLogits) {
  ModelConfig c = testing::TinyConfig(GetParam());
  auto one_thread = MakeModel(c, 9, 1);
  auto two_threads = MakeModel(c, 9, 2);
  ASSERT_NE(one_thread, nullptr);
  ASSERT_NE(two_threads, nullptr);
  const auto tokens = Tokens(64, 1, static_cast<int>(c.vocab_size));
  EXPECT_EQ(testing::RunChunks(*one_thread, tokens, {64}, 16),
            testing::RunChunks(*two_threads, tokens, {64}, 16));
}

// Without hidden states the last layer computes only the logit rows
// (DecoderLayer::ForwardKeeping); with them it computes every token. The
// logits must agree bit for bit, and so must the K/V both wrote: a decode
// step after each reads every cached position.
TEST_P(ForwardArchTest, LastLayerKeepingLogitRowsChangesNoBit) {
  ModelConfig c = testing::TinyConfig(GetParam());
  if (GetParam() == "mistral") c.sliding_window = {5, 5};
  auto model = MakeModel(c, 10, 2);
  ASSERT_NE(model, nullptr);
  const int v = static_cast<int>(c.vocab_size);
  const auto run = [&](bool hidden) {
    KvCache kv(c, 32, 4);
    ForwardBatch batch;
    const std::vector<std::pair<std::vector<int32_t>, SequenceChunk::Logits>> chunks = {
        {Tokens(13, 1, v), SequenceChunk::Logits::kLast},  // a prompt chunk: 1 of 13 kept
        {Tokens(6, 2, v), SequenceChunk::Logits::kNone},   // none kept
        {Tokens(5, 3, v), SequenceChunk::Logits::kAll},    // all kept
        {{7}, SequenceChunk::Logits::kLast}};
    for (size_t s = 0; s < chunks.size(); ++s) {
      SequenceChunk seq;
      seq.tokens = chunks[s].first;
      seq.logits = chunks[s].second;
      for (int32_t b = 0; b < 8; ++b) seq.block_table.push_back(b * 4 + static_cast<int32_t>(s));
      batch.seqs.push_back(seq);
    }
    std::vector<float> logits(static_cast<size_t>(batch.NumLogitRows() * c.vocab_size));
    std::vector<float> hidden_rows(static_cast<size_t>(batch.NumTokens() * c.hidden_size));
    EXPECT_TRUE(
        model->ForwardWithHidden(batch, kv, logits.data(), hidden ? hidden_rows.data() : nullptr).ok());
    // One more token per sequence: its logits read every K/V written above.
    for (SequenceChunk& seq : batch.seqs) {
      seq.start_pos = static_cast<int64_t>(seq.tokens.size());
      seq.tokens = {3};
      seq.logits = SequenceChunk::Logits::kLast;
    }
    std::vector<float> next(static_cast<size_t>(batch.NumLogitRows() * c.vocab_size));
    EXPECT_TRUE(model->Forward(batch, kv, next.data()).ok());
    logits.insert(logits.end(), next.begin(), next.end());
    return logits;
  };
  const std::vector<float> kept = run(false), full = run(true);
  ASSERT_EQ(kept.size(), static_cast<size_t>((1 + 0 + 5 + 1 + 4) * c.vocab_size));
  ASSERT_EQ(0, std::memcmp(kept.data(), full.data(), kept.size() * sizeof(float)));
}

INSTANTIATE_TEST_SUITE_P(Archs, ForwardArchTest, ::testing::Values("llama", "mistral", "qwen2", "qwen3"));

TEST(Forward, RejectsMalformedBatches) {
  ModelConfig c = testing::TinyConfig("llama");
  auto model = MakeModel(c, 1, 1);
  ASSERT_NE(model, nullptr);
  KvCache kv(c, 4, 4);
  std::vector<float> logits(static_cast<size_t>(4 * c.vocab_size));
  auto forward = [&](SequenceChunk seq) {
    ForwardBatch batch;
    batch.seqs.push_back(std::move(seq));
    return model->Forward(batch, kv, logits.data());
  };
  SequenceChunk ok;
  ok.tokens = {1, 2, 3};
  ok.block_table = {0};
  EXPECT_TRUE(forward(ok).ok());

  SequenceChunk bad_token = ok;
  bad_token.tokens = {1, static_cast<int32_t>(c.vocab_size)};
  Status s = forward(bad_token);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("out of range"), std::string::npos) << s.message();

  SequenceChunk negative = ok;
  negative.tokens = {-1};
  EXPECT_EQ(forward(negative).code(), StatusCode::kInvalidArgument);

  SequenceChunk short_table = ok;
  short_table.start_pos = 2;  // positions 2..4 need blocks 0 and 1
  s = forward(short_table);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("block table"), std::string::npos) << s.message();

  SequenceChunk bad_block = ok;
  bad_block.block_table = {4};
  EXPECT_EQ(forward(bad_block).code(), StatusCode::kInvalidArgument);

  KvCache wrong_shape(testing::TinyConfig("qwen3"), 4, 4);  // head_dim 16
  ForwardBatch batch;
  batch.seqs.push_back(ok);
  EXPECT_EQ(model->Forward(batch, wrong_shape, logits.data()).code(), StatusCode::kInvalidArgument);
}

TEST(Forward, MissingTensorIsNamed) {
  ModelConfig c = testing::TinyConfig("qwen2");
  auto full = testing::MakeRandomWeights(c, WeightNaming::kGguf, 3);
  auto partial = std::make_shared<InMemoryWeightStore>(WeightNaming::kGguf);
  for (const TensorView* t : full->All()) {
    if (t->name == "blk.1.attn_k.bias") {
      continue;
    }
    std::vector<uint8_t> bytes(static_cast<const uint8_t*>(t->data),
                               static_cast<const uint8_t*>(t->data) + t->nbytes);
    partial->Add(t->name, t->dtype, t->shape, std::move(bytes));
  }
  auto model = CreateDenseModel(c, partial, 1);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("blk.1.attn_k.bias"), std::string::npos)
      << model.status().message();
}

TEST(Forward, WrongShapeIsNamed) {
  ModelConfig c = testing::TinyConfig("llama");
  auto weights = testing::MakeRandomWeights(c, WeightNaming::kHf, 3);
  c.intermediate_size = 40;  // the file has 48
  auto model = CreateDenseModel(c, weights, 1);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.status().message().find("mlp.gate_proj.weight' has shape [48, 32], expected [40, 32]"),
            std::string::npos)
      << model.status().message();
}

}  // namespace
}  // namespace deepinfer
