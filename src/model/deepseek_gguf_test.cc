// GGUF `deepseek2` (llama.cpp's convention, model/deepseek_gguf.h): the keys
// llama.cpp's converter writes map to the HF-equivalent config; the legacy
// unsplit attn_kv_b form and the split attn_k_b / attn_v_b form hold the same
// model; quantized synth files load. (GGUF == HF logits within 1e-4 against
// the NumPy reference: tests/CMakeLists.txt reference_deepseek_*.)
#include "model/deepseek_gguf.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "io/gguf.h"
#include "model/config_loader.h"
#include "model/mtp.h"
#include "model/testing.h"
#include "synth/synth.h"
#include "tensor/dequant.h"

namespace deepinfer {
namespace {

std::string TempPath(const std::string& name) {
  return testing::PerTestPath(DI_BINARY_DIR, "deepseek_gguf_test", name);
}

std::string SynthGguf(const std::string& arch, DType dtype) {
  SynthOptions o;
  o.arch = arch;
  o.preset = "tiny";
  o.seed = 31;
  o.dtype = dtype;
  o.format = SynthFormat::kGguf;
  o.out = TempPath(arch + "_" + DTypeName(dtype) + ".gguf");
  const Status st = WriteSynthModel(o);
  EXPECT_TRUE(st.ok()) << st.ToString();
  return o.out;
}

StatusOr<ModelConfig> ConfigOf(const GgufWriter& w, const std::string& name) {
  const std::string path = TempPath(name + ".gguf");
  DI_RETURN_IF_ERROR(w.Write(path));
  DI_ASSIGN_OR_RETURN(auto gguf, GgufFile::Open(path));
  return ModelConfigFromGguf(*gguf);
}

// The metadata of DeepSeek-V2-Lite as convert_hf_to_gguf.py writes it
// (config.json: 27 layers, hidden 2048, 16 heads, kv_lora 512, no q_lora,
// nope 128 + rope 64, v 128, 64 experts top-6, 2 shared, first layer dense,
// softmax, no renormalization, scale 1, YaRN x40 with mscale_all_dim 0.707).
GgufWriter V2LiteMetadata() {
  GgufWriter w;
  const std::string p = "deepseek2.";
  w.SetString("general.architecture", "deepseek2");
  w.SetU32(p + "block_count", 27);
  w.SetU32(p + "context_length", 163840);
  w.SetU32(p + "embedding_length", 2048);
  w.SetU32(p + "feed_forward_length", 10944);
  w.SetU32(p + "attention.head_count", 16);
  w.SetU32(p + "attention.head_count_kv", 1);
  w.SetF32(p + "rope.freq_base", 10000);
  w.SetF32(p + "attention.layer_norm_rms_epsilon", 1e-6f);
  w.SetU32(p + "expert_used_count", 6);
  w.SetU32(p + "expert_count", 64);
  w.SetU32(p + "leading_dense_block_count", 1);
  w.SetU32(p + "vocab_size", 102400);
  w.SetU32(p + "attention.kv_lora_rank", 512);
  w.SetU32(p + "attention.key_length", 576);
  w.SetU32(p + "attention.value_length", 512);
  w.SetU32(p + "attention.key_length_mla", 192);
  w.SetU32(p + "attention.value_length_mla", 128);
  w.SetU32(p + "expert_feed_forward_length", 1408);
  w.SetU32(p + "expert_shared_count", 2);
  w.SetF32(p + "expert_weights_scale", 1.0f);
  w.SetU32(p + "rope.dimension_count", 64);
  w.SetString(p + "rope.scaling.type", "yarn");
  w.SetF32(p + "rope.scaling.factor", 40);
  w.SetU32(p + "rope.scaling.original_context_length", 4096);
  w.SetF32(p + "rope.scaling.yarn_log_multiplier", 0.0707f);
  return w;
}

TEST(DeepseekGguf, V2LiteKeysMapToTheHfConfig) {
  auto c = ConfigOf(V2LiteMetadata(), "v2lite_keys");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->arch, "deepseek_v2");
  EXPECT_EQ(c->num_layers, 27);
  EXPECT_EQ(c->num_heads, 16);
  EXPECT_EQ(c->num_kv_heads, 16);  // not the converter's MQA head_count_kv = 1
  EXPECT_EQ(c->head_dim, 192);
  EXPECT_EQ(c->rope_dim, 64);
  EXPECT_EQ(c->mla.q_lora_rank, 0);
  EXPECT_EQ(c->mla.kv_lora_rank, 512);
  EXPECT_EQ(c->mla.qk_nope_head_dim, 128);
  EXPECT_EQ(c->mla.qk_rope_head_dim, 64);
  EXPECT_EQ(c->mla.v_head_dim, 128);
  EXPECT_EQ(c->cache_k_dim(), 576);
  EXPECT_EQ(c->cache_v_dim(), 0);
  EXPECT_EQ(c->moe.num_experts, 64);
  EXPECT_EQ(c->moe.experts_per_token, 6);
  EXPECT_EQ(c->moe.expert_ffn, 1408);
  EXPECT_EQ(c->moe.shared_ffn, 2 * 1408);
  EXPECT_FALSE(c->moe.sigmoid_scoring);  // no expert_gating_func: softmax (older V2 files)
  EXPECT_FALSE(c->moe.norm_topk_prob);
  EXPECT_FALSE(c->moe.score_correction_bias);
  EXPECT_DOUBLE_EQ(c->moe.routed_scaling_factor, 1.0);
  EXPECT_EQ(c->moe.n_group, 1);
  ASSERT_EQ(c->moe.sparse_layers.size(), 27u);
  EXPECT_FALSE(c->moe.sparse_layers[0]);
  for (size_t l = 1; l < 27; ++l) EXPECT_TRUE(c->moe.sparse_layers[l]) << l;
  EXPECT_EQ(c->rope_scaling.type, "yarn");
  EXPECT_DOUBLE_EQ(c->rope_scaling.factor, 40);
  EXPECT_EQ(c->rope_scaling.original_max_position, 4096);
  EXPECT_NEAR(c->yarn.mscale_all_dim, 0.707, 1e-6);
  EXPECT_NEAR(c->yarn.mscale, 0.707, 1e-6);
  EXPECT_DOUBLE_EQ(c->yarn.beta_fast, 32);
  EXPECT_DOUBLE_EQ(c->yarn.beta_slow, 1);
}

TEST(DeepseekGguf, V3RoutingKeysAndBiasTensor) {
  GgufWriter w = V2LiteMetadata();
  const std::string p = "deepseek2.";
  w.SetU32(p + "block_count", 5);  // 4 decoder layers + 1 MTP layer
  w.SetU32(p + "nextn_predict_layers", 1);
  w.SetU32(p + "expert_count", 8);
  w.SetU32(p + "expert_used_count", 2);
  w.SetU32(p + "leading_dense_block_count", 3);
  w.SetU32(p + "attention.q_lora_rank", 1536);
  w.SetU32(p + "expert_gating_func", 2);
  w.SetBool(p + "expert_weights_norm", true);
  w.SetF32(p + "expert_weights_scale", 2.5f);
  w.SetU32(p + "expert_group_count", 4);
  w.SetU32(p + "expert_group_used_count", 2);
  w.AddTensor("blk.3.exp_probs_b.bias", DType::kF32, {8}, std::vector<uint8_t>(8 * sizeof(float)));
  auto c = ConfigOf(w, "v3_keys");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->arch, "deepseek_v3");
  EXPECT_EQ(c->num_layers, 4);
  EXPECT_EQ(c->num_nextn_predict_layers, 1);
  EXPECT_EQ(c->mla.q_lora_rank, 1536);
  EXPECT_TRUE(c->moe.sigmoid_scoring);
  EXPECT_TRUE(c->moe.norm_topk_prob);
  EXPECT_TRUE(c->moe.score_correction_bias);
  EXPECT_NEAR(c->moe.routed_scaling_factor, 2.5, 1e-6);
  EXPECT_EQ(c->moe.n_group, 4);
  EXPECT_EQ(c->moe.topk_group, 2);
  EXPECT_EQ(c->moe.sparse_layers, (std::vector<bool>{false, false, false, true}));
}

