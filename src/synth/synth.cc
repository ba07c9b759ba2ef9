// Synthetic checkpoints: presets, the weight generator and the GGUF writer.
#include "synth/synth.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <thread>
#include <vector>

#include "core/check.h"
#include "io/gguf.h"
#include "model/deepseek_gguf.h"
#include "model/registry.h"
#include "synth/imported_tokenizer.h"
#include "synth/internal.h"
#include "synth/vocab.h"
#include "tensor/dequant.h"

namespace deepinfer {
namespace {

using synth_internal::SynthTensor;

// SplitMix64's finalizer: a bijective 64-bit mix with good avalanche, used as
// a counter-based generator (hash of key + counter), so values never depend
// on generation order.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t StreamKey(uint64_t seed, const std::string& stream) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a over the name
  for (unsigned char c : stream) h = (h ^ c) * 0x100000001b3ull;
  return Mix(seed ^ Mix(h));
}

float NormalFromKey(uint64_t key, uint64_t index) {
  // Box-Muller from two 53-bit uniforms; u1 in (0, 1] keeps log finite.
  const double u1 = (static_cast<double>(Mix(key + 2 * index) >> 11) + 1.0) * 0x1p-53;
  const double u2 = static_cast<double>(Mix(key + 2 * index + 1) >> 11) * 0x1p-53;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2));
}

// llama.cpp's LLAMA_FTYPE_* for general.file_type.
uint32_t FileType(DType t) {
  switch (t) {
    case DType::kF16:
      return 1;
    case DType::kQ4_0:
      return 2;
    case DType::kQ8_0:
      return 7;
    case DType::kBF16:
      return 32;
    default:
      return 0;  // all f32
  }
}

