// Gemma-2 / Gemma-3 GGUF metadata as llama.cpp's converter writes it (no
// query_pre_attn_scalar, no layer pattern, no local RoPE base: llama.cpp
// derives them) and what deepinfer reads from it. The forward pass itself is
// checked against tests/reference/gemma_ref.py (ctest reference_gemma2/3).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "checkpoint/checkpoint.h"
#include "io/gguf.h"
#include "model/config_loader.h"
#include "model/testing.h"
#include "synth/synth.h"

namespace deepinfer {
namespace {

StatusOr<ModelConfig> ConfigOf(const GgufWriter& w, const std::string& name) {
  const std::string path = testing::PerTestPath(DI_BINARY_DIR, "gemma_test", name + ".gguf");
  DI_RETURN_IF_ERROR(w.Write(path));
  DI_ASSIGN_OR_RETURN(auto gguf, GgufFile::Open(path));
  return ModelConfigFromGguf(*gguf);
}

GgufWriter GemmaMetadata(const std::string& arch, uint32_t layers, uint32_t hidden, uint32_t heads,
                         uint32_t kv_heads, uint32_t head_dim, uint32_t window) {
  GgufWriter w;
  const std::string p = arch + ".";
  w.SetString("general.architecture", arch);
  w.SetU32(p + "context_length", 8192);
  w.SetU32(p + "embedding_length", hidden);
  w.SetU32(p + "block_count", layers);
  w.SetU32(p + "feed_forward_length", hidden * 4);
  w.SetU32(p + "attention.head_count", heads);
  w.SetU32(p + "attention.head_count_kv", kv_heads);
  w.SetU32(p + "attention.key_length", head_dim);
  w.SetU32(p + "attention.value_length", head_dim);
  w.SetF32(p + "attention.layer_norm_rms_epsilon", 1e-6f);
  w.SetU32(p + "attention.sliding_window", window);
  w.SetU32(p + "vocab_size", 256000);
  return w;
}

TEST(GemmaGguf, Gemma2AlternatesAndUsesHeadDimScale) {
  GgufWriter w = GemmaMetadata("gemma2", 42, 3584, 16, 8, 256, 4096);  // Gemma-2 9B
  w.SetF32("gemma2.attn_logit_softcapping", 50.0f);
  w.SetF32("gemma2.final_logit_softcapping", 30.0f);
  auto c = ConfigOf(w, "gemma2_9b");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->arch, "gemma2");
  for (int64_t i = 0; i < 42; ++i) EXPECT_EQ(c->sliding_window[i], i % 2 == 0 ? 4096 : 0) << i;
  EXPECT_DOUBLE_EQ(c->query_pre_attn_scalar, 256.0);
  EXPECT_DOUBLE_EQ(c->attn_logit_softcap, 50.0);
  EXPECT_DOUBLE_EQ(c->final_logit_softcap, 30.0);
  EXPECT_EQ(c->norm_weight_offset, 0.0f);  // GGUF stores 1 + w
  EXPECT_DOUBLE_EQ(c->embedding_scale, std::sqrt(3584.0));
  EXPECT_EQ(c->ffn_activation, FfnActivation::kGeluTanh);
  EXPECT_EQ(c->rope_style, RopeStyle::kNeox);
  EXPECT_TRUE(c->tie_word_embeddings);  // no output.weight
}

TEST(GemmaGguf, Gemma2Size27BScalesByHiddenOverHeads) {
  auto c = ConfigOf(GemmaMetadata("gemma2", 46, 4608, 32, 16, 128, 4096), "gemma2_27b");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_DOUBLE_EQ(c->query_pre_attn_scalar, 144.0);  // 4608 / 32, as Gemma-2 27B's config.json says
  // attention.scale, when written, wins.
  GgufWriter w = GemmaMetadata("gemma2", 46, 4608, 32, 16, 128, 4096);
  w.SetF32("gemma2.attention.scale", 0.125f);
  auto scaled = ConfigOf(w, "gemma2_27b_scale");
  ASSERT_TRUE(scaled.ok()) << scaled.status().ToString();
  EXPECT_NEAR(scaled->query_pre_attn_scalar, 64.0, 1e-9);
}

TEST(GemmaGguf, Gemma3FiveLocalToOneGlobal) {
  GgufWriter w = GemmaMetadata("gemma3", 34, 2560, 8, 4, 256, 1024);  // Gemma-3 4B
  w.SetF32("gemma3.rope.freq_base", 1e6f);
  w.SetString("gemma3.rope.scaling.type", "linear");
  w.SetF32("gemma3.rope.scaling.factor", 8.0f);
  auto c = ConfigOf(w, "gemma3_4b");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->arch, "gemma3");
  for (int64_t i = 0; i < 34; ++i) EXPECT_EQ(c->sliding_window[i], (i + 1) % 6 != 0 ? 1024 : 0) << i;
  EXPECT_TRUE(c->qk_norm);
  EXPECT_DOUBLE_EQ(c->rope_theta, 1e6);
  EXPECT_DOUBLE_EQ(c->rope_local_theta, 10000.0);  // llama.cpp's constant
  EXPECT_EQ(c->rope_scaling.type, "linear");
  EXPECT_DOUBLE_EQ(c->rope_scaling.factor, 8.0);
  EXPECT_EQ(c->attn_logit_softcap, 0.0);
  EXPECT_DOUBLE_EQ(c->query_pre_attn_scalar, 256.0);
}

TEST(GemmaGguf, BadValuesAreClearErrors) {
  GgufWriter w = GemmaMetadata("gemma2", 4, 64, 4, 2, 16, 16);
  w.SetF32("gemma2.attn_logit_softcapping", -1.0f);
  auto c = ConfigOf(w, "negative_cap");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("soft-capping"), std::string::npos) << c.status().ToString();
  GgufWriter p = GemmaMetadata("gemma3", 4, 64, 4, 2, 16, 16);
  p.SetI32("gemma3.attention.sliding_window_pattern", 0);
  auto bad_pattern = ConfigOf(p, "zero_pattern");
  ASSERT_FALSE(bad_pattern.ok());
  EXPECT_NE(bad_pattern.status().message().find("sliding_window_pattern"), std::string::npos)
      << bad_pattern.status().ToString();
}

// The last layer without hidden states computes the logit row only
// (DecoderLayer::ForwardKeeping, with Gemma's sandwich norms): the same bits
// as with them, for Gemma-2 and Gemma-3 (whose last layer is global).
TEST(GemmaForward, LastLayerKeepingLogitRowsChangesNoBit) {
  for (const std::string arch : {"gemma2", "gemma3"}) {
    SynthOptions o;
    o.arch = arch;
    o.preset = "tiny";
    o.format = SynthFormat::kHf;
    o.out = testing::PerTestPath(DI_BINARY_DIR, "gemma_test", arch);
    ASSERT_TRUE(WriteSynthModel(o).ok()) << arch;
    LoadOptions opts;
    opts.load_tokenizer = false;
    opts.num_threads = 2;
    auto loaded = LoadModel(o.out, opts);
    ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
    std::vector<int32_t> ids;
    for (int i = 0; i < 21; ++i)
      ids.push_back((i * 53 + 3) % static_cast<int>(loaded->model->config().vocab_size));
    EXPECT_EQ(testing::PromptThenTokenLogits(*loaded->model, ids, false),
              testing::PromptThenTokenLogits(*loaded->model, ids, true))
        << arch;
  }
}

}  // namespace
}  // namespace deepinfer