TEST(DeepseekGguf, LegacyHeadDimsWithoutMlaKeys) {
  const std::string p = "deepseek2.";
  // Legacy files: no *_mla keys, key/value_length are the per-head dims.
  GgufWriter legacy = V2LiteMetadata();
  legacy.SetU32(p + "attention.key_length", 192);
  legacy.SetU32(p + "attention.value_length", 128);
  // There is no key removal in GgufWriter: rebuild without the *_mla keys.
  GgufWriter rebuilt;
  const std::string keys_path = TempPath("legacy_src.gguf");
  ASSERT_TRUE(legacy.Write(keys_path).ok());
  auto src = GgufFile::Open(keys_path);
  ASSERT_TRUE(src.ok());
  for (const auto& [key, value] : (*src)->metadata()) {
    if (key.find("_mla") != std::string::npos) continue;
    if (value.type == GgufType::kString) rebuilt.SetString(key, std::get<std::string>(value.value));
    if (value.type == GgufType::kUint32) rebuilt.SetU32(key, static_cast<uint32_t>(*(*src)->GetInt(key)));
    if (value.type == GgufType::kFloat32) {
      rebuilt.SetF32(key, static_cast<float>(std::get<double>(value.value)));
    }
  }
  auto c = ConfigOf(rebuilt, "legacy_keys");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->head_dim, 192);
  EXPECT_EQ(c->mla.qk_nope_head_dim, 128);
  EXPECT_EQ(c->mla.v_head_dim, 128);
}