// Per-dimension divisors of the rope frequencies for llama3 scaling, as
// llama.cpp's converter stores them in `rope_freqs.weight` ([head_dim/2]):
// 1 for short wavelengths, `factor` for long ones, a smooth blend between.
std::vector<float> Llama3RopeFactors(const SynthSpec& s) {
  const auto& r = *s.rope_llama3;
  const double low_wavelen = r.original_context / r.low_freq_factor;
  const double high_wavelen = r.original_context / r.high_freq_factor;
  std::vector<float> out;
  for (int64_t i = 0; i < s.head_dim / 2; ++i) {
    const double freq =
        std::pow(s.rope_theta, -2.0 * static_cast<double>(i) / static_cast<double>(s.head_dim));
    const double wavelen = 2 * M_PI / freq;
    double f;
    if (wavelen < high_wavelen) {
      f = 1;
    } else if (wavelen > low_wavelen) {
      f = r.factor;
    } else {
      const double smooth =
          (r.original_context / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
      f = 1 / ((1 - smooth) / r.factor + smooth);
    }
    out.push_back(static_cast<float>(f));
  }
  return out;
}

// llama.cpp's architecture name, from the registry; Mistral is written as
// llama, as llama.cpp's converter does for Mistral checkpoints.
std::string GgufArch(const SynthSpec& s) {
  if (s.arch == "mistral") return "llama";
  const ArchitectureSpec* spec = FindArchitectureByName(s.arch);
  DI_CHECK_MSG(spec != nullptr, "synth: an unregistered architecture reached the GGUF writer");
  return spec->gguf_name;
}

// The deepseek2 keys (model/deepseek_gguf.h) of a DeepSeek synth model.
void SetDeepseek2GgufMetadata(const SynthSpec& s, GgufWriter& w) {
  const std::string p = GgufArch(s) + ".";
  const bool v3 = s.arch == "deepseek_v3";
  // As convert_hf_to_gguf.py writes it: MQA over the latent cache, the split
  // k/v up-projection (attn_k_b / attn_v_b), MTP blocks counted in block_count.
  w.SetU32(p + "block_count", static_cast<uint32_t>(s.layers + s.mtp_layers));
  if (s.mtp_layers > 0) w.SetU32(p + "nextn_predict_layers", static_cast<uint32_t>(s.mtp_layers));
  w.SetU32(p + "attention.head_count_kv", 1);
  w.SetU32(p + "attention.key_length", static_cast<uint32_t>(s.kv_lora + s.qk_rope));
  w.SetU32(p + "attention.value_length", static_cast<uint32_t>(s.kv_lora));
  w.SetU32(p + "attention.key_length_mla", static_cast<uint32_t>(s.qk_nope + s.qk_rope));
  w.SetU32(p + "attention.value_length_mla", static_cast<uint32_t>(s.v_head));
  if (s.q_lora > 0) w.SetU32(p + "attention.q_lora_rank", static_cast<uint32_t>(s.q_lora));
  w.SetU32(p + "attention.kv_lora_rank", static_cast<uint32_t>(s.kv_lora));
  w.SetU32(p + "rope.dimension_count", static_cast<uint32_t>(s.qk_rope));
  w.SetU32(p + "leading_dense_block_count", static_cast<uint32_t>(s.leading_dense_layers));
  w.SetU32(p + "expert_count", static_cast<uint32_t>(s.experts));
  w.SetU32(p + "expert_used_count", static_cast<uint32_t>(s.experts_per_token));
  w.SetU32(p + "expert_feed_forward_length", static_cast<uint32_t>(s.expert_ffn));
  w.SetU32(p + "expert_shared_count", static_cast<uint32_t>(s.shared_experts));
  // HF DeepSeek-V2 renormalizes (norm_topk_prob, k > 1) *instead of* scaling;
  // V3 renormalizes and scales. GGUF says both explicitly.
  const bool norm = v3 ? s.norm_topk_prob : s.norm_topk_prob && s.experts_per_token > 1;
  w.SetBool(p + "expert_weights_norm", norm);
  w.SetF32(p + "expert_weights_scale", static_cast<float>(norm && !v3 ? 1.0 : s.routed_scaling));
  const int64_t gating = s.sigmoid_scoring ? kGgufGatingSigmoid : kGgufGatingSoftmax;
  w.SetU32(p + "expert_gating_func", static_cast<uint32_t>(gating));
  w.SetU32(p + "expert_group_count", static_cast<uint32_t>(s.n_group));
  w.SetU32(p + "expert_group_used_count", static_cast<uint32_t>(s.topk_group));
  if (s.yarn) {
    w.SetString(p + "rope.scaling.type", "yarn");
    w.SetF32(p + "rope.scaling.factor", static_cast<float>(s.yarn->factor));
    w.SetU32(p + "rope.scaling.original_context_length", static_cast<uint32_t>(s.yarn->original_context));
    w.SetF32(p + "rope.scaling.yarn_log_multiplier", static_cast<float>(0.1 * s.yarn->mscale_all_dim));
    w.SetF32(p + "rope.scaling.yarn_beta_fast", 32.0f);
    w.SetF32(p + "rope.scaling.yarn_beta_slow", 1.0f);
  }
}

Status SetGgufMetadata(const SynthSpec& s, const SynthOptions& o,
                       const synth_internal::ImportedTokenizer* imported, GgufWriter& w) {
  const std::string a = GgufArch(s);
  w.SetString("general.architecture", a);
  w.SetString("general.name",
              "deepinfer-synth-" + s.arch + "-" + o.preset + "-seed" + std::to_string(o.seed));
  w.SetU32("general.file_type", FileType(o.dtype));
  w.SetU32(a + ".context_length", static_cast<uint32_t>(s.context));
  w.SetU32(a + ".embedding_length", static_cast<uint32_t>(s.hidden));
  w.SetU32(a + ".block_count", static_cast<uint32_t>(s.layers + s.mtp_layers));
  if (s.mtp_layers > 0) w.SetU32(a + ".nextn_predict_layers", static_cast<uint32_t>(s.mtp_layers));
  w.SetU32(a + ".feed_forward_length", static_cast<uint32_t>(s.ffn));
  w.SetU32(a + ".attention.head_count", static_cast<uint32_t>(s.heads));
  w.SetU32(a + ".attention.head_count_kv", static_cast<uint32_t>(s.kv_heads));
  w.SetU32(a + ".attention.key_length", static_cast<uint32_t>(s.head_dim));
  w.SetU32(a + ".attention.value_length", static_cast<uint32_t>(s.head_dim));
  w.SetF32(a + ".attention.layer_norm_rms_epsilon", static_cast<float>(s.rms_eps));
  w.SetF32(a + ".rope.freq_base", static_cast<float>(s.rope_theta));
  w.SetU32(a + ".rope.dimension_count", static_cast<uint32_t>(s.head_dim));
  w.SetU32(a + ".vocab_size", static_cast<uint32_t>(s.vocab));
  if (s.experts > 0) {
    w.SetU32(a + ".expert_count", static_cast<uint32_t>(s.experts));
    w.SetU32(a + ".expert_used_count", static_cast<uint32_t>(s.experts_per_token));
    w.SetU32(a + ".expert_feed_forward_length", static_cast<uint32_t>(s.expert_ffn));
    if (s.shared_ffn > 0) {
      w.SetU32(a + ".expert_shared_feed_forward_length", static_cast<uint32_t>(s.shared_ffn));
    }
    if (s.leading_dense_layers > 0) {
      w.SetU32(a + ".leading_dense_block_count", static_cast<uint32_t>(s.leading_dense_layers));
    }
    w.SetBool(a + ".expert_weights_norm", s.norm_topk_prob);
  }
  if (s.gemma) {
    // As llama.cpp's converter writes Gemma: one window (the layer pattern is
    // the architecture's), the soft-caps; plus deepinfer's readings of the
    // attention scale and Gemma-3's local RoPE base (llama.cpp derives both).
    w.SetU32(a + ".attention.sliding_window", static_cast<uint32_t>(s.sliding_window));
    w.SetF32(a + ".attention.scale", static_cast<float>(1.0 / std::sqrt(s.query_pre_attn_scalar)));
    if (s.attn_softcap > 0) w.SetF32(a + ".attn_logit_softcapping", static_cast<float>(s.attn_softcap));
    if (s.final_softcap > 0) w.SetF32(a + ".final_logit_softcapping", static_cast<float>(s.final_softcap));
    if (s.rope_local_theta > 0) w.SetF32(a + ".rope.freq_base_swa", static_cast<float>(s.rope_local_theta));
    if (s.rope_linear_factor > 0) {
      w.SetString(a + ".rope.scaling.type", "linear");
      w.SetF32(a + ".rope.scaling.factor", static_cast<float>(s.rope_linear_factor));
    }
  } else if (!s.sliding_layers.empty()) {
    // One window per layer, 0 = full attention (llama.cpp's `llama` arch
    // ignores this key; deepinfer reads it).
    std::vector<int32_t> windows;
    for (bool sl : s.sliding_layers) windows.push_back(sl ? static_cast<int32_t>(s.sliding_window) : 0);
    w.SetI32Array(a + ".attention.sliding_window", windows);
  }
  if (s.kv_lora > 0) SetDeepseek2GgufMetadata(s, w);  // MLA dims, routing, YaRN, MTP
  if (imported != nullptr) return synth_internal::SetImportedTokenizerGguf(*imported, w);
  const SynthVocab v = BuildSynthVocab(s.vocab);
  w.SetString("tokenizer.ggml.model", "gpt2");
  w.SetString("tokenizer.ggml.pre", "gpt-2");
  w.SetStringArray("tokenizer.ggml.tokens", v.tokens);
  w.SetI32Array("tokenizer.ggml.token_type", v.token_types);
  w.SetStringArray("tokenizer.ggml.merges", v.merges);
  w.SetU32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(v.bos_id));
  w.SetU32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(v.eos_id));
  w.SetU32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(v.unk_id));
  w.SetBool("tokenizer.ggml.add_bos_token", true);
  w.SetBool("tokenizer.ggml.add_eos_token", false);
  return Status::Ok();
}

