// The MTP draft against the reference numbers published with the trained
// stories260K-mtp checkpoint (shared/models/stories260K-mtp/README.md):
// base logits, the base hidden h_4, MTP depth 1 and chained depth 2.
#include "model/mtp.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "model/model.h"

namespace deepinfer {
namespace {

const std::string kModelDir = std::string(DI_SHARED_DIR) + "/models/stories260K-mtp";

std::vector<std::pair<int, float>> TopK(const float* logits, int64_t n, int k) {
  std::vector<int> idx(static_cast<size_t>(n));
  std::iota(idx.begin(), idx.end(), 0);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                    [&](int a, int b) { return logits[a] > logits[b]; });
  std::vector<std::pair<int, float>> out;
  for (int i = 0; i < k; ++i) {
    out.emplace_back(idx[static_cast<size_t>(i)], logits[idx[static_cast<size_t>(i)]]);
  }
  return out;
}

void ExpectTop5(const float* logits, int64_t vocab, const std::vector<std::pair<int, float>>& expected) {
  const auto got = TopK(logits, vocab, 5);
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(got[i].first, expected[i].first) << "rank " << i;
    EXPECT_NEAR(got[i].second, expected[i].second, 1e-3) << "rank " << i;
  }
}

ForwardBatch OneChunk(std::vector<int32_t> tokens, int64_t start, std::vector<int32_t> blocks,
                      SequenceChunk::Logits logits) {
  ForwardBatch b;
  SequenceChunk s;
  s.tokens = std::move(tokens);
  s.start_pos = start;
  s.block_table = std::move(blocks);
  s.logits = logits;
  b.seqs.push_back(std::move(s));
  return b;
}

TEST(MtpDraftTest, ReproducesStories260KMtpReferenceNumbers) {
  LoadOptions opts;
  opts.load_tokenizer = false;
  opts.num_threads = 2;
  auto loaded = LoadModel(kModelDir, opts);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  Model& base = *loaded->model;
  const ModelConfig& c = base.config();
  ASSERT_EQ(c.num_nextn_predict_layers, 1);
  const int64_t vocab = c.vocab_size, h = c.hidden_size;

  // Base: all rows, with their post-norm hidden states.
  const std::vector<int32_t> prompt = {1, 403, 407, 261, 378};
  KvCache kv(c, 4, 4);
  std::vector<float> logits(5 * vocab), hidden(5 * h);
  ASSERT_TRUE(base.ForwardWithHidden(OneChunk(prompt, 0, {2, 0}, SequenceChunk::Logits::kAll), kv,
                                     logits.data(), hidden.data())
                  .ok());
  ExpectTop5(&logits[4 * vocab], vocab,
             {{432, 17.79940f}, {383, 14.28126f}, {322, 9.70965f}, {353, 9.58729f}, {323, 9.13424f}});
  const float h4[8] = {0.38684f, -1.02534f, -1.88443f, -1.93977f, 0.58965f, -7.12997f, 2.01466f, -0.69961f};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(hidden[4 * h + i], h4[i], 1e-3) << "h_4[" << i << "]";

  // Depth 1: inputs (h_s, x_{s+1}) at positions 0..4, x_5 = 432 (the greedy next token).
  auto draft = MtpDraft::Create(c, loaded->weights, 0, 2);
  ASSERT_TRUE(draft.ok()) << draft.status().ToString();
  auto mtp_kv = (*draft)->NewKvCache(4, 4);
  std::vector<float> d_logits(vocab), g(h);
  ASSERT_TRUE((*draft)
                  ->Forward(OneChunk({403, 407, 261, 378, 432}, 0, {3, 1}, SequenceChunk::Logits::kLast),
                            hidden.data(), *mtp_kv, d_logits.data(), g.data())
                  .ok());
  ExpectTop5(d_logits.data(), vocab,
             {{383, 14.74543f}, {322, 11.47088f}, {261, 10.52728f}, {410, 7.94897f}, {263, 7.64806f}});
  const float g4[8] = {2.90553f, -1.47876f, 0.48506f, -1.20723f, 0.35518f, -7.78176f, 2.27238f, -1.97566f};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(g[i], g4[i], 1e-3) << "g_4[" << i << "]";

  // Depth 2, chained: position 5, h := g_4, x := the draft 383, same MTP cache.
  const int32_t draft1 = TopK(d_logits.data(), vocab, 1)[0].first;
  ASSERT_EQ(draft1, 383);
  std::vector<float> d2_logits(vocab);
  ASSERT_TRUE((*draft)
                  ->Forward(OneChunk({draft1}, 5, {3, 1}, SequenceChunk::Logits::kLast), g.data(), *mtp_kv,
                            d2_logits.data(), nullptr)
                  .ok());
  ExpectTop5(d2_logits.data(), vocab,
             {{286, 14.68257f}, {397, 10.35997f}, {382, 9.29474f}, {381, 8.78441f}, {261, 8.14845f}});
}

