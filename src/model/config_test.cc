// ModelConfig loading from GGUF metadata and HF config.json, and validation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numbers>
#include <string>

#include "io/gguf.h"
#include "model/config_loader.h"
#include "model/rope.h"

namespace deepinfer {
namespace {

const std::string kModels = std::string(DI_SHARED_DIR) + "/models";

TEST(ConfigGguf, Stories260K) {
  // Values from shared/models/README.md (section 2).
  auto gguf = GgufFile::Open(kModels + "/gguf/stories260K.gguf");
  ASSERT_TRUE(gguf.ok()) << gguf.status().ToString();
  auto c = ModelConfigFromGguf(**gguf);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->arch, "llama");
  EXPECT_EQ(c->vocab_size, 512);
  EXPECT_EQ(c->hidden_size, 64);
  EXPECT_EQ(c->num_layers, 5);
  EXPECT_EQ(c->intermediate_size, 172);
  EXPECT_EQ(c->num_heads, 8);
  EXPECT_EQ(c->num_kv_heads, 4);
  EXPECT_EQ(c->head_dim, 8);
  EXPECT_EQ(c->rope_dim, 8);
  EXPECT_EQ(c->max_position, 128);  // the converter's default, see the README caveat
  EXPECT_NEAR(c->rms_norm_eps, 1e-5, 1e-12);
  EXPECT_EQ(c->rope_style, RopeStyle::kInterleaved);
  // llama2.c ties the classifier, but the converter writes output.weight as
  // its own (identical) tensor, and a GGUF is tied only when it is absent.
  EXPECT_FALSE(c->tie_word_embeddings);
  EXPECT_NE(gguf.value()->FindTensor("output.weight"), nullptr);
  EXPECT_FALSE(c->attention_bias);
  EXPECT_EQ(c->sliding_window, std::vector<int64_t>(5, 0));
}

TEST(ConfigGguf, Aidreams260K) {
  auto gguf = GgufFile::Open(kModels + "/gguf/aidreams260K.gguf");
  ASSERT_TRUE(gguf.ok()) << gguf.status().ToString();
  auto c = ModelConfigFromGguf(**gguf);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->num_layers, 4);
  EXPECT_EQ(c->num_heads, 4);
  EXPECT_EQ(c->num_kv_heads, 4);
  EXPECT_EQ(c->head_dim, 16);
}

TEST(ConfigGguf, VocabOnlyFileFailsNamingTheKey) {
  // A vocab-only GGUF of an unsupported arch (gpt2) must say so.
  auto gguf = GgufFile::Open(kModels + "/vocab/ggml-vocab-gpt-2.gguf");
  ASSERT_TRUE(gguf.ok()) << gguf.status().ToString();
  auto c = ModelConfigFromGguf(**gguf);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("gpt2"), std::string::npos) << c.status().message();
}

TEST(ConfigHf, Stories260KMtp) {
  auto c = ModelConfigFromHfDir(kModels + "/stories260K-mtp");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->arch, "llama");
  EXPECT_EQ(c->num_layers, 5);  // the MTP layer (index 5) is not a decoder layer
  EXPECT_EQ(c->rope_style, RopeStyle::kNeox);
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_EQ(c->max_position, 512);
}

TEST(ConfigHf, LlamaWithLlama3RopeScaling) {
  auto c = ModelConfigFromHfJson(R"({
    "architectures": ["LlamaForCausalLM"], "vocab_size": 100, "hidden_size": 64,
    "intermediate_size": 128, "num_hidden_layers": 3, "num_attention_heads": 8,
    "num_key_value_heads": 2, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
    "max_position_embeddings": 131072, "tie_word_embeddings": true,
    "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                     "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->head_dim, 8);
  EXPECT_EQ(c->rope_scaling.type, "llama3");
  EXPECT_EQ(c->rope_scaling.factor, 8.0);
  EXPECT_EQ(c->rope_scaling.original_max_position, 8192);
  EXPECT_EQ(c->rope_theta, 500000.0);
  EXPECT_EQ(c->sliding_window, std::vector<int64_t>(3, 0));
}

