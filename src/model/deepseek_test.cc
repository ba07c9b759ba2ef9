// DeepSeek-V2/V3 on `deepinfer synth` tiny models: absorbed MLA equals the
// naive expanded computation, the cache holds only the latent + rope key,
// batch invariance, and the V3 MTP layer against the NumPy reference
// (tests/reference/deepseek_ref.py, written from the HF definitions).
#include "model/deepseek.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "model/mtp.h"
#include "model/testing.h"
#include "synth/synth.h"

namespace deepinfer {
namespace {

std::string SynthDir(const std::string& arch, const std::string& preset) {
  const std::string dir = testing::PerTestPath(DI_BINARY_DIR, "deepseek_test", arch + "_" + preset);
  SynthOptions o;
  o.arch = arch;
  o.preset = preset;
  o.seed = 77;
  o.format = SynthFormat::kHf;
  o.out = dir;
  const Status st = WriteSynthModel(o);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return dir;
}

std::vector<int32_t> Prompt(int n, int vocab) {
  std::vector<int32_t> ids;
  for (int i = 0; i < n; ++i) ids.push_back(static_cast<int32_t>((i * 131 + 7) % vocab));
  return ids;
}

ForwardBatch Chunk(const std::vector<int32_t>& tokens, int64_t start, const std::vector<int32_t>& blocks) {
  ForwardBatch b;
  SequenceChunk s;
  s.tokens = tokens;
  s.start_pos = start;
  s.block_table = blocks;
  s.logits = SequenceChunk::Logits::kAll;
  b.seqs.push_back(s);
  return b;
}

std::vector<float> RunAll(Model& m, const std::vector<int32_t>& ids, int64_t split,
                          std::vector<float>* hidden) {
  const ModelConfig& c = m.config();
  KvCache kv(c, 64, 8);
  std::vector<int32_t> blocks;
  for (int i = 0; i < 64; ++i) blocks.push_back(63 - i);
  const int64_t n = static_cast<int64_t>(ids.size());
  std::vector<float> logits(static_cast<size_t>(n * c.vocab_size));
  if (hidden) hidden->resize(static_cast<size_t>(n * c.hidden_size));
  const std::vector<int32_t> a(ids.begin(), ids.begin() + split), b(ids.begin() + split, ids.end());
  EXPECT_TRUE(
      m.ForwardWithHidden(Chunk(a, 0, blocks), kv, logits.data(), hidden ? hidden->data() : nullptr).ok());
  EXPECT_TRUE(m.ForwardWithHidden(Chunk(b, split, blocks), kv, logits.data() + split * c.vocab_size,
                                  hidden ? hidden->data() + split * c.hidden_size : nullptr)
                  .ok());
  return logits;
}

double MaxRel(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0, scale = 1;
  for (float v : b) scale = std::max(scale, static_cast<double>(std::fabs(v)));
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(double(a[i]) - b[i]) / scale);
  return worst;
}

class DeepseekTest : public ::testing::TestWithParam<const char*> {};

// The model of a checkpoint, on 2 threads, without its tokenizer.
StatusOr<LoadedModel> LoadWeightsOnly(const std::string& dir) {
  LoadOptions opts;
  opts.load_tokenizer = false;
  opts.num_threads = 2;
  return LoadModel(dir, opts);
}

TEST_P(DeepseekTest, AbsorbedMlaEqualsNaiveAndCacheHoldsOnlyTheLatent) {
  const std::string dir = SynthDir(GetParam(), "tiny-hybrid-swa");
  auto loaded = LoadWeightsOnly(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  Model& m = *loaded->model;
  const ModelConfig& c = m.config();
  KvCache probe(c, 1, 1);
  EXPECT_EQ(probe.kv_dim(), c.mla.kv_lora_rank + c.mla.qk_rope_head_dim);
  EXPECT_EQ(probe.v_dim(), 0);
  EXPECT_EQ(probe.BytesPerToken(), c.num_layers * (c.mla.kv_lora_rank + c.mla.qk_rope_head_dim) * 4);

  const std::vector<int32_t> ids = Prompt(40, static_cast<int>(c.vocab_size));  // past the window of 16
  const std::vector<float> absorbed = RunAll(m, ids, 25, nullptr);
  ASSERT_TRUE(SetMlaAbsorb(m, false).ok());
  const std::vector<float> naive = RunAll(m, ids, 25, nullptr);
  ASSERT_TRUE(SetMlaAbsorb(m, true).ok());
  EXPECT_LT(MaxRel(absorbed, naive), 2e-5);
}

// The last layer without hidden states computes the logit row only
// (ForwardKeeping: MLA attends for all tokens, the MoE feed-forward runs
// for the kept one): the same bits as with them.
TEST_P(DeepseekTest, LastLayerKeepingLogitRowsChangesNoBit) {
  auto loaded = LoadWeightsOnly(SynthDir(GetParam(), "tiny"));
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  Model& m = *loaded->model;
  const std::vector<int32_t> ids = Prompt(23, static_cast<int>(m.config().vocab_size));
  EXPECT_EQ(testing::PromptThenTokenLogits(m, ids, false), testing::PromptThenTokenLogits(m, ids, true));
}

TEST_P(DeepseekTest, DecodeRowsAreBatchInvariant) {
  const std::string dir = SynthDir(GetParam(), "tiny");
  auto loaded = LoadWeightsOnly(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  Model& m = *loaded->model;
  const int64_t vocab = m.config().vocab_size;
  const std::vector<int32_t> ids = Prompt(9, static_cast<int>(vocab));
  KvCache kv(m.config(), 8, 4);
  std::vector<float> alone(static_cast<size_t>(9 * vocab)), both(static_cast<size_t>(13 * vocab));
  ASSERT_TRUE(m.Forward(Chunk(ids, 0, {0, 1, 2}), kv, alone.data()).ok());
  ForwardBatch b = Chunk({3, 4, 5, 6}, 0, {3});
  b.seqs.push_back(Chunk(ids, 0, {4, 5, 6}).seqs[0]);
  ASSERT_TRUE(m.Forward(b, kv, both.data()).ok());
  for (int64_t i = 0; i < 9 * vocab; ++i) {
    ASSERT_EQ(both[static_cast<size_t>(4 * vocab + i)], alone[static_cast<size_t>(i)]);
  }
  const auto load = m.ExpertLoad();
  ASSERT_EQ(static_cast<int64_t>(load.size()), m.config().num_layers);
  EXPECT_TRUE(load[0].empty());  // layer 0 is dense
  int64_t routed = 0;
  for (int64_t x : load[1]) routed += x;
  EXPECT_EQ(routed, (9 + 13) * m.config().moe.experts_per_token);
}

// The latent cache in every KV dtype that fits its rows: a sequence's rows
// are the same bits alone and next to another sequence.
TEST_P(DeepseekTest, DecodeRowsAreBatchInvariantInEveryKvDType) {
  const std::string dir = SynthDir(GetParam(), "tiny");
  auto loaded = LoadWeightsOnly(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  Model& m = *loaded->model;
  const int64_t vocab = m.config().vocab_size;
  const std::vector<int32_t> ids = Prompt(9, static_cast<int>(vocab));
  std::vector<float> f32_logits;
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0}) {
    if (!KvCache::CheckDType(m.config(), dtype).ok()) continue;  // q8_0 needs rows of whole 32-blocks
    KvCache kv(m.config(), 8, 4, dtype);
    std::vector<float> alone(static_cast<size_t>(9 * vocab)), both(static_cast<size_t>(13 * vocab));
    ASSERT_TRUE(m.Forward(Chunk(ids, 0, {0, 1, 2}), kv, alone.data()).ok());
    ForwardBatch b = Chunk({3, 4, 5, 6}, 0, {3});
    b.seqs.push_back(Chunk(ids, 0, {4, 5, 6}).seqs[0]);
    ASSERT_TRUE(m.Forward(b, kv, both.data()).ok());
    for (int64_t i = 0; i < 9 * vocab; ++i) {
      ASSERT_EQ(both[static_cast<size_t>(4 * vocab + i)], alone[static_cast<size_t>(i)]) << DTypeName(dtype);
    }
    if (dtype == DType::kF32) {
      f32_logits = alone;
    } else {
      EXPECT_NE(alone, f32_logits) << DTypeName(dtype) << ": the narrow cache is not in use";
      EXPECT_LT(MaxRel(alone, f32_logits), 5e-2) << DTypeName(dtype);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Archs, DeepseekTest, ::testing::Values("deepseek_v2", "deepseek_v3"));

// The V3 MTP layer (MLA + MoE block) at depth 1 against deepseek_ref.py.
TEST(DeepseekMtpTest, MatchesNumpyReference) {
  const std::string dir = SynthDir("deepseek_v3", "tiny");
  auto loaded = LoadWeightsOnly(dir);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  Model& m = *loaded->model;
  const ModelConfig& c = m.config();
  ASSERT_EQ(c.num_nextn_predict_layers, 1);
  const std::vector<int32_t> ids = Prompt(12, static_cast<int>(c.vocab_size));
  const std::vector<int32_t> base_ids(ids.begin(), ids.end() - 1), next(ids.begin() + 1, ids.end());
  std::vector<float> hidden;
  RunAll(m, base_ids, 5, &hidden);
  auto draft = MtpDraft::Create(c, loaded->weights, 0, 2);
  ASSERT_TRUE(draft.ok()) << draft.status().ToString();
  auto kv = (*draft)->NewKvCache(8, 4);
  std::vector<float> logits(next.size() * c.vocab_size);
  ASSERT_TRUE((*draft)->Forward(Chunk(next, 0, {5, 2, 7}), hidden.data(), *kv, logits.data(), nullptr).ok());

  std::string csv;
  for (int32_t t : ids) csv += (csv.empty() ? "" : ",") + std::to_string(t);
  const std::string out = dir + "/mtp_ref.jsonl";
  const std::string cmd = "/usr/bin/python3 " + std::string(DI_SOURCE_DIR) +
                          "/tests/reference/deepseek_ref.py --mtp --model " + dir + " --tokens " + csv +
                          " > " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(out);
  std::string line;
  std::vector<float> ref;
  while (std::getline(in, line)) {
    for (double v : nlohmann::json::parse(line)) ref.push_back(static_cast<float>(v));
  }
  ASSERT_EQ(ref.size(), logits.size());
  EXPECT_LT(MaxRel(logits, ref), 1e-4);
}

}  // namespace
}  // namespace deepinfer
