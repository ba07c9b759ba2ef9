// deepinfer synth: both formats read back, the GGUF and HF copies compared
// (Q/K un-permuted, and attention scores equal under each format's rope),
// determinism by seed, arch variants and the tokenizer.
#include "synth/synth.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "io/gguf.h"
#include "io/io_test_util.h"
#include "io/safetensors.h"
#include "synth/vocab.h"
#include "tensor/dequant.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer {
namespace {

using testing_util::MakeTempDir;
using testing_util::ReadBytes;

std::vector<float> Floats(const TensorView& t) {
  std::vector<float> v(static_cast<size_t>(t.NumElements()));
  for (int64_t r = 0; r < t.rows(); ++r) {
    DequantizeRow(t.dtype, static_cast<const uint8_t*>(t.data) + r * RowBytes(t.dtype, t.cols()),
                  &v[static_cast<size_t>(r * t.cols())], t.cols());
  }
  return v;
}

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return nlohmann::json::parse(s.str());
}

struct Pair {
  std::unique_ptr<GgufFile> gguf;
  std::unique_ptr<SafetensorsCheckpoint> hf;
  std::string dir;
};

Pair Synth(const std::string& arch, const std::string& preset, DType gguf_dtype = DType::kF32,
           uint64_t seed = 7) {
  Pair p;
  p.dir = MakeTempDir("synth_" + arch);
  SynthOptions o;
  o.arch = arch;
  o.preset = preset;
  o.seed = seed;
  o.dtype = gguf_dtype;
  o.out = p.dir + "/m.gguf";
  Status st = WriteSynthModel(o);
  EXPECT_TRUE(st.ok()) << st.ToString();
  o.format = SynthFormat::kHf;
  o.dtype = DType::kF32;
  o.out = p.dir + "/hf";
  st = WriteSynthModel(o);
  EXPECT_TRUE(st.ok()) << st.ToString();
  auto g = GgufFile::Open(p.dir + "/m.gguf");
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  auto h = SafetensorsCheckpoint::Open(p.dir + "/hf");
  EXPECT_TRUE(h.ok()) << h.status().ToString();
  if (g.ok()) p.gguf = std::move(*g);
  if (h.ok()) p.hf = std::move(*h);
  return p;
}

// Rotary embedding on one head vector, in the two conventions.
void RopeRotateHalf(float* x, int64_t d, int64_t pos, double theta) {
  for (int64_t i = 0; i < d / 2; ++i) {
    const double a = pos * std::pow(theta, -2.0 * i / d);
    const double x0 = x[i], x1 = x[i + d / 2];
    x[i] = static_cast<float>(x0 * std::cos(a) - x1 * std::sin(a));
    x[i + d / 2] = static_cast<float>(x0 * std::sin(a) + x1 * std::cos(a));
  }
}
void RopeInterleaved(float* x, int64_t d, int64_t pos, double theta) {
  for (int64_t i = 0; i < d / 2; ++i) {
    const double a = pos * std::pow(theta, -2.0 * i / d);
    const double x0 = x[2 * i], x1 = x[2 * i + 1];
    x[2 * i] = static_cast<float>(x0 * std::cos(a) - x1 * std::sin(a));
    x[2 * i + 1] = static_cast<float>(x0 * std::sin(a) + x1 * std::cos(a));
  }
}

std::vector<float> MatVec(const std::vector<float>& w, const std::vector<float>& x) {
  const size_t cols = x.size(), rows = w.size() / cols;
  std::vector<float> y(rows);
  for (size_t r = 0; r < rows; ++r) {
    double acc = 0;
    for (size_t c = 0; c < cols; ++c) acc += static_cast<double>(w[r * cols + c]) * x[c];
    y[r] = static_cast<float>(acc);
  }
  return y;
}