TEST(ConfigHf, MistralWindowsEveryLayer) {
  auto c = ModelConfigFromHfJson(R"({
    "architectures": ["MistralForCausalLM"], "vocab_size": 100, "hidden_size": 64,
    "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 1, "head_dim": 32, "sliding_window": 16})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->sliding_window, (std::vector<int64_t>{16, 16}));
  EXPECT_EQ(c->head_dim, 32);
  EXPECT_EQ(c->num_kv_heads, 1);
  EXPECT_NEAR(c->rms_norm_eps, 1e-6, 1e-15);  // transformers' default

  auto no_window = ModelConfigFromHfJson(R"({
    "architectures": ["MistralForCausalLM"], "vocab_size": 100, "hidden_size": 64,
    "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
    "sliding_window": null})");
  ASSERT_TRUE(no_window.ok()) << no_window.status().ToString();
  EXPECT_EQ(no_window->sliding_window, (std::vector<int64_t>{0, 0}));

  // MistralConfig has no layer_types: transformers windows every layer anyway.
  auto layer_types = ModelConfigFromHfJson(R"({
    "architectures": ["MistralForCausalLM"], "vocab_size": 100, "hidden_size": 64,
    "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
    "sliding_window": 16, "layer_types": ["sliding_attention", "full_attention"]})");
  ASSERT_TRUE(layer_types.ok()) << layer_types.status().ToString();
  EXPECT_EQ(layer_types->sliding_window, (std::vector<int64_t>{16, 16}));
}

TEST(ConfigHf, Qwen2MaxWindowLayers) {
  auto c = ModelConfigFromHfJson(R"({
    "architectures": ["Qwen2ForCausalLM"], "vocab_size": 100, "hidden_size": 64,
    "intermediate_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
    "num_key_value_heads": 2, "use_sliding_window": true, "sliding_window": 32,
    "max_window_layers": 2})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  // transformers: layers at index >= max_window_layers slide.
  EXPECT_EQ(c->sliding_window, (std::vector<int64_t>{0, 0, 32, 32}));
  EXPECT_TRUE(c->attention_bias);  // Qwen2 always has q/k/v bias

  auto off = ModelConfigFromHfJson(R"({
    "architectures": ["Qwen2ForCausalLM"], "vocab_size": 100, "hidden_size": 64,
    "intermediate_size": 128, "num_hidden_layers": 4, "num_attention_heads": 4,
    "use_sliding_window": false, "sliding_window": 32, "max_window_layers": 2})");
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_EQ(off->sliding_window, std::vector<int64_t>(4, 0));
}

TEST(ConfigHf, Qwen3LayerTypes) {
  auto c = ModelConfigFromHfJson(R"({
    "architectures": ["Qwen3ForCausalLM"], "vocab_size": 100, "hidden_size": 64,
    "intermediate_size": 128, "num_hidden_layers": 3, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 32, "sliding_window": 8,
    "layer_types": ["sliding_attention", "full_attention", "sliding_attention"]})");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->sliding_window, (std::vector<int64_t>{8, 0, 8}));
  EXPECT_TRUE(c->qk_norm);
  EXPECT_FALSE(c->attention_bias);
  EXPECT_EQ(c->q_dim(), 128);  // != hidden_size
}

// Gemma-2 2B's config.json keys (no layer_types: the alternating pattern,
// layer 0 sliding), with HF's defaults for what a config may omit.
TEST(ConfigHf, Gemma2PatternSoftCapsAndScales) {
  const std::string base = R"({"architectures": ["Gemma2ForCausalLM"], "hidden_size": 2304,
    "intermediate_size": 9216, "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4,
    "head_dim": 256, "vocab_size": 256000, "hidden_act": "gelu_pytorch_tanh",
    "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": 224, "sliding_window": 4096)";
  auto c = ModelConfigFromHfJson(base + "}");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->arch, "gemma2");
  for (int64_t i = 0; i < 26; ++i) EXPECT_EQ(c->sliding_window[i], i % 2 == 0 ? 4096 : 0) << i;
  EXPECT_EQ(c->ffn_activation, FfnActivation::kGeluTanh);
  EXPECT_DOUBLE_EQ(c->attn_logit_softcap, 50.0);  // Gemma2Config defaults
  EXPECT_DOUBLE_EQ(c->final_logit_softcap, 30.0);
  EXPECT_DOUBLE_EQ(c->query_pre_attn_scalar, 224.0);
  EXPECT_DOUBLE_EQ(c->embedding_scale, std::sqrt(2304.0));
  EXPECT_EQ(c->norm_weight_offset, 1.0f);
  EXPECT_TRUE(c->tie_word_embeddings);  // Gemma's default
  EXPECT_EQ(c->head_dim, 256);          // != hidden / heads (288)
  EXPECT_DOUBLE_EQ(c->rope_local_theta, 0.0);
  // null soft-caps mean none.
  auto uncapped = ModelConfigFromHfJson(base + R"(, "attn_logit_softcapping": null,
    "final_logit_softcapping": null})");
  ASSERT_TRUE(uncapped.ok()) << uncapped.status().ToString();
  EXPECT_EQ(uncapped->attn_logit_softcap, 0.0);
  EXPECT_EQ(uncapped->final_logit_softcap, 0.0);
  // Errors name the key.
  auto gelu = ModelConfigFromHfJson(base + R"(, "hidden_activation": "gelu"})");
  ASSERT_FALSE(gelu.ok());
  EXPECT_NE(gelu.status().message().find("hidden_activation"), std::string::npos) << gelu.status().ToString();
  auto neg = ModelConfigFromHfJson(base + R"(, "attn_logit_softcapping": -1})");
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(neg.status().message().find("soft-capping"), std::string::npos) << neg.status().ToString();
}