// GGUF keeps 1-D tensors (norms, biases) in f32, as llama.cpp's converter
// does; every 2-D weight, embeddings and output included, takes `dtype`.
// Rows that are not a whole number of quantization blocks (small MLA dims)
// fall back to f16, as llama.cpp's quantizer falls back to another type.
DType GgufDType(const SynthTensor& t, DType dtype) {
  if (t.shape.size() == 1) return DType::kF32;
  const std::vector<int64_t>& shape = t.gguf_shape.empty() ? t.shape : t.gguf_shape;
  return RowBytes(dtype, shape.back()) < 0 ? DType::kF16 : dtype;
}

Status WriteSynthGguf(const SynthSpec& spec, const SynthOptions& o,
                      const synth_internal::ImportedTokenizer* imported) {
  GgufWriter w;
  DI_RETURN_IF_ERROR(SetGgufMetadata(spec, o, imported, w));
  const std::vector<SynthTensor> tensors = synth_internal::SynthTensors(spec);
  const size_t n = tensors.size() + (spec.rope_llama3 ? 1 : 0);
  size_t i = 0;
  if (spec.rope_llama3) {
    const std::vector<float> factors = Llama3RopeFactors(spec);
    const std::vector<int64_t> shape = {spec.head_dim / 2};
    w.AddTensor("rope_freqs.weight", DType::kF32, shape, [&i, &o, n, factors, shape]() {
      synth_internal::ReportProgress(o.progress, ++i, n, "rope_freqs.weight");
      return synth_internal::EncodeRows(factors, DType::kF32, shape);
    });
  }
  for (const SynthTensor& t : tensors) {
    const std::vector<int64_t>& shape = t.gguf_shape.empty() ? t.shape : t.gguf_shape;
    const DType dt = shape.size() == 1 ? DType::kF32 : GgufDType(t, o.dtype);
    w.AddTensor(
        t.gguf_name, dt, shape, [&t, &spec, &o, &i, n, dt, shape]() -> StatusOr<std::vector<uint8_t>> {
          synth_internal::ReportProgress(o.progress, ++i, n, t.gguf_name);
          std::vector<float> v;
          if (t.hf_parts.empty()) {
            v = synth_internal::SynthValues(t, o.seed);
          } else {  // stacked experts: the HF parts one after another
            for (size_t p = 0; p < t.hf_parts.size(); ++p) {
              const std::vector<float> part =
                  synth_internal::SynthValues(synth_internal::StackedPart(t, p), o.seed);
              v.insert(v.end(), part.begin(), part.end());
            }
          }
          if (t.init == SynthTensor::Init::kGemmaNorm) {
            for (float& x : v) x += 1.0f;  // llama.cpp's converter stores Gemma's 1 + w
          }
          if (t.permute == SynthTensor::Permute::kMlaKB || t.permute == SynthTensor::Permute::kMlaVB) {
            v = SplitMlaKvB(v, spec.heads, spec.qk_nope, spec.v_head, spec.kv_lora,
                            t.permute == SynthTensor::Permute::kMlaKB);
          } else if (t.permute != SynthTensor::Permute::kNone) {
            const int64_t heads = t.permute == SynthTensor::Permute::kQ ? spec.heads : spec.kv_heads;
            v = PermuteRowsForGgufRope(v, heads, spec.head_dim, t.shape.back());
          }
          return synth_internal::EncodeRows(v, dt, shape);
        });
  }
  return w.Write(o.out);
}

}  // namespace

float SynthNormal(uint64_t seed, const std::string& stream, uint64_t index) {
  return NormalFromKey(StreamKey(seed, stream), index);
}

std::vector<float> PermuteRowsForGgufRope(const std::vector<float>& w, int64_t heads, int64_t head_dim,
                                          int64_t cols) {
  std::vector<float> out(w.size());
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      for (int64_t s = 0; s < 2; ++s) {
        const float* src = &w[static_cast<size_t>((h * head_dim + s * half + i) * cols)];
        std::copy(src, src + cols, &out[static_cast<size_t>((h * head_dim + 2 * i + s) * cols)]);
      }
    }
  }
  return out;
}