TEST(Synth, TinyLlamaGgufAndHfAreTheSameModel) {
  Pair p = Synth("llama", "tiny");
  ASSERT_TRUE(p.gguf && p.hf);
  const GgufFile& g = *p.gguf;
  EXPECT_EQ(*g.GetString("general.architecture"), "llama");
  EXPECT_EQ(*g.GetInt("llama.embedding_length"), 64);
  EXPECT_EQ(*g.GetInt("llama.block_count"), 3);
  EXPECT_EQ(*g.GetInt("llama.feed_forward_length"), 160);
  EXPECT_EQ(*g.GetInt("llama.attention.head_count"), 4);
  EXPECT_EQ(*g.GetInt("llama.attention.head_count_kv"), 2);
  EXPECT_EQ(*g.GetInt("llama.rope.dimension_count"), 16);
  EXPECT_EQ(*g.GetInt("general.file_type"), 0);
  EXPECT_FLOAT_EQ(static_cast<float>(*g.GetFloat("llama.attention.layer_norm_rms_epsilon")), 1e-5f);
  EXPECT_EQ(*g.GetString("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(*g.GetString("tokenizer.ggml.pre"), "gpt-2");
  EXPECT_EQ(g.GetStringArray("tokenizer.ggml.tokens")->size(), 512u);
  EXPECT_EQ(g.FindTensor("blk.0.attn_q.weight")->shape, (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(g.FindTensor("blk.2.attn_k.weight")->shape, (std::vector<int64_t>{32, 64}));
  EXPECT_EQ(g.FindTensor("blk.1.ffn_down.weight")->shape, (std::vector<int64_t>{64, 160}));
  EXPECT_EQ(g.FindTensor("output.weight")->shape, (std::vector<int64_t>{512, 64}));
  EXPECT_EQ(g.tensors().size(), 1u + 3 * 9 + 2);
  EXPECT_EQ(p.hf->tensors().size(), g.tensors().size());

  const auto config = ReadJson(p.dir + "/hf/config.json");
  EXPECT_EQ(config["architectures"][0], "LlamaForCausalLM");
  EXPECT_EQ(config["num_key_value_heads"], 2);
  EXPECT_EQ(config["head_dim"], 16);
  EXPECT_EQ(config["tie_word_embeddings"], false);

  // Every tensor equal, Q and K after undoing llama.cpp's row permutation:
  // GGUF row h*d + 2i + s holds HF row h*d + s*d/2 + i.
  const int64_t d = 16;
  for (int64_t l = 0; l < 3; ++l) {
    for (const char* which : {"q", "k"}) {
      const std::string hf_name =
          "model.layers." + std::to_string(l) + ".self_attn." + which + "_proj.weight";
      const std::string gg_name = "blk." + std::to_string(l) + ".attn_" + which + ".weight";
      const auto hf = Floats(*p.hf->FindTensor(hf_name));
      const auto gg = Floats(*g.FindTensor(gg_name));
      const int64_t heads = which[0] == 'q' ? 4 : 2;
      for (int64_t h = 0; h < heads; ++h) {
        for (int64_t i = 0; i < d / 2; ++i) {
          for (int64_t s = 0; s < 2; ++s) {
            for (int64_t c = 0; c < 64; ++c) {
              ASSERT_EQ(gg[((h * d + 2 * i + s) * 64) + c], hf[((h * d + s * d / 2 + i) * 64) + c])
                  << gg_name;
            }
          }
        }
      }
    }
  }
  const std::pair<const char*, const char*> same[] = {
      {"model.embed_tokens.weight", "token_embd.weight"},
      {"model.layers.1.self_attn.v_proj.weight", "blk.1.attn_v.weight"},
      {"model.layers.1.self_attn.o_proj.weight", "blk.1.attn_output.weight"},
      {"model.layers.2.mlp.gate_proj.weight", "blk.2.ffn_gate.weight"},
      {"model.layers.0.input_layernorm.weight", "blk.0.attn_norm.weight"},
      {"model.layers.0.post_attention_layernorm.weight", "blk.0.ffn_norm.weight"},
      {"model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"}};
  for (auto [hf, gg] : same) EXPECT_EQ(Floats(*p.hf->FindTensor(hf)), Floats(*g.FindTensor(gg))) << hf;
}

// The point of the permutation: attention scores are identical when the HF
// copy uses rotate-half rope and the GGUF copy interleaved-pair rope.
TEST(Synth, AttentionScoresAgreeAcrossRopeConventions) {
  Pair p = Synth("llama", "tiny", DType::kF32, 3);
  ASSERT_TRUE(p.gguf && p.hf);
  std::vector<float> x(64), y(64);
  for (int i = 0; i < 64; ++i) x[i] = SynthNormal(99, "x", i), y[i] = SynthNormal(99, "y", i);
  const auto q_hf = MatVec(Floats(*p.hf->FindTensor("model.layers.0.self_attn.q_proj.weight")), x);
  const auto k_hf = MatVec(Floats(*p.hf->FindTensor("model.layers.0.self_attn.k_proj.weight")), y);
  const auto q_gg = MatVec(Floats(*p.gguf->FindTensor("blk.0.attn_q.weight")), x);
  const auto k_gg = MatVec(Floats(*p.gguf->FindTensor("blk.0.attn_k.weight")), y);
  const int64_t d = 16, m = 11, n = 4;
  for (int64_t h = 0; h < 4; ++h) {
    const int64_t kvh = h / 2;
    std::vector<float> qa(q_hf.begin() + h * d, q_hf.begin() + (h + 1) * d);
    std::vector<float> ka(k_hf.begin() + kvh * d, k_hf.begin() + (kvh + 1) * d);
    std::vector<float> qb(q_gg.begin() + h * d, q_gg.begin() + (h + 1) * d);
    std::vector<float> kb(k_gg.begin() + kvh * d, k_gg.begin() + (kvh + 1) * d);
    RopeRotateHalf(qa.data(), d, m, 10000), RopeRotateHalf(ka.data(), d, n, 10000);
    RopeInterleaved(qb.data(), d, m, 10000), RopeInterleaved(kb.data(), d, n, 10000);
    double sa = 0, sb = 0, naive = 0;
    for (int64_t i = 0; i < d; ++i) sa += qa[i] * ka[i], sb += qb[i] * kb[i];
    // Control: interleaved rope on the un-permuted HF rows gives a different score.
    std::vector<float> qc(q_hf.begin() + h * d, q_hf.begin() + (h + 1) * d);
    std::vector<float> kc(k_hf.begin() + kvh * d, k_hf.begin() + (kvh + 1) * d);
    RopeInterleaved(qc.data(), d, m, 10000), RopeInterleaved(kc.data(), d, n, 10000);
    for (int64_t i = 0; i < d; ++i) naive += qc[i] * kc[i];
    EXPECT_NEAR(sa, sb, 1e-4 * (1 + std::fabs(sa))) << "head " << h;
    EXPECT_GT(std::fabs(sa - naive), 1e-3) << "head " << h;
  }
}

TEST(Synth, DeterministicBySeed) {
  const std::string dir = MakeTempDir("synth_seed");
  auto write = [&](uint64_t seed, const std::string& name) {
    SynthOptions o;
    o.seed = seed;
    o.dtype = DType::kQ8_0;
    o.out = dir + "/" + name;
    EXPECT_TRUE(WriteSynthModel(o).ok());
    return ReadBytes(o.out);
  };
  const auto a = write(5, "a.gguf"), b = write(5, "b.gguf"), c = write(6, "c.gguf");
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(a.size(), c.size());
}

TEST(Synth, WeightScales) {
  Pair p = Synth("llama", "tiny", DType::kF32, 11);
  ASSERT_TRUE(p.hf);
  auto stats = [&](const std::string& name) {
    const auto v = Floats(*p.hf->FindTensor(name));
    double s = 0, s2 = 0;
    for (float x : v) s += x, s2 += static_cast<double>(x) * x;
    const double mean = s / v.size();
    return std::make_pair(mean, std::sqrt(s2 / v.size() - mean * mean));
  };
  auto [m_up, s_up] = stats("model.layers.0.mlp.up_proj.weight");  // 160 x 64: std 1/8
  EXPECT_NEAR(m_up, 0.0, 0.01);
  EXPECT_NEAR(s_up, 0.125, 0.01);
  auto [m_down, s_down] = stats("model.layers.0.mlp.down_proj.weight");  // fan_in 160
  EXPECT_NEAR(s_down, 1 / std::sqrt(160.0), 0.01);
  auto [m_emb, s_emb] = stats("model.embed_tokens.weight");
  EXPECT_NEAR(s_emb, 1.0, 0.03);
  auto [m_norm, s_norm] = stats("model.layers.1.input_layernorm.weight");
  EXPECT_NEAR(m_norm, 1.0, 0.1);
  EXPECT_GT(s_norm, 0.1);  // not all ones: a skipped norm weight changes outputs
  EXPECT_LT(s_norm, 0.3);
}

TEST(Synth, Qwen2HasBiasesTiedEmbeddingsAndNoPermutation) {
  Pair p = Synth("qwen2", "tiny");
  ASSERT_TRUE(p.gguf && p.hf);
  const GgufFile& g = *p.gguf;
  EXPECT_EQ(*g.GetString("general.architecture"), "qwen2");
  EXPECT_EQ(*g.GetFloat("qwen2.rope.freq_base"), 1e6);
  EXPECT_EQ(*g.GetInt("qwen2.block_count"), 3);
  EXPECT_EQ(g.FindTensor("output.weight"), nullptr);
  EXPECT_EQ(p.hf->FindTensor("lm_head.weight"), nullptr);
  EXPECT_EQ(g.FindTensor("blk.0.attn_q.bias")->shape, (std::vector<int64_t>{64}));
  EXPECT_EQ(g.FindTensor("blk.0.attn_k.bias")->dtype, DType::kF32);
  EXPECT_EQ(Floats(*g.FindTensor("blk.1.attn_q.weight")),
            Floats(*p.hf->FindTensor("model.layers.1.self_attn.q_proj.weight")));
  EXPECT_EQ(Floats(*g.FindTensor("blk.1.attn_v.bias")),
            Floats(*p.hf->FindTensor("model.layers.1.self_attn.v_proj.bias")));
  // Tied: the embedding doubles as the output, so its std is 1/sqrt(hidden) = 1/8.
  const auto emb = Floats(*g.FindTensor("token_embd.weight"));
  double s2 = 0;
  for (float x : emb) s2 += static_cast<double>(x) * x;
  EXPECT_NEAR(std::sqrt(s2 / emb.size()), 0.125, 0.01);
  const auto config = ReadJson(p.dir + "/hf/config.json");
  EXPECT_EQ(config["architectures"][0], "Qwen2ForCausalLM");
  EXPECT_EQ(config["rope_theta"], 1e6);
  EXPECT_EQ(config["tie_word_embeddings"], true);
}

TEST(Synth, Qwen3HasQkNormsAndExplicitHeadDim) {
  Pair p = Synth("qwen3", "tiny");
  ASSERT_TRUE(p.gguf && p.hf);
  const GgufFile& g = *p.gguf;
  EXPECT_EQ(*g.GetString("general.architecture"), "qwen3");
  EXPECT_EQ(*g.GetInt("qwen3.attention.key_length"), 32);
  EXPECT_EQ(g.FindTensor("blk.0.attn_q.weight")->shape, (std::vector<int64_t>{128, 64}));
  EXPECT_EQ(g.FindTensor("blk.0.attn_output.weight")->shape, (std::vector<int64_t>{64, 128}));
  EXPECT_EQ(g.FindTensor("blk.2.attn_k_norm.weight")->shape, (std::vector<int64_t>{32}));
  EXPECT_EQ(p.hf->FindTensor("model.layers.2.self_attn.q_norm.weight")->shape, (std::vector<int64_t>{32}));
  const auto config = ReadJson(p.dir + "/hf/config.json");
  EXPECT_EQ(config["model_type"], "qwen3");
  EXPECT_EQ(config["head_dim"], 32);
  EXPECT_EQ(config["hidden_size"], 64);
}

TEST(Synth, MistralSlidesEveryLayer) {
  Pair p = Synth("mistral", "tiny");
  ASSERT_TRUE(p.gguf && p.hf);
  EXPECT_EQ(*p.gguf->GetString("general.architecture"), "llama");
  EXPECT_EQ(*p.gguf->GetIntArray("llama.attention.sliding_window"), (std::vector<int64_t>{16, 16, 16}));
  const auto config = ReadJson(p.dir + "/hf/config.json");
  EXPECT_EQ(config["architectures"][0], "MistralForCausalLM");
  EXPECT_EQ(config["sliding_window"], 16);
  EXPECT_EQ(config["layer_types"],
            nlohmann::json({"sliding_attention", "sliding_attention", "sliding_attention"}));
}

TEST(Synth, Llama3RopeFactors) {
  Pair p = Synth("llama", "tiny-rope-llama3");
  ASSERT_TRUE(p.gguf);
  const auto f = Floats(*p.gguf->FindTensor("rope_freqs.weight"));
  ASSERT_EQ(f.size(), 8u);
  // head_dim 16, theta 1e4, original context 32, low/high freq factors 1/4:
  // wavelength 2*pi*1e4^(i/8); < 8 -> 1, > 32 -> 8, between: smooth blend.
  EXPECT_FLOAT_EQ(f[0], 1.0f);                                               // 6.28
  const double smooth = (32 / (2 * M_PI * std::pow(1e4, 1.0 / 8)) - 1) / 3;  // wavelength 19.87
  EXPECT_NEAR(f[1], 1 / ((1 - smooth) / 8 + smooth), 1e-5);
  EXPECT_NEAR(f[1], 3.2995, 1e-3);
  for (int i = 2; i < 8; ++i) EXPECT_FLOAT_EQ(f[i], 8.0f);
  const auto config = ReadJson(p.dir + "/hf/config.json");
  EXPECT_EQ(config["rope_scaling"]["rope_type"], "llama3");
}

TEST(Synth, QuantizedGgufKeepsNormsF32) {
  Pair q = Synth("llama", "tiny", DType::kQ4_0, 7);
  Pair f = Synth("llama", "tiny", DType::kF32, 7);
  ASSERT_TRUE(q.gguf && f.gguf);
  EXPECT_EQ(*q.gguf->GetInt("general.file_type"), 2);
  EXPECT_EQ(q.gguf->FindTensor("blk.0.ffn_up.weight")->dtype, DType::kQ4_0);
  EXPECT_EQ(q.gguf->FindTensor("token_embd.weight")->dtype, DType::kQ4_0);
  EXPECT_EQ(q.gguf->FindTensor("blk.0.ffn_norm.weight")->dtype, DType::kF32);
  const auto a = Floats(*q.gguf->FindTensor("blk.0.ffn_up.weight"));
  const auto b = Floats(*f.gguf->FindTensor("blk.0.ffn_up.weight"));
  double err = 0, ref = 0;
  for (size_t i = 0; i < a.size(); ++i) err += (a[i] - b[i]) * (a[i] - b[i]), ref += b[i] * b[i];
  EXPECT_LT(std::sqrt(err / ref), 0.15);  // 4-bit: roughly 10% relative RMS error
}

TEST(Synth, RejectsBadOptions) {
  SynthOptions o;
  o.out = MakeTempDir("synth_bad") + "/x";
  o.format = SynthFormat::kHf;
  o.dtype = DType::kQ8_0;
  EXPECT_EQ(WriteSynthModel(o).code(), StatusCode::kInvalidArgument);
  o.format = SynthFormat::kGguf;
  o.dtype = DType::kQ4_K;
  EXPECT_EQ(WriteSynthModel(o).code(), StatusCode::kInvalidArgument);
  o.dtype = DType::kF32;
  o.arch = "gpt5";
  EXPECT_NE(WriteSynthModel(o).message().find("gpt5"), std::string::npos);
  o.arch = "llama";
  o.preset = "huge";
  EXPECT_NE(WriteSynthModel(o).message().find("huge"), std::string::npos);
}

TEST(Synth, SwaBenchPresetHasTheIssuesShape) {
  for (const char* arch : {"qwen3", "deepseek_v3"}) {
    auto s = ResolveSynthSpec(arch, "swa-bench");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->layers, 8);
    EXPECT_EQ(std::count(s->sliding_layers.begin(), s->sliding_layers.end(), true), 6);
    EXPECT_EQ(s->sliding_window, 128);
    EXPECT_EQ(s->hidden, 512);
    EXPECT_EQ(s->heads, 8);
    EXPECT_EQ(s->vocab, 32000);
    EXPECT_EQ(s->context, 8192);
  }
  EXPECT_EQ(ResolveSynthSpec("qwen3", "swa-bench")->kv_heads, 4);
  EXPECT_GT(ResolveSynthSpec("deepseek_v3", "swa-bench")->kv_lora, 0);  // MLA
  EXPECT_EQ(ResolveSynthSpec("llama", "swa-bench").status().code(), StatusCode::kInvalidArgument);
}

// Qwen3-30B-A3B's published config.json per layer (hidden_size 2048, 32 /
// 4 heads of head_dim 128, num_experts 128, num_experts_per_tok 8,
// moe_intermediate_size 768, vocab_size 151936), 12 of its 48 layers.
TEST(Synth, Qwen3MoeA3bPresetHasTheCheckpointsLayerShape) {
  auto s = ResolveSynthSpec("qwen3_moe", "qwen3-moe-a3b");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->hidden, 2048);
  EXPECT_EQ(s->heads, 32);
  EXPECT_EQ(s->kv_heads, 4);
  EXPECT_EQ(s->head_dim, 128);
  EXPECT_EQ(s->experts, 128);
  EXPECT_EQ(s->experts_per_token, 8);
  EXPECT_EQ(s->expert_ffn, 768);
  EXPECT_EQ(s->vocab, 151936);
  EXPECT_EQ(s->layers, 12);
  EXPECT_TRUE(s->qk_norm);
  EXPECT_TRUE(s->norm_topk_prob);
  for (const char* arch : {"llama", "qwen2_moe", "mixtral", "deepseek_v2"}) {
    EXPECT_EQ(ResolveSynthSpec(arch, "qwen3-moe-a3b").status().code(), StatusCode::kInvalidArgument) << arch;
  }
}

TEST(Synth, MaxPositionAndSlidingWindowOverrides) {
  SynthOptions o;
  o.max_position = 4096;
  o.sliding_window = 40;
  SynthSpec hybrid = *ResolveSynthSpec("qwen3", "tiny-hybrid-swa");
  ASSERT_TRUE(ApplySynthOverrides(o, hybrid).ok());
  EXPECT_EQ(hybrid.context, 4096);
  EXPECT_EQ(hybrid.sliding_window, 40);
  EXPECT_EQ(hybrid.sliding_layers, (std::vector<bool>{true, false, true}));  // the pattern stays
  SynthSpec plain = *ResolveSynthSpec("llama", "tiny");
  ASSERT_TRUE(ApplySynthOverrides(o, plain).ok());
  EXPECT_EQ(plain.sliding_layers, (std::vector<bool>{true, true, true}));  // no pattern: every layer
  // Written and read back: the HF config carries both.
  o.arch = "qwen3";
  o.preset = "tiny-hybrid-swa";
  o.format = SynthFormat::kHf;
  o.out = MakeTempDir("synth_overrides") + "/hf";
  ASSERT_TRUE(WriteSynthModel(o).ok());
  const auto config = ReadJson(o.out + "/config.json");
  EXPECT_EQ(config["max_position_embeddings"], 4096);
  EXPECT_EQ(config["sliding_window"], 40);
  o.max_position = -1;
  EXPECT_EQ(WriteSynthModel(o).code(), StatusCode::kInvalidArgument);
  SynthSpec yarn = *ResolveSynthSpec("deepseek_v3", "tiny");
  SynthOptions small;
  small.max_position = 8;  // below YaRN's original context 64
  EXPECT_EQ(ApplySynthOverrides(small, yarn).code(), StatusCode::kInvalidArgument);
}

TEST(SynthTokenizer, ByteLevelVocabAndMerges) {
  EXPECT_EQ(ByteLevelSpelling(' '), "\xc4\xa0");   // U+0120 'Ġ'
  EXPECT_EQ(ByteLevelSpelling('\n'), "\xc4\x8a");  // U+010A 'Ċ'
  EXPECT_EQ(ByteLevelSpelling('a'), "a");
  EXPECT_EQ(ByteLevelSpelling(0), "\xc4\x80");     // U+0100
  EXPECT_EQ(ByteLevelSpelling(0xad), "\xc5\x83");  // soft hyphen: the 68th remapped byte, U+0143
  const SynthVocab v = BuildSynthVocab(512);
  ASSERT_EQ(v.tokens.size(), 512u);
  EXPECT_EQ(v.tokens[1], "<s>");
  EXPECT_EQ(v.tokens[3 + 'e'], "e");
  EXPECT_GT(v.merges.size(), 100u);
  std::set<std::string> all(v.tokens.begin(), v.tokens.end());
  EXPECT_EQ(all.size(), v.tokens.size());  // no duplicate spellings
  EXPECT_TRUE(all.count("\xc4\xa0the"));   // " the" is surely learnt from English text
  for (const auto& m : v.merges) {
    const auto sp = m.find(' ');
    ASSERT_NE(sp, std::string::npos);
    EXPECT_TRUE(all.count(m.substr(0, sp)) && all.count(m.substr(sp + 1))) << m;
    EXPECT_TRUE(all.count(m.substr(0, sp) + m.substr(sp + 1))) << m;
  }
  const SynthVocab big = BuildSynthVocab(32000);
  EXPECT_EQ(big.tokens.size(), 32000u);
  EXPECT_EQ(big.token_types.back(), kTokenUnused);
  const auto j = nlohmann::json::parse(SynthTokenizerJson(v));
  EXPECT_EQ(j["model"]["type"], "BPE");
  EXPECT_EQ(j["model"]["vocab"].size(), 512u);
  EXPECT_EQ(j["model"]["vocab"]["\xc4\xa0the"],
            std::find(v.tokens.begin(), v.tokens.end(), "\xc4\xa0the") - v.tokens.begin());
  EXPECT_EQ(j["model"]["merges"].size(), v.merges.size());
  EXPECT_EQ(j["pre_tokenizer"]["type"], "ByteLevel");
  EXPECT_EQ(j["decoder"]["type"], "ByteLevel");
  EXPECT_EQ(j["added_tokens"].size(), 3u);
  EXPECT_EQ(j["post_processor"]["single"][0]["SpecialToken"]["id"], "<s>");
  EXPECT_EQ(j["post_processor"]["single"][1]["Sequence"]["id"], "A");
}

}  // namespace
}  // namespace deepinfer