// Batching: a draft row's result does not depend on the other sequences.
TEST(MtpDraftTest, RowsAreIndependentOfTheBatch) {
  LoadOptions opts;
  opts.load_tokenizer = false;
  opts.num_threads = 2;
  auto loaded = LoadModel(kModelDir, opts);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const ModelConfig& c = loaded->model->config();
  const int64_t vocab = c.vocab_size, h = c.hidden_size;
  auto draft = MtpDraft::Create(c, loaded->weights, 0, 2);
  ASSERT_TRUE(draft.ok());
  std::vector<float> hid(6 * h);
  for (size_t i = 0; i < hid.size(); ++i) hid[i] = static_cast<float>((i * 7919) % 23) / 11.0f - 1.0f;

  auto alone_kv = (*draft)->NewKvCache(4, 4);
  std::vector<float> alone(vocab);
  ASSERT_TRUE((*draft)
                  ->Forward(OneChunk({5, 6, 7}, 0, {0}, SequenceChunk::Logits::kLast), hid.data(), *alone_kv,
                            alone.data(), nullptr)
                  .ok());
  ForwardBatch both = OneChunk({9, 10, 11}, 0, {1}, SequenceChunk::Logits::kLast);
  both.seqs.push_back(OneChunk({5, 6, 7}, 0, {2}, SequenceChunk::Logits::kLast).seqs[0]);
  std::vector<float> both_hidden(hid.begin() + 3 * h, hid.end());
  both_hidden.insert(both_hidden.end(), hid.begin(), hid.begin() + 3 * h);
  auto both_kv = (*draft)->NewKvCache(4, 4);
  std::vector<float> out(2 * vocab);
  ASSERT_TRUE((*draft)->Forward(both, both_hidden.data(), *both_kv, out.data(), nullptr).ok());
  for (int64_t i = 0; i < vocab; ++i) ASSERT_EQ(out[vocab + i], alone[i]) << i;
}

TEST(MtpDraftTest, RejectsBadInput) {
  LoadOptions opts;
  opts.load_tokenizer = false;
  opts.num_threads = 1;
  auto loaded = LoadModel(kModelDir, opts);
  ASSERT_TRUE(loaded.ok());
  ModelConfig c = loaded->model->config();
  EXPECT_FALSE(MtpDraft::Create(c, loaded->weights, 1, 1).ok());  // only one layer
  ModelConfig no_mtp = c;
  no_mtp.num_nextn_predict_layers = 0;
  EXPECT_FALSE(MtpDraft::Create(no_mtp, loaded->weights, 0, 1).ok());
  auto draft = MtpDraft::Create(c, loaded->weights, 0, 1);
  ASSERT_TRUE(draft.ok());
  auto kv = (*draft)->NewKvCache(2, 4);
  std::vector<float> hid(c.hidden_size), logits(c.vocab_size);
  EXPECT_FALSE((*draft)
                   ->Forward(OneChunk({600}, 0, {0}, SequenceChunk::Logits::kLast), hid.data(), *kv,
                             logits.data(), nullptr)
                   .ok());  // token out of range
  EXPECT_FALSE((*draft)
                   ->Forward(OneChunk({5}, 8, {0}, SequenceChunk::Logits::kLast), hid.data(), *kv,
                             logits.data(), nullptr)
                   .ok());  // block table too short
  EXPECT_FALSE(
      (*draft)
          ->Forward(OneChunk({5}, 0, {0}, SequenceChunk::Logits::kLast), nullptr, *kv, logits.data(), nullptr)
          .ok());
  KvCache base_kv(c, 2, 4);  // 5 layers: not the draft's cache
  EXPECT_FALSE((*draft)
                   ->Forward(OneChunk({5}, 0, {0}, SequenceChunk::Logits::kLast), hid.data(), base_kv,
                             logits.data(), nullptr)
                   .ok());
}

}  // namespace
}  // namespace deepinfer