StatusOr<SynthSpec> ResolveSynthSpec(const std::string& arch, const std::string& preset) {
  SynthSpec s;
  const bool deepseek = arch == "deepseek_v2" || arch == "deepseek_v3";
  const bool moe = arch == "mixtral" || arch == "qwen2_moe" || arch == "qwen3_moe" || deepseek;
  const bool gemma = arch == "gemma2" || arch == "gemma3";
  if (arch != "llama" && arch != "mistral" && arch != "qwen2" && arch != "qwen3" && !moe && !gemma) {
    return InvalidArgument("--arch: unknown architecture '" + arch +
                           "' (llama, mistral, qwen2, qwen3, mixtral, qwen2_moe, qwen3_moe, deepseek_v2, "
                           "deepseek_v3, gemma2, gemma3)");
  }
  if (gemma && preset != "tiny") {
    return InvalidArgument("--preset: the " + arch + " synth has only the 'tiny' preset");
  }
  const bool deepseek_big = deepseek && (preset == "v2-lite" || preset == "v3-mini");
  const bool swa_bench = preset == "swa-bench";
  if (swa_bench && arch != "qwen3" && arch != "deepseek_v3") {
    return InvalidArgument("--preset swa-bench needs --arch qwen3 or deepseek_v3");
  }
  if (deepseek && preset != "tiny" && preset != "tiny-hybrid-swa" && !deepseek_big && !swa_bench) {
    return InvalidArgument("--preset: the " + arch +
                           " synth has the presets tiny, tiny-hybrid-swa, swa-bench (v3), v2-lite, v3-mini");
  }
  const bool qwen3_moe_a3b = arch == "qwen3_moe" && preset == "qwen3-moe-a3b";
  if (moe && !deepseek && preset != "tiny" && !qwen3_moe_a3b) {
    return InvalidArgument("--preset: the " + arch + " synth has only the 'tiny' preset" +
                           (arch == "qwen3_moe" ? std::string(" and qwen3-moe-a3b") : std::string()));
  }
  s.arch = arch;
  if (deepseek_big || qwen3_moe_a3b) {
    // Shapes for benchmarks; dims are set in the arch's branch below.
  } else if (swa_bench) {
    // Hybrid sliding-window benchmark shape (docs/kv-cache.md): layers 3 and
    // 7 attend fully, the other 6 slide over 128 positions.
    s.hidden = 512, s.layers = 8, s.heads = 8, s.kv_heads = 4, s.head_dim = 64, s.ffn = 1536;
    s.vocab = 32000, s.context = 8192;
  } else if (preset == "tiny" || preset == "tiny-rope-llama3" || preset == "tiny-hybrid-swa") {
    s.hidden = 64, s.layers = 3, s.heads = 4, s.kv_heads = 2, s.head_dim = 16, s.ffn = 160;
    s.vocab = 512, s.context = 512;
    if (preset == "tiny-rope-llama3") s.rope_llama3 = SynthSpec::RopeLlama3{};
  } else if (preset == "llama-110m") {
    s.hidden = 768, s.layers = 12, s.heads = 12, s.kv_heads = 12, s.head_dim = 64, s.ffn = 2048;
    s.vocab = 32000, s.context = 1024;
  } else if (preset == "tinyllama-1.1b") {
    s.hidden = 2048, s.layers = 22, s.heads = 32, s.kv_heads = 4, s.head_dim = 64, s.ffn = 5632;
    s.vocab = 32000, s.context = 2048;
  } else {
    return InvalidArgument(
        "--preset: unknown preset '" + preset +
        "' (tiny, tiny-rope-llama3, tiny-hybrid-swa, swa-bench, llama-110m, tinyllama-1.1b)");
  }
  if (arch == "mistral") {
    // Every layer slides, as transformers' MistralConfig has one window for
    // all layers (it has no layer_types); small, so short prompts cross it.
    s.sliding_window = 16;
    s.sliding_layers.assign(static_cast<size_t>(s.layers), true);
  } else if (arch == "qwen2") {
    s.qkv_bias = true, s.neox_rope = true, s.rope_theta = 1e6, s.rms_eps = 1e-6, s.tie_embeddings = true;
  } else if (arch == "qwen3") {
    s.qk_norm = true, s.neox_rope = true, s.rope_theta = 1e6, s.rms_eps = 1e-6, s.tie_embeddings = true;
    if (preset.rfind("tiny", 0) == 0) s.head_dim = 32;  // != hidden / heads on purpose
    if (swa_bench) s.tie_embeddings = false;
  } else if (arch == "mixtral") {
    // Mixtral renormalizes its top-2 weights; every layer is sparse.
    s.experts = 8, s.experts_per_token = 2, s.expert_ffn = 64, s.ffn = 64, s.norm_topk_prob = true;
    s.rope_theta = 1e6;
  } else if (arch == "qwen2_moe") {
    s.qkv_bias = true, s.neox_rope = true, s.rope_theta = 1e6, s.rms_eps = 1e-6;
    s.experts = 8, s.experts_per_token = 2, s.expert_ffn = 32, s.shared_ffn = 48, s.norm_topk_prob = false;
    s.leading_dense_layers = 1;  // HF: mlp_only_layers [0]
  } else if (arch == "qwen3_moe") {
    s.qk_norm = true, s.neox_rope = true, s.rope_theta = 1e6, s.rms_eps = 1e-6;
    s.experts = 8, s.experts_per_token = 3, s.expert_ffn = 32, s.norm_topk_prob = true;
    if (qwen3_moe_a3b) {
      // Qwen3-30B-A3B's layer shape (128 experts of 768, 8 per token, GQA
      // 32 / 4 heads of 128) with 12 of its 48 layers: 8.1B parameters, ~1B
      // active per token, a Q4_0 file of ~4.6 GB that fits this machine.
      s.hidden = 2048, s.layers = 12, s.heads = 32, s.kv_heads = 4, s.head_dim = 128, s.ffn = 6144;
      s.vocab = 151936, s.context = 4096;
      s.experts = 128, s.experts_per_token = 8, s.expert_ffn = 768;
    }
  } else if (deepseek) {
    const bool v3 = arch == "deepseek_v3";
    s.heads = 4, s.kv_heads = 4, s.ffn = 96, s.rms_eps = 1e-6;
    s.kv_lora = 32, s.qk_nope = 16, s.qk_rope = 8, s.v_head = 16, s.head_dim = 24;
    s.q_lora = v3 ? 48 : 0;
    s.experts = 8, s.experts_per_token = 2, s.expert_ffn = 32, s.shared_experts = 1;
    s.n_group = 4, s.topk_group = 2, s.leading_dense_layers = 1;
    s.sigmoid_scoring = v3, s.score_bias = v3, s.norm_topk_prob = v3;
    s.routed_scaling = v3 ? 2.5 : 1.5;
    if (v3) {
      s.mtp_layers = 1;
      s.yarn = SynthSpec::Yarn{};
    }
    if (preset == "v2-lite") {  // DeepSeek-V2-Lite's shape (15.7B parameters)
      s.hidden = 2048, s.layers = 27, s.heads = 16, s.kv_heads = 16, s.ffn = 10944, s.vocab = 102400;
      s.context = 4096, s.q_lora = 0, s.kv_lora = 512, s.qk_nope = 128, s.qk_rope = 64, s.v_head = 128;
      s.head_dim = 192, s.experts = 64, s.experts_per_token = 6, s.expert_ffn = 1408, s.shared_experts = 2;
      s.n_group = v3 ? 8 : 1, s.topk_group = v3 ? 4 : 1;
      s.yarn = SynthSpec::Yarn{40, 0.707, 0.707, 4096};
    } else if (preset == "v3-mini") {  // a small V3-like shape (~0.3B parameters)
      s.hidden = 1024, s.layers = 8, s.heads = 16, s.kv_heads = 16, s.ffn = 2816, s.vocab = 32000;
      s.context = 4096, s.q_lora = 384, s.kv_lora = 256, s.qk_nope = 64, s.qk_rope = 32, s.v_head = 64;
      s.head_dim = 96, s.experts = 32, s.experts_per_token = 4, s.expert_ffn = 256, s.shared_experts = 1;
      s.n_group = 4, s.topk_group = 2;
      s.yarn = SynthSpec::Yarn{4, 1, 1, 1024};
    } else if (swa_bench) {  // MLA with a 160-wide latent row (q8_0 KV fits: 5 blocks of 32)
      s.hidden = 512, s.layers = 8, s.heads = 8, s.kv_heads = 8, s.ffn = 1536, s.vocab = 32000;
      s.context = 8192, s.q_lora = 192, s.kv_lora = 128, s.qk_nope = 32, s.qk_rope = 32, s.v_head = 64;
      s.head_dim = 64, s.experts = 8, s.experts_per_token = 2, s.expert_ffn = 256, s.shared_experts = 1;
      s.n_group = 4, s.topk_group = 2;
      s.yarn = SynthSpec::Yarn{4, 1, 1, 2048};
    }
  }
  if (gemma) {
    const bool g3 = arch == "gemma3";
    s.gemma = true, s.neox_rope = true, s.tie_embeddings = true, s.rms_eps = 1e-6;
    s.head_dim = 32, s.query_pre_attn_scalar = 24, s.sliding_window = 16;
    if (g3) {
      s.layers = 6, s.qk_norm = true, s.rope_theta = 1e6, s.rope_local_theta = 10000,
      s.rope_linear_factor = 2;
      s.sliding_layers = {true, true, true, true, true, false};
    } else {
      s.layers = 4, s.attn_softcap = 2, s.final_softcap = 3;
      s.sliding_layers = {true, false, true, false};
    }
  }
  if (preset == "tiny-hybrid-swa") {
    // Hybrid attention as the seed's flagship model has it: sliding and full
    // layers interleaved. Only Qwen2/Qwen3 configs express a per-layer mix in
    // HF form (layer_types); Mistral slides every layer, Llama none. DeepSeek
    // reads layer_types as a deepinfer extension (HF DeepSeek has no window).
    if (arch != "qwen2" && arch != "qwen3" && !deepseek) {
      return InvalidArgument(
          "--preset tiny-hybrid-swa needs --arch qwen2 or qwen3 (their HF configs carry layer_types)");
    }
    s.sliding_window = 16;
    s.sliding_layers = {true, false, true};
  }
  if (swa_bench) {
    s.sliding_window = 128;
    s.sliding_layers = {true, true, true, false, true, true, true, false};
  }
  return s;
}

