// Sliding-window attention, checked by properties that follow from the
// definition alone (a query at position p sees keys at positions > p - W):
//  - with one layer, the logits at p depend only on tokens p-W+1..p, and
//    RoPE is relative, so they equal those of that window scored alone;
//  - with L layers, tokens before p - L*(W-1) cannot influence position p
//    at all (bit-identical logits), while tokens inside that range do.
#include <gtest/gtest.h>

#include <vector>

#include "model/dense_model.h"
#include "model/testing.h"

namespace deepinfer {
namespace {

std::unique_ptr<Model> MakeModel(const ModelConfig& c) {
  auto model = CreateDenseModel(c, testing::MakeRandomWeights(c, WeightNaming::kHf, 99), 2);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return model.ok() ? std::move(model).value() : nullptr;
}

std::vector<int32_t> Prompt(int n, int salt, int vocab) {
  std::vector<int32_t> t(n);
  for (int i = 0; i < n; ++i) {
    t[i] = (i * 29 + salt * 7 + 3) % vocab;
  }
  return t;
}

TEST(SlidingWindow, OneLayerSeesOnlyTheWindow) {
  ModelConfig c = testing::TinyConfig("mistral");
  c.num_layers = 1;
  constexpr int kWindow = 6;
  c.sliding_window = {kWindow};
  auto model = MakeModel(c);
  ASSERT_NE(model, nullptr);
  const auto tokens = Prompt(30, 1, static_cast<int>(c.vocab_size));
  const auto full = testing::RunChunks(*model, tokens, {30}, 4);
  for (int p : {kWindow, 17, 29}) {
    const std::vector<int32_t> window(tokens.begin() + p - kWindow + 1, tokens.begin() + p + 1);
    const auto alone = testing::RunChunks(*model, window, {kWindow}, 4);
    const float* a = full.data() + p * c.vocab_size;
    const float* b = alone.data() + (kWindow - 1) * c.vocab_size;
    // Same math at shifted absolute positions: equal up to f32 rounding of the rotations.
    for (int64_t i = 0; i < c.vocab_size; ++i) {
      ASSERT_NEAR(a[i], b[i], 1e-4) << "p " << p << " id " << i;
    }
  }
}

TEST(SlidingWindow, TokensOutsideTheReceptiveFieldHaveNoEffect) {
  ModelConfig c = testing::TinyConfig("mistral");  // 2 layers
  constexpr int kWindow = 5, kLen = 40;
  c.sliding_window = {kWindow, kWindow};
  auto model = MakeModel(c);
  ASSERT_NE(model, nullptr);
  const int vocab = static_cast<int>(c.vocab_size);
  const auto base = Prompt(kLen, 2, vocab);
  // Position p depends on tokens p - 2*(W-1) .. p.
  const int p = kLen - 1, first_seen = p - 2 * (kWindow - 1);
  auto changed = base;
  for (int i = 0; i < first_seen; ++i) {
    changed[i] = (changed[i] + 1 + i) % vocab;
  }
  const auto a = testing::RunChunks(*model, base, {kLen}, 4);
  const auto b = testing::RunChunks(*model, changed, {17, kLen - 17}, 4);
  for (int64_t i = 0; i < c.vocab_size; ++i) {
    ASSERT_EQ(a[p * c.vocab_size + i], b[p * c.vocab_size + i]) << "id " << i;
  }
  // Control: one changed token at the edge of the field does change the logits.
  auto edge = base;
  edge[first_seen] = (edge[first_seen] + 1) % vocab;
  const auto e = testing::RunChunks(*model, edge, {kLen}, 4);
  double diff = 0;
  for (int64_t i = 0; i < c.vocab_size; ++i) {
    diff = std::max(diff, static_cast<double>(std::abs(a[p * c.vocab_size + i] - e[p * c.vocab_size + i])));
  }
  EXPECT_GT(diff, 1e-4);
  // Control: without the window, early tokens matter.
  c.sliding_window = {0, 0};
  auto full_model = MakeModel(c);
  const auto fa = testing::RunChunks(*full_model, base, {kLen}, 4);
  const auto fb = testing::RunChunks(*full_model, changed, {kLen}, 4);
  diff = 0;
  for (int64_t i = 0; i < c.vocab_size; ++i) {
    diff = std::max(diff, static_cast<double>(std::abs(fa[p * c.vocab_size + i] - fb[p * c.vocab_size + i])));
  }
  EXPECT_GT(diff, 1e-4);
}

TEST(SlidingWindow, BlocksBeforeTheWindowMayBeReleased) {
  // Every layer windowed: a decode step reads only the last W positions, so
  // block-table entries before them may already be freed (-1).
  ModelConfig c = testing::TinyConfig("mistral");
  constexpr int kWindow = 4;
  c.sliding_window = {kWindow, kWindow};
  auto model = MakeModel(c);
  ASSERT_NE(model, nullptr);
  const auto tokens = Prompt(21, 3, static_cast<int>(c.vocab_size));
  const auto expected = testing::RunChunks(*model, tokens, {21}, 4);

  KvCache kv(c, 8, 4);
  SequenceChunk seq;
  seq.tokens.assign(tokens.begin(), tokens.begin() + 20);
  seq.block_table = {0, 1, 2, 3, 4, 5};
  seq.logits = SequenceChunk::Logits::kNone;
  ForwardBatch prefill;
  prefill.seqs.push_back(seq);
  ASSERT_TRUE(model->Forward(prefill, kv, nullptr).ok());
  // Position 20 reads positions 17..20: blocks 4 and 5 only.
  seq.tokens = {tokens[20]};
  seq.start_pos = 20;
  seq.block_table = {-1, -1, -1, -1, 4, 5};
  seq.logits = SequenceChunk::Logits::kLast;
  ForwardBatch decode;
  decode.seqs.push_back(seq);
  std::vector<float> logits(static_cast<size_t>(c.vocab_size));
  Status s = model->Forward(decode, kv, logits.data());
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int64_t i = 0; i < c.vocab_size; ++i) {
    EXPECT_EQ(logits[i], expected[20 * c.vocab_size + i]);
  }
}

}  // namespace
}  // namespace deepinfer