// Gemma-3 1B's config.json: 5 local layers per global one, a local RoPE base,
// q/k norms; layer_types, when present, wins over the pattern.
TEST(ConfigHf, Gemma3LocalGlobalLayers) {
  const std::string base = R"({"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text",
    "hidden_size": 1152, "intermediate_size": 6912, "num_hidden_layers": 26, "num_attention_heads": 4,
    "num_key_value_heads": 1, "head_dim": 256, "vocab_size": 262144, "hidden_activation": "gelu_pytorch_tanh",
    "query_pre_attn_scalar": 256, "sliding_window": 512, "sliding_window_pattern": 6, "rope_theta": 1000000.0,
    "rope_local_base_freq": 10000.0, "rope_scaling": {"rope_type": "linear", "factor": 8.0},
    "attn_logit_softcapping": null, "final_logit_softcapping": null)";
  auto c = ModelConfigFromHfJson(base + "}");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->arch, "gemma3");
  for (int64_t i = 0; i < 26; ++i) EXPECT_EQ(c->sliding_window[i], (i + 1) % 6 != 0 ? 512 : 0) << i;
  EXPECT_TRUE(c->qk_norm);
  EXPECT_DOUBLE_EQ(c->rope_theta, 1e6);
  EXPECT_DOUBLE_EQ(c->rope_local_theta, 10000.0);
  EXPECT_EQ(c->rope_scaling.type, "linear");
  EXPECT_DOUBLE_EQ(c->rope_scaling.factor, 8.0);
  EXPECT_EQ(c->attn_logit_softcap, 0.0);
  EXPECT_EQ(c->final_logit_softcap, 0.0);
  std::string types = R"(, "layer_types": [)";
  for (int i = 0; i < 26; ++i)
    types += std::string(i ? "," : "") + (i < 2 ? R"("full_attention")" : R"("sliding_attention")");
  auto lt = ModelConfigFromHfJson(base + types + "]}");
  ASSERT_TRUE(lt.ok()) << lt.status().ToString();
  EXPECT_EQ(lt->sliding_window[0], 0);
  EXPECT_EQ(lt->sliding_window[5], 512);
}

TEST(ConfigHf, ErrorsNameTheProblem) {
  auto missing = ModelConfigFromHfJson(R"({"architectures": ["LlamaForCausalLM"],
    "vocab_size": 100, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4})");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("hidden_size"), std::string::npos);

  auto heads = ModelConfigFromHfJson(R"({"architectures": ["LlamaForCausalLM"],
    "vocab_size": 100, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 6, "num_key_value_heads": 4, "head_dim": 8})");
  ASSERT_FALSE(heads.ok());
  EXPECT_NE(heads.status().message().find("num_kv_heads"), std::string::npos);

  auto arch = ModelConfigFromHfJson(R"({"architectures": ["GPT2LMHeadModel"]})");
  ASSERT_FALSE(arch.ok());
  EXPECT_EQ(arch.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(arch.status().message().find("GPT2LMHeadModel"), std::string::npos);

  auto negative = ModelConfigFromHfJson(R"({"architectures": ["LlamaForCausalLM"],
    "vocab_size": 100, "hidden_size": -64, "intermediate_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 4})");
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("hidden_size"), std::string::npos);

  auto bad_json = ModelConfigFromHfJson("{not json");
  ASSERT_FALSE(bad_json.ok());

  auto wrong_type = ModelConfigFromHfJson(R"({"architectures": ["LlamaForCausalLM"],
    "vocab_size": "many", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 4})");
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_NE(wrong_type.status().message().find("vocab_size"), std::string::npos);

  auto yarn = ModelConfigFromHfJson(R"({"architectures": ["LlamaForCausalLM"],
    "vocab_size": 100, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
    "num_attention_heads": 4, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}})");
  ASSERT_FALSE(yarn.ok());
  EXPECT_NE(yarn.status().message().find("yarn"), std::string::npos);
}