Status ApplySynthOverrides(const SynthOptions& o, SynthSpec& s) {
  if (o.max_position < 0) return InvalidArgument("--max-position must be >= 1");
  if (o.sliding_window < 0) return InvalidArgument("--sliding-window must be >= 1");
  if (o.max_position > 0) {
    if (s.yarn && o.max_position < s.yarn->original_context) {
      return InvalidArgument("--max-position " + std::to_string(o.max_position) +
                             " is below the preset's YaRN original context " +
                             std::to_string(s.yarn->original_context));
    }
    s.context = o.max_position;
  }
  if (o.mtp_layers < -1) return InvalidArgument("--mtp-layers must be >= 0");
  if (o.mtp_layers >= 0) s.mtp_layers = o.mtp_layers;
  if (o.sliding_window > 0) {
    s.sliding_window = o.sliding_window;
    // A preset without sliding layers slides every layer (as Mistral does).
    if (s.sliding_layers.empty()) s.sliding_layers.assign(static_cast<size_t>(s.layers), true);
  }
  return Status::Ok();
}

Status WriteSynthModel(const SynthOptions& o) {
  DI_ASSIGN_OR_RETURN(SynthSpec spec, ResolveSynthSpec(o.arch, o.preset));
  DI_RETURN_IF_ERROR(ApplySynthOverrides(o, spec));
  if (o.out.empty()) return InvalidArgument("--out: missing output path");
  std::optional<synth_internal::ImportedTokenizer> imported;
  if (!o.tokenizer_dir.empty()) {
    DI_ASSIGN_OR_RETURN(imported, synth_internal::LoadImportedTokenizer(o.tokenizer_dir));
    spec.vocab = imported->tokenizer->vocab_size();
  }
  const synth_internal::ImportedTokenizer* tok = imported ? &*imported : nullptr;
  if (o.format == SynthFormat::kHf) {
    if (o.dtype != DType::kF32 && o.dtype != DType::kF16 && o.dtype != DType::kBF16) {
      return InvalidArgument(std::string("--dtype ") + DTypeName(o.dtype) +
                             " is not supported with --format hf (use f32, f16 or bf16)");
    }
    return synth_internal::WriteSynthHf(spec, o, tok);
  }
  switch (o.dtype) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kQ8_0:
    case DType::kQ4_0:
      break;
    default:
      return InvalidArgument(std::string("--dtype ") + DTypeName(o.dtype) +
                             " is not supported (f32, f16, bf16, q8_0, q4_0)");
  }
  return WriteSynthGguf(spec, o, tok);
}