TEST(DeepseekGguf, BadKeysNameTheProblem) {
  const std::string p = "deepseek2.";
  GgufWriter gating = V2LiteMetadata();
  gating.SetU32(p + "expert_gating_func", 7);
  auto c = ConfigOf(gating, "bad_gating");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("expert_gating_func"), std::string::npos) << c.status().ToString();

  GgufWriter rope = V2LiteMetadata();
  rope.SetString(p + "rope.scaling.type", "longrope");
  c = ConfigOf(rope, "bad_rope");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("longrope"), std::string::npos) << c.status().ToString();

  GgufWriter dims = V2LiteMetadata();
  dims.SetU32(p + "attention.key_length_mla", 64);  // == rope dims: no nope part
  c = ConfigOf(dims, "bad_dims");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("MLA dims"), std::string::npos) << c.status().ToString();
}

TEST(DeepseekGguf, SplitKvBIsTheConvertersLayout) {
  // heads 2, nope 2, v 1, lora 3: kv_b rows per head = [k0, k1, v0].
  std::vector<float> kv_b(2 * 3 * 3);
  for (size_t i = 0; i < kv_b.size(); ++i) kv_b[i] = static_cast<float>(i);
  const std::vector<float> k = SplitMlaKvB(kv_b, 2, 2, 1, 3, true);
  const std::vector<float> v = SplitMlaKvB(kv_b, 2, 2, 1, 3, false);
  // attn_k_b[h][r][d] = kv_b[h * 9 + d * 3 + r]
  EXPECT_EQ(k, (std::vector<float>{0, 3, 1, 4, 2, 5, 9, 12, 10, 13, 11, 14}));
  EXPECT_EQ(v, (std::vector<float>{6, 7, 8, 15, 16, 17}));
}

std::vector<uint8_t> F32Bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<float> AsF32(const TensorView& t) {
  std::vector<float> out(static_cast<size_t>(t.rows() * t.cols()));
  const int64_t row_bytes = RowBytes(t.dtype, t.cols());
  for (int64_t r = 0; r < t.rows(); ++r) {
    DequantizeRow(t.dtype, static_cast<const uint8_t*>(t.data) + r * row_bytes,
                  &out[static_cast<size_t>(r * t.cols())], t.cols());
  }
  return out;
}