// --tokenizer DIR: the model's vocabulary is the real tokenizer's, and the
// tokenizer inside (HF: the copied files; GGUF: tokenizer.ggml.* with the
// detected pre-tokenizer name) encodes like the original, with its chat
// template. Probe texts differ from the one the writer checks with.
namespace deepinfer {
namespace {

const char* kTexts[] = {
    "Hello, world! It's 2026; numbers 1234567 and 3.5e10.",
    "def f(x):\n    return x  # comment\n\n\n  trailing   ",
    "\xe4\xb8\xad\xe6\x96\x87\xe6\xb5\x8b\xe8\xaf\x95 \xd0\xbf\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82 "
    "\xf0\x9f\x98\x80!!",
    "<|im_start|>user\nhi<|im_end|><tool_call>{\"a\": 1}</tool_call>"};

void ExpectSameTokenizer(const std::string& family, SynthFormat format) {
  const std::string dir = std::string(DI_SHARED_DIR) + "/models/tokenizers/" + family;
  auto source = Tokenizer::FromHfDir(dir);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  const std::string out = MakeTempDir("synth_tok") + (format == SynthFormat::kHf ? "/m" : "/m.gguf");
  SynthOptions o;
  o.arch = "qwen3";
  o.out = out;
  o.format = format;
  o.tokenizer_dir = dir;
  ASSERT_TRUE(WriteSynthModel(o).ok());
  std::unique_ptr<Tokenizer> copy;
  std::string chat_template;
  if (format == SynthFormat::kHf) {
    auto t = Tokenizer::FromHfDir(out);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    copy = std::move(*t);
    EXPECT_EQ(ReadJson(out + "/config.json")["vocab_size"], (*source)->vocab_size());
    chat_template = ReadJson(out + "/tokenizer_config.json")["chat_template"].get<std::string>();
  } else {
    auto gguf = GgufFile::Open(out);
    ASSERT_TRUE(gguf.ok());
    auto t = Tokenizer::FromGguf(**gguf);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    copy = std::move(*t);
    EXPECT_EQ((*gguf)->GetIntOr("qwen3.vocab_size", 0), (*source)->vocab_size());
    chat_template = (*gguf)->GetStringOr("tokenizer.chat_template", "");
  }
  EXPECT_EQ(chat_template, (*source)->data().chat_template);
  EXPECT_FALSE(chat_template.empty());
  EXPECT_EQ(copy->vocab_size(), (*source)->vocab_size());
  EXPECT_EQ(copy->bos_id(), (*source)->bos_id());
  EXPECT_EQ(copy->eos_id(), (*source)->eos_id());
  for (const char* text : kTexts) {
    EXPECT_EQ(copy->Encode(text, true, true), (*source)->Encode(text, true, true)) << family << ": " << text;
  }
  for (int32_t id = 0; id < copy->vocab_size(); id += 997) {
    EXPECT_EQ(copy->TokenBytes(id), (*source)->TokenBytes(id)) << id;
  }
}

TEST(SynthTokenizer, Qwen3Hf) { ExpectSameTokenizer("qwen3", SynthFormat::kHf); }
TEST(SynthTokenizer, Qwen3Gguf) { ExpectSameTokenizer("qwen3", SynthFormat::kGguf); }
TEST(SynthTokenizer, Llama3Gguf) { ExpectSameTokenizer("llama3", SynthFormat::kGguf); }
TEST(SynthTokenizer, DeepseekV3Gguf) { ExpectSameTokenizer("deepseek_v3", SynthFormat::kGguf); }

TEST(SynthTokenizer, BadDirectoryIsAnError) {
  SynthOptions o;
  o.out = MakeTempDir("synth_tok") + "/m";
  o.format = SynthFormat::kHf;
  o.tokenizer_dir = MakeTempDir("synth_tok_empty");
  Status s = WriteSynthModel(o);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("no tokenizer.json"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace deepinfer