namespace synth_internal {

namespace {

// The MoE block of layer l: router, experts (HF one tensor per expert and
// matrix; GGUF stacked [experts, rows, cols]), shared expert.
template <typename Add>
void AddMoeTensors(const SynthSpec& s, int64_t l, Add& add, std::vector<SynthTensor>& out) {
  using I = SynthTensor::Init;
  const bool mixtral = s.arch == "mixtral";
  const std::string hf = "model.layers." + std::to_string(l) + (mixtral ? ".block_sparse_moe." : ".mlp.");
  const std::string gg = "blk." + std::to_string(l) + ".";
  add(hf + "gate.weight", gg + "ffn_gate_inp.weight", {s.experts, s.hidden}, I::kProjection);
  if (s.score_bias) add(hf + "gate.e_score_correction_bias", gg + "exp_probs_b.bias", {s.experts}, I::kBias);
  struct Mat {
    const char* hf_mixtral;
    const char* hf;
    const char* gguf;
    int64_t rows, cols;
  };
  const Mat mats[] = {{"w1", "gate_proj", "ffn_gate_exps", s.expert_ffn, s.hidden},
                      {"w3", "up_proj", "ffn_up_exps", s.expert_ffn, s.hidden},
                      {"w2", "down_proj", "ffn_down_exps", s.hidden, s.expert_ffn}};
  for (const Mat& m : mats) {
    add("", gg + m.gguf + ".weight", {s.experts, m.rows, m.cols}, I::kProjection);
    for (int64_t e = 0; e < s.experts; ++e) {
      out.back().hf_parts.push_back(hf + "experts." + std::to_string(e) + "." +
                                    (mixtral ? m.hf_mixtral : m.hf) + ".weight");
    }
  }
  if (s.shared_experts > 0) {
    const int64_t f = s.shared_experts * s.expert_ffn;
    add(hf + "shared_experts.gate_proj.weight", gg + "ffn_gate_shexp.weight", {f, s.hidden}, I::kProjection);
    add(hf + "shared_experts.up_proj.weight", gg + "ffn_up_shexp.weight", {f, s.hidden}, I::kProjection);
    add(hf + "shared_experts.down_proj.weight", gg + "ffn_down_shexp.weight", {s.hidden, f}, I::kProjection);
  }
  if (s.shared_ffn > 0) {
    add(hf + "shared_expert.gate_proj.weight", gg + "ffn_gate_shexp.weight", {s.shared_ffn, s.hidden},
        I::kProjection);
    add(hf + "shared_expert.up_proj.weight", gg + "ffn_up_shexp.weight", {s.shared_ffn, s.hidden},
        I::kProjection);
    add(hf + "shared_expert.down_proj.weight", gg + "ffn_down_shexp.weight", {s.hidden, s.shared_ffn},
        I::kProjection);
    add(hf + "shared_expert_gate.weight", gg + "ffn_gate_inp_shexp.weight", {1, s.hidden}, I::kProjection);
    out.back().gguf_shape = {s.hidden};  // llama.cpp stores this [1, hidden] gate as 1-D
  }
}

// MLA attention of layer l (HF self_attn.*; GGUF llama.cpp deepseek2 names).
template <typename Add>
void AddMlaTensors(const SynthSpec& s, int64_t l, Add& add, std::vector<SynthTensor>& out) {
  using I = SynthTensor::Init;
  const std::string hf = "model.layers." + std::to_string(l) + ".self_attn.";
  const std::string gg = "blk." + std::to_string(l) + ".";
  const int64_t qk = s.qk_nope + s.qk_rope;
  if (s.q_lora > 0) {
    add(hf + "q_a_proj.weight", gg + "attn_q_a.weight", {s.q_lora, s.hidden}, I::kProjection);
    add(hf + "q_a_layernorm.weight", gg + "attn_q_a_norm.weight", {s.q_lora}, I::kNorm);
    add(hf + "q_b_proj.weight", gg + "attn_q_b.weight", {s.heads * qk, s.q_lora}, I::kProjection);
  } else {
    add(hf + "q_proj.weight", gg + "attn_q.weight", {s.heads * qk, s.hidden}, I::kProjection);
  }
  add(hf + "kv_a_proj_with_mqa.weight", gg + "attn_kv_a_mqa.weight", {s.kv_lora + s.qk_rope, s.hidden},
      I::kProjection);
  add(hf + "kv_a_layernorm.weight", gg + "attn_kv_a_norm.weight", {s.kv_lora}, I::kNorm);
  // GGUF: split into attn_k_b + attn_v_b, as current llama.cpp converters write it.
  add(hf + "kv_b_proj.weight", gg + "attn_k_b.weight", {s.heads * (s.qk_nope + s.v_head), s.kv_lora},
      I::kProjection, SynthTensor::Permute::kMlaKB);
  add(hf + "kv_b_proj.weight", gg + "attn_v_b.weight", {s.heads * (s.qk_nope + s.v_head), s.kv_lora},
      I::kProjection, SynthTensor::Permute::kMlaVB);
  out.back().gguf_only = true;
  out[out.size() - 2].gguf_shape = {s.heads, s.kv_lora, s.qk_nope};
  out.back().gguf_shape = {s.heads, s.v_head, s.kv_lora};
  add(hf + "o_proj.weight", gg + "attn_output.weight", {s.hidden, s.heads * s.v_head}, I::kProjection);
}

// The MTP-specific tensors of layer l (model/mtp.h names).
template <typename Add>
void AddMtpTensors(const SynthSpec& s, int64_t l, Add& add) {
  using I = SynthTensor::Init;
  const std::string hf = "model.layers." + std::to_string(l) + ".";
  const std::string gg = "blk." + std::to_string(l) + ".nextn.";
  add(hf + "enorm.weight", gg + "enorm.weight", {s.hidden}, I::kNorm);
  add(hf + "hnorm.weight", gg + "hnorm.weight", {s.hidden}, I::kNorm);
  add(hf + "eh_proj.weight", gg + "eh_proj.weight", {s.hidden, 2 * s.hidden}, I::kProjection);
  add(hf + "shared_head.norm.weight", gg + "shared_head_norm.weight", {s.hidden}, I::kNorm);
}

}  // namespace

SynthTensor StackedPart(const SynthTensor& t, size_t i) {
  SynthTensor p = t;
  p.hf_name = t.hf_parts[i];
  p.hf_parts.clear();
  p.gguf_shape.clear();
  p.shape.assign(t.shape.begin() + 1, t.shape.end());
  return p;
}

std::vector<SynthTensor> SynthTensors(const SynthSpec& s) {
  using I = SynthTensor::Init;
  using P = SynthTensor::Permute;
  std::vector<SynthTensor> out;
  // Scales keep activations O(1): projections 1/sqrt(fan_in); embeddings 1,
  // except when tied to the output, where 1/sqrt(hidden) keeps logits O(1).
  auto add = [&out, &s](std::string hf, std::string gguf, std::vector<int64_t> shape, I init,
                        P perm = P::kNone) {
    float stddev = 0.2f;  // norms (around 1) and biases
    if (init == I::kProjection) {
      stddev = static_cast<float>(1.0 / std::sqrt(static_cast<double>(shape.back())));
    }
    if (init == I::kEmbedding) {
      stddev = s.tie_embeddings ? static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.hidden))) : 1.0f;
    }
    out.push_back(SynthTensor{std::move(hf), std::move(gguf), std::move(shape), init, stddev, perm, {}, {}});
  };
  const int64_t q_dim = s.heads * s.head_dim, kv_dim = s.kv_heads * s.head_dim;
  // Only llama's GGUF arch uses interleaved rope (mistral is written as llama).
  const bool permute = !s.neox_rope;
  add("model.embed_tokens.weight", "token_embd.weight", {s.vocab, s.hidden}, I::kEmbedding);
  for (int64_t l = 0; l < s.layers + s.mtp_layers; ++l) {
    const std::string hf = "model.layers." + std::to_string(l) + ".";
    const std::string gg = "blk." + std::to_string(l) + ".";
    if (l >= s.layers) AddMtpTensors(s, l, add);
    const I norm = s.gemma ? I::kGemmaNorm : I::kNorm;
    add(hf + "input_layernorm.weight", gg + "attn_norm.weight", {s.hidden}, norm);
    if (s.kv_lora > 0) {
      AddMlaTensors(s, l, add, out);
      add(hf + "post_attention_layernorm.weight", gg + "ffn_norm.weight", {s.hidden}, I::kNorm);
      if (l >= s.leading_dense_layers) {
        AddMoeTensors(s, l, add, out);
      } else {
        add(hf + "mlp.gate_proj.weight", gg + "ffn_gate.weight", {s.ffn, s.hidden}, I::kProjection);
        add(hf + "mlp.up_proj.weight", gg + "ffn_up.weight", {s.ffn, s.hidden}, I::kProjection);
        add(hf + "mlp.down_proj.weight", gg + "ffn_down.weight", {s.hidden, s.ffn}, I::kProjection);
      }
      continue;
    }
    add(hf + "self_attn.q_proj.weight", gg + "attn_q.weight", {q_dim, s.hidden}, I::kProjection,
        permute ? P::kQ : P::kNone);
    add(hf + "self_attn.k_proj.weight", gg + "attn_k.weight", {kv_dim, s.hidden}, I::kProjection,
        permute ? P::kK : P::kNone);
    add(hf + "self_attn.v_proj.weight", gg + "attn_v.weight", {kv_dim, s.hidden}, I::kProjection);
    if (s.qkv_bias) {
      add(hf + "self_attn.q_proj.bias", gg + "attn_q.bias", {q_dim}, I::kBias);
      add(hf + "self_attn.k_proj.bias", gg + "attn_k.bias", {kv_dim}, I::kBias);
      add(hf + "self_attn.v_proj.bias", gg + "attn_v.bias", {kv_dim}, I::kBias);
    }
    if (s.qk_norm) {
      add(hf + "self_attn.q_norm.weight", gg + "attn_q_norm.weight", {s.head_dim}, norm);
      add(hf + "self_attn.k_norm.weight", gg + "attn_k_norm.weight", {s.head_dim}, norm);
    }
    add(hf + "self_attn.o_proj.weight", gg + "attn_output.weight", {s.hidden, q_dim}, I::kProjection);
    if (s.gemma) {  // sandwich norms around the attention and the MLP
      add(hf + "post_attention_layernorm.weight", gg + "post_attention_norm.weight", {s.hidden}, norm);
      add(hf + "pre_feedforward_layernorm.weight", gg + "ffn_norm.weight", {s.hidden}, norm);
      add(hf + "mlp.gate_proj.weight", gg + "ffn_gate.weight", {s.ffn, s.hidden}, I::kProjection);
      add(hf + "mlp.up_proj.weight", gg + "ffn_up.weight", {s.ffn, s.hidden}, I::kProjection);
      add(hf + "mlp.down_proj.weight", gg + "ffn_down.weight", {s.hidden, s.ffn}, I::kProjection);
      add(hf + "post_feedforward_layernorm.weight", gg + "post_ffw_norm.weight", {s.hidden}, norm);
      continue;
    }
    add(hf + "post_attention_layernorm.weight", gg + "ffn_norm.weight", {s.hidden}, I::kNorm);
    if (s.experts > 0 && l >= s.leading_dense_layers) {
      AddMoeTensors(s, l, add, out);
      continue;
    }
    add(hf + "mlp.gate_proj.weight", gg + "ffn_gate.weight", {s.ffn, s.hidden}, I::kProjection);
    add(hf + "mlp.up_proj.weight", gg + "ffn_up.weight", {s.ffn, s.hidden}, I::kProjection);
    add(hf + "mlp.down_proj.weight", gg + "ffn_down.weight", {s.hidden, s.ffn}, I::kProjection);
  }
  add("model.norm.weight", "output_norm.weight", {s.hidden}, s.gemma ? I::kGemmaNorm : I::kNorm);
  if (!s.tie_embeddings) add("lm_head.weight", "output.weight", {s.vocab, s.hidden}, I::kProjection);
  return out;
}