TEST(Rope, Llama3ScalingBands) {
  // Llama 3.1 8B: theta 500000, head_dim 128, factor 8, bands at wavelengths
  // 8192/4 = 2048 and 8192/1 = 8192.
  ModelConfig c;
  c.head_dim = c.rope_dim = 128;
  c.rope_theta = 500000.0;
  c.rope_scaling = {"llama3", 8.0, 1.0, 4.0, 8192};
  auto rope = Rope::Create(c);
  ASSERT_TRUE(rope.ok()) << rope.status().ToString();
  int kept = 0, divided = 0, blended = 0;
  for (int i = 0; i < 64; ++i) {
    const double base = std::pow(500000.0, -2.0 * i / 128.0);
    const double wavelen = 2 * std::numbers::pi / base;
    const double got = rope->inv_freq()[i];
    if (wavelen < 2048) {
      EXPECT_DOUBLE_EQ(got, base) << i;
      ++kept;
    } else if (wavelen > 8192) {
      EXPECT_DOUBLE_EQ(got, base / 8) << i;
      ++divided;
    } else {
      EXPECT_LT(got, base) << i;
      EXPECT_GT(got, base / 8) << i;
      ++blended;
    }
  }
  // Every band is exercised.
  EXPECT_GT(kept, 0);
  EXPECT_GT(divided, 0);
  EXPECT_GT(blended, 0);
}

// Apply reads the angles from a per-thread cache by position: positions
// that share a slot (64 apart), two Ropes of other frequencies and a head
// count of 1 or 3 all give the rotation computed afresh, bit for bit.
TEST(Rope, CachedAnglesRotateAsComputedAfresh) {
  ModelConfig a;
  a.head_dim = a.rope_dim = 8;
  a.rope_theta = 10000.0;
  ModelConfig b = a;
  b.rope_theta = 500000.0;
  auto rope_a = Rope::Create(a);
  auto rope_b = Rope::Create(b);
  ASSERT_TRUE(rope_a.ok() && rope_b.ok());
  // The rotation of one head of 8 at `pos`, as the neox pairing defines it.
  const auto expected = [](const Rope& rope, const std::vector<float>& x, int64_t pos) {
    std::vector<float> y = x;
    for (int64_t i = 0; i < 4; ++i) {
      const double angle = static_cast<double>(pos) * rope.inv_freq()[static_cast<size_t>(i)];
      const auto c = static_cast<float>(std::cos(angle)), s = static_cast<float>(std::sin(angle));
      y[i] = x[i] * c - x[i + 4] * s;
      y[i + 4] = x[i + 4] * c + x[i] * s;
    }
    return y;
  };
  const std::vector<float> x = {0.5f, -1.25f, 2.0f, 0.75f, -0.5f, 1.5f, -2.25f, 1.0f};
  for (int64_t pos : {3, 67, 3, 131, 67, 5000, 3}) {
    for (const Rope* rope : {&*rope_a, &*rope_b}) {
      std::vector<float> got = x;
      rope->Apply(got.data(), 1, 8, pos);
      const std::vector<float> want = expected(*rope, x, pos);
      for (size_t d = 0; d < 8; ++d) EXPECT_NEAR(got[d], want[d], 1e-6f) << "pos " << pos << " d " << d;
      std::vector<float> three;
      for (int h = 0; h < 3; ++h) three.insert(three.end(), x.begin(), x.end());
      rope->Apply(three.data(), 3, 8, pos);
      for (int h = 0; h < 3; ++h) {
        EXPECT_EQ(0, std::memcmp(three.data() + 8 * h, got.data(), 8 * sizeof(float))) << "pos " << pos;
      }
    }
  }
}

}  // namespace
}  // namespace deepinfer