// Rewrites a split-form synth file as a legacy one: attn_kv_b rebuilt from
// attn_k_b / attn_v_b, the *_mla keys dropped, key/value_length = head dims.
void WriteLegacyCopy(const std::string& in, const std::string& out) {
  auto src = GgufFile::Open(in);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  const GgufFile& g = **src;
  auto c = ModelConfigFromGguf(g);
  ASSERT_TRUE(c.ok());
  const MlaConfig& m = c->mla;
  GgufWriter w;
  for (const auto& [key, value] : g.metadata()) {
    if (key.find("_mla") != std::string::npos) continue;
    switch (value.type) {
      case GgufType::kString:
        w.SetString(key, std::get<std::string>(value.value));
        break;
      case GgufType::kUint32:
        w.SetU32(key, static_cast<uint32_t>(*g.GetInt(key)));
        break;
      case GgufType::kInt32:
        w.SetI32(key, static_cast<int32_t>(*g.GetInt(key)));
        break;
      case GgufType::kFloat32:
        w.SetF32(key, static_cast<float>(std::get<double>(value.value)));
        break;
      case GgufType::kBool:
        w.SetBool(key, std::get<bool>(value.value));
        break;
      case GgufType::kArray:
        if (value.array_type == GgufType::kString) {
          w.SetStringArray(key, std::get<std::vector<std::string>>(value.value));
        } else {
          auto values = g.GetIntArray(key);
          ASSERT_TRUE(values.ok()) << key;
          std::vector<int32_t> ints;
          for (int64_t x : *values) ints.push_back(static_cast<int32_t>(x));
          w.SetI32Array(key, ints);
        }
        break;
      default:
        FAIL() << "unexpected metadata type for " << key;
    }
  }
  w.SetU32("deepseek2.attention.key_length", static_cast<uint32_t>(m.qk_nope_head_dim + m.qk_rope_head_dim));
  w.SetU32("deepseek2.attention.value_length", static_cast<uint32_t>(m.v_head_dim));
  const int64_t nh = c->num_heads, nope = m.qk_nope_head_dim, vd = m.v_head_dim, lora = m.kv_lora_rank;
  for (const TensorView& t : g.tensors()) {
    const std::string& name = t.name;
    if (name.size() > 15 && name.compare(name.size() - 15, 15, "attn_v_b.weight") == 0) continue;
    if (name.size() > 15 && name.compare(name.size() - 15, 15, "attn_k_b.weight") == 0) {
      const std::string prefix = name.substr(0, name.size() - 15);
      const std::vector<float> k = AsF32(t), v = AsF32(*g.FindTensor(prefix + "attn_v_b.weight"));
      std::vector<float> kv_b(static_cast<size_t>(nh * (nope + vd) * lora));
      for (int64_t h = 0; h < nh; ++h) {
        for (int64_t d = 0; d < nope; ++d) {
          for (int64_t r = 0; r < lora; ++r) {
            kv_b[static_cast<size_t>((h * (nope + vd) + d) * lora + r)] =
                k[static_cast<size_t>((h * lora + r) * nope + d)];
          }
        }
        for (int64_t d = 0; d < vd * lora; ++d) {
          kv_b[static_cast<size_t>((h * (nope + vd) + nope) * lora + d)] =
              v[static_cast<size_t>(h * vd * lora + d)];
        }
      }
      w.AddTensor(prefix + "attn_kv_b.weight", DType::kF32, {nh * (nope + vd), lora}, F32Bytes(kv_b));
      continue;
    }
    const uint8_t* data = static_cast<const uint8_t*>(t.data);
    w.AddTensor(name, t.dtype, t.shape, std::vector<uint8_t>(data, data + t.nbytes));
  }
  ASSERT_TRUE(w.Write(out).ok());
}

std::vector<int32_t> Prompt(int n, int vocab) {
  std::vector<int32_t> ids;
  for (int i = 0; i < n; ++i) ids.push_back(static_cast<int32_t>((i * 197 + 3) % vocab));
  return ids;
}

std::vector<float> Logits(const std::string& path, const std::vector<int32_t>& ids) {
  LoadOptions o;
  o.num_threads = 2;
  o.load_tokenizer = false;
  auto m = LoadModel(path, o);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return {};
  return testing::RunChunks(*m->model, ids, {static_cast<int64_t>(ids.size()) - 3, 3}, 8);
}

TEST(DeepseekGguf, LegacyKvBAndSplitFormsAreTheSameModel) {
  for (const char* arch : {"deepseek_v2", "deepseek_v3"}) {
    const std::string split = SynthGguf(arch, DType::kF32);
    const std::string legacy = TempPath(std::string(arch) + "_legacy.gguf");
    WriteLegacyCopy(split, legacy);
    const std::vector<int32_t> ids = Prompt(40, 512);
    const std::vector<float> a = Logits(split, ids), b = Logits(legacy, ids);
    ASSERT_EQ(a.size(), b.size());
    ASSERT_FALSE(a.empty());
    double max_diff = 0, max_abs = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(a[i] - b[i])));
      max_abs = std::max(max_abs, static_cast<double>(std::fabs(b[i])));
    }
    // Same f32 values, same summation order: identical.
    EXPECT_EQ(max_diff, 0.0) << arch << " (max |logit| " << max_abs << ")";
  }
}