namespace {

// Runs f(begin, end) over [0, n) split across the machine's cores: every
// element is a pure function of its index, so the split never changes the
// result; it only makes multi-GB presets (v2-lite) take minutes, not an hour.
// `grain`: the least work worth a thread.
template <typename F>
void ParallelRange(int64_t n, int64_t grain, F f) {
  const int64_t threads = std::clamp<int64_t>(static_cast<int64_t>(std::thread::hardware_concurrency()), 1,
                                              std::max<int64_t>(1, n / std::max<int64_t>(grain, 1)));
  if (threads <= 1) {
    f(int64_t{0}, n);
    return;
  }
  std::vector<std::thread> workers;
  for (int64_t i = 0; i < threads; ++i) workers.emplace_back(f, n * i / threads, n * (i + 1) / threads);
  for (std::thread& w : workers) w.join();
}

}  // namespace

std::vector<float> SynthValues(const SynthTensor& t, uint64_t seed) {
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  const uint64_t key = StreamKey(seed, t.hf_name);
  const float offset = t.init == SynthTensor::Init::kNorm ? 1.0f : 0.0f;
  ParallelRange(n, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      v[static_cast<size_t>(i)] = offset + t.stddev * NormalFromKey(key, static_cast<uint64_t>(i));
    }
  });
  return v;
}

