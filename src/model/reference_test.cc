// The engine's logits against the naive dense f64 reference in testing.cc,
// over every feature of the Llama family: both RoPE pairings, partial RoPE,
// rope scaling (linear, llama3, GGUF frequency factors), GQA/MQA, biases,
// q/k norm, untied LM head, sliding windows, and quantized matrix dtypes.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "model/dense_model.h"
#include "model/testing.h"
#include "tensor/dtype.h"

namespace deepinfer {
namespace {

struct Variant {
  std::string name;
  ModelConfig config;
  WeightNaming naming = WeightNaming::kHf;
  DType dtype = DType::kF32;
  std::vector<float> rope_freqs;  // GGUF rope_freqs.weight, when non-empty
  int n_tokens = 40;
  std::vector<int64_t> chunks;  // default: one chunk
  double tolerance = 2e-5;
};

// gtest prints a parameter on failure: its name, not its bytes.
void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

std::vector<Variant> Variants() {
  std::vector<Variant> v;
  auto add = [&v](std::string name, ModelConfig c) {
    Variant x;
    x.name = std::move(name);
    x.config = std::move(c);
    v.push_back(x);
    return &v.back();
  };
  using testing::TinyConfig;
  add("llama_neox", TinyConfig("llama"));
  add("llama_interleaved_gguf", TinyConfig("llama", RopeStyle::kInterleaved))->naming = WeightNaming::kGguf;
  {
    ModelConfig c = TinyConfig("llama");
    c.tie_word_embeddings = true;
    c.num_kv_heads = 1;  // MQA
    add("llama_tied_mqa", c);
  }
  {
    ModelConfig c = TinyConfig("llama");
    c.rope_dim = 4;  // partial rotary
    add("llama_partial_rope_neox", c);
    c.rope_style = RopeStyle::kInterleaved;
    add("llama_partial_rope_interleaved", c);
  }
  {
    ModelConfig c = TinyConfig("llama");
    c.rope_scaling = {"linear", 2.0, 1.0, 4.0, 8192};
    add("llama_linear_scaling", c);
    // theta 10000, 8 dims: wavelengths 6.3, 63, 628, 6283 against bands at
    // 1024/4 = 256 and 1024: kept, kept, blended, divided.
    c.rope_scaling = {"llama3", 4.0, 1.0, 4.0, 1024};
    add("llama_llama3_scaling", c)->n_tokens = 120;
  }
  {
    Variant* x = add("llama_gguf_rope_freqs", TinyConfig("llama", RopeStyle::kInterleaved));
    x->naming = WeightNaming::kGguf;
    x->rope_freqs = {1.0f, 1.5f, 4.0f, 8.0f};
  }
  {
    ModelConfig c = TinyConfig("mistral");
    c.sliding_window = {5, 5};
    add("mistral_swa", c)->chunks = {3, 20, 1, 16};
  }
  {
    ModelConfig c = TinyConfig("qwen2");
    c.sliding_window = {0, 7};  // like max_window_layers = 1
    add("qwen2_bias_swa", c);
  }
  add("qwen3_qk_norm", TinyConfig("qwen3"));
  {
    ModelConfig c = TinyConfig("qwen3");
    c.sliding_window = {9, 0};
    Variant* x = add("qwen3_long_swa", c);
    x->n_tokens = 300;  // well past the window, as the acceptance prompts
    x->chunks = {150, 150};
  }
  for (DType dt : {DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0}) {
    ModelConfig c = TinyConfig("llama");
    c.hidden_size = 64;  // quantized blocks are 32 wide: every matrix row must be whole blocks
    c.intermediate_size = 96;
    Variant* x = add(std::string("llama_") + DTypeName(dt), c);
    x->dtype = dt;
    // Q8_0/Q4_0 matmuls quantize activations to int8 per 32-block (VNNI
    // kernels, docs/kernels.md): up to max|x_block| / 254 error per input,
    // up to 3.4% of the largest logit through this random model (measured); the
    // f64 reference keeps f32 activations. F16 keeps the tight bound.
    if (dt == DType::kQ8_0 || dt == DType::kQ4_0) x->tolerance = 6e-2;
    // BF16 matmuls round activations to bf16 (for vdpbf16ps, as llama.cpp
    // does; kernels.h): up to 2^-9 relative per input, up to 1.1% of the
    // largest logit through this random model (measured, scalar and AVX-512
    // alike); the reference keeps f32 activations.
    if (dt == DType::kBF16) x->tolerance = 3e-2;
  }
  return v;
}

class ReferenceTest : public ::testing::TestWithParam<Variant> {};

TEST_P(ReferenceTest, LogitsMatchDenseReference) {
  const Variant& v = GetParam();
  auto weights = testing::MakeRandomWeights(v.config, v.naming, 1234, v.dtype);
  if (!v.rope_freqs.empty()) {
    weights->AddF32(WeightName(v.naming, TensorRole::kRopeFreqs), {static_cast<int64_t>(v.rope_freqs.size())},
                    v.rope_freqs);
  }
  auto model = CreateDenseModel(v.config, weights, 2);
  ASSERT_TRUE(model.ok()) << model.status().ToString();

  std::vector<int32_t> tokens(static_cast<size_t>(v.n_tokens));
  for (int i = 0; i < v.n_tokens; ++i) {
    tokens[i] = (i * 53 + 7) % static_cast<int>(v.config.vocab_size);
  }
  const std::vector<int64_t> chunks = v.chunks.empty() ? std::vector<int64_t>{v.n_tokens} : v.chunks;
  const auto logits = testing::RunChunks(**model, tokens, chunks, 8);
  const auto ref = testing::ReferenceForward((*model)->config(), *weights, tokens);
  const int64_t vocab = v.config.vocab_size;
  double worst = 0;
  for (int t = 0; t < v.n_tokens; ++t) {
    const double err = testing::MaxRelativeError(logits.data() + t * vocab, ref[t]);
    worst = std::max(worst, err);
    ASSERT_LT(err, v.tolerance) << "position " << t;
  }
  RecordProperty("max_rel_error", std::to_string(worst));
}

TEST(ReferenceTest, RopeStyleMatters) {
  // Guards the reference itself: interleaved and NeoX must differ, or the
  // tests above could not catch a wrong pairing.
  ModelConfig neox = testing::TinyConfig("llama");
  ModelConfig inter = testing::TinyConfig("llama", RopeStyle::kInterleaved);
  auto weights = testing::MakeRandomWeights(neox, WeightNaming::kHf, 5);
  const std::vector<int32_t> tokens = {3, 14, 15, 92, 65, 35};
  const auto a = testing::ReferenceForward(neox, *weights, tokens);
  const auto b = testing::ReferenceForward(inter, *weights, tokens);
  double diff = 0;
  for (size_t i = 0; i < a.back().size(); ++i) {
    diff = std::max(diff, std::abs(a.back()[i] - b.back()[i]));
  }
  EXPECT_GT(diff, 1e-2);
}

INSTANTIATE_TEST_SUITE_P(Variants, ReferenceTest, ::testing::ValuesIn(Variants()),
                         [](const ::testing::TestParamInfo<Variant>& info) { return info.param.name; });

}  // namespace
}  // namespace deepinfer