// The MTP (next-n) block of the V3 synth: GGUF (blk.3.nextn.*, block_count
// 4 with nextn_predict_layers 1) and HF (model.layers.3.*) copies give the
// same draft logits for the same base hidden states.
TEST(DeepseekGguf, MtpDraftOfTheGgufCopyEqualsTheHfCopy) {
  std::vector<std::vector<float>> outs;
  for (SynthFormat format : {SynthFormat::kGguf, SynthFormat::kHf}) {
    SynthOptions o;
    o.arch = "deepseek_v3";
    o.seed = 31;
    o.format = format;
    o.out = TempPath(format == SynthFormat::kGguf ? "mtp.gguf" : "mtp_hf");
    ASSERT_TRUE(WriteSynthModel(o).ok());
    LoadOptions lo;
    lo.num_threads = 2;
    lo.load_tokenizer = false;
    auto m = LoadModel(o.out, lo);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    const ModelConfig& c = m->model->config();
    ASSERT_EQ(c.num_layers, 3);
    ASSERT_EQ(c.num_nextn_predict_layers, 1);
    const std::vector<int32_t> ids = Prompt(12, 512);
    // Base hidden states h_p (after the final norm) for positions 0..10.
    KvCache kv(c, 8, 4);
    ForwardBatch base;
    base.seqs.push_back(SequenceChunk{ids, 0, {3, 1, 0, 2}, SequenceChunk::Logits::kAll});
    std::vector<float> logits(ids.size() * static_cast<size_t>(c.vocab_size));
    std::vector<float> hidden(ids.size() * static_cast<size_t>(c.hidden_size));
    ASSERT_TRUE(m->model->ForwardWithHidden(base, kv, logits.data(), hidden.data()).ok());
    auto draft = MtpDraft::Create(c, m->weights, 0, 2);
    ASSERT_TRUE(draft.ok()) << draft.status().ToString();
    auto mtp_kv = (*draft)->NewKvCache(8, 4);
    const std::vector<int32_t> next(ids.begin() + 1, ids.end());  // x_{p+1} for p = 0..10
    ForwardBatch chunk;
    chunk.seqs.push_back(SequenceChunk{next, 0, {2, 0, 1}, SequenceChunk::Logits::kAll});
    std::vector<float> out(next.size() * static_cast<size_t>(c.vocab_size));
    ASSERT_TRUE((*draft)->Forward(chunk, hidden.data(), *mtp_kv, out.data(), nullptr).ok());
    outs.push_back(out);
  }
  ASSERT_EQ(outs[0].size(), outs[1].size());
  for (size_t i = 0; i < outs[0].size(); ++i) ASSERT_EQ(outs[0][i], outs[1][i]) << i;
}

TEST(DeepseekGguf, QuantizedSynthLoadsAndStaysClose) {
  for (DType dt : {DType::kQ8_0, DType::kQ4_0}) {
    const std::string f32 = SynthGguf("deepseek_v3", DType::kF32), q = SynthGguf("deepseek_v3", dt);
    auto gguf = GgufFile::Open(q);
    ASSERT_TRUE(gguf.ok());
    // q_b has rows of q_lora_rank 48 and k_b rows of qk_nope 16: not whole
    // blocks of 32, so they fall back to f16; whole-block matrices quantize.
    EXPECT_EQ((*gguf)->FindTensor("blk.0.attn_q_b.weight")->dtype, DType::kF16);
    EXPECT_EQ((*gguf)->FindTensor("blk.0.attn_k_b.weight")->dtype, DType::kF16);
    EXPECT_EQ((*gguf)->FindTensor("blk.1.ffn_gate_exps.weight")->dtype, dt);
    EXPECT_EQ((*gguf)->FindTensor("blk.0.attn_kv_a_norm.weight")->dtype, DType::kF32);
    const std::vector<int32_t> ids = Prompt(24, 512);
    const std::vector<float> a = Logits(f32, ids), b = Logits(q, ids);
    ASSERT_EQ(a.size(), b.size());
    // Mean over positions of |delta log p| of the f32 model's top token:
    // quantization noise (weights and the int8 activations of the SIMD dot
    // products) moves it by ~0.06 nats in q8_0 and ~0.6 in q4_0 on this tiny
    // model (a dense tiny llama: ~0.02 / ~0.2; more quantized matrices and
    // routing flips here); a mis-bound tensor moves it by whole nats.
    const int64_t vocab = 512, n = static_cast<int64_t>(ids.size());
    double total = 0;
    for (int64_t t = 0; t < n; ++t) {
      const float* x = &a[static_cast<size_t>(t * vocab)];
      const float* y = &b[static_cast<size_t>(t * vocab)];
      const int32_t top = testing::ArgMax(x, vocab);
      auto log_prob = [vocab](const float* l, int32_t id) {
        double mx = l[0], sum = 0;
        for (int64_t i = 1; i < vocab; ++i) mx = std::max(mx, static_cast<double>(l[i]));
        for (int64_t i = 0; i < vocab; ++i) sum += std::exp(l[i] - mx);
        return l[id] - mx - std::log(sum);
      };
      total += std::fabs(log_prob(x, top) - log_prob(y, top));
    }
    const double mean = total / static_cast<double>(n);
    EXPECT_LT(mean, dt == DType::kQ8_0 ? 0.15 : 1.2) << DTypeName(dt);
    std::printf("%s: mean |delta log p(top)| = %.4f\n", DTypeName(dt), mean);
  }
}

}  // namespace
}  // namespace deepinfer