StatusOr<std::vector<uint8_t>> EncodeRows(const std::vector<float>& values, DType dtype,
                                          const std::vector<int64_t>& shape) {
  const int64_t cols = shape.back();
  const int64_t rows = static_cast<int64_t>(values.size()) / cols;
  const int64_t row_bytes = RowBytes(dtype, cols);
  if (row_bytes < 0) {
    return InvalidArgument(std::string("rows of ") + std::to_string(cols) + " cannot be stored as " +
                           DTypeName(dtype));
  }
  std::vector<uint8_t> out(static_cast<size_t>(row_bytes * rows));
  std::atomic<bool> ok{true};
  ParallelRange(rows, (1 << 16) / cols + 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      if (!QuantizeRow(dtype, &values[static_cast<size_t>(r * cols)],
                       &out[static_cast<size_t>(r * row_bytes)], cols)) {
        ok = false;
      }
    }
  });
  if (!ok) return InvalidArgument(std::string("cannot encode ") + DTypeName(dtype));
  return out;
}

void ReportProgress(bool enabled, size_t i, size_t n, const std::string& name) {
  if (enabled) std::fprintf(stderr, "synth: [%zu/%zu] %s\n", i, n, name.c_str());
}

}  // namespace synth_internal
}  // namespace deepinfer
