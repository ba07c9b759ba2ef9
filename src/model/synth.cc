// Synthetic checkpoints: presets, the weight generator and the GGUF writer.
#include "model/synth.h"

#include <cmath>
#include <cstdio>

#include "io/gguf.h"
#include "model/synth_internal.h"
#include "model/synth_tokenizer.h"
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

std::string GgufArch(const SynthSpec& s) { return s.arch == "mistral" ? "llama" : s.arch; }

void SetGgufMetadata(const SynthSpec& s, const SynthOptions& o, GgufWriter& w) {
  const std::string a = GgufArch(s);
  w.SetString("general.architecture", a);
  w.SetString("general.name",
              "deepinfer-synth-" + s.arch + "-" + o.preset + "-seed" + std::to_string(o.seed));
  w.SetU32("general.file_type", FileType(o.dtype));
  w.SetU32(a + ".context_length", static_cast<uint32_t>(s.context));
  w.SetU32(a + ".embedding_length", static_cast<uint32_t>(s.hidden));
  w.SetU32(a + ".block_count", static_cast<uint32_t>(s.layers));
  w.SetU32(a + ".feed_forward_length", static_cast<uint32_t>(s.ffn));
  w.SetU32(a + ".attention.head_count", static_cast<uint32_t>(s.heads));
  w.SetU32(a + ".attention.head_count_kv", static_cast<uint32_t>(s.kv_heads));
  w.SetU32(a + ".attention.key_length", static_cast<uint32_t>(s.head_dim));
  w.SetU32(a + ".attention.value_length", static_cast<uint32_t>(s.head_dim));
  w.SetF32(a + ".attention.layer_norm_rms_epsilon", static_cast<float>(s.rms_eps));
  w.SetF32(a + ".rope.freq_base", static_cast<float>(s.rope_theta));
  w.SetU32(a + ".rope.dimension_count", static_cast<uint32_t>(s.head_dim));
  w.SetU32(a + ".vocab_size", static_cast<uint32_t>(s.vocab));
  if (!s.sliding_layers.empty()) {
    // One window per layer, 0 = full attention (llama.cpp's `llama` arch
    // ignores this key; deepinfer reads it).
    std::vector<int32_t> windows;
    for (bool sl : s.sliding_layers) windows.push_back(sl ? static_cast<int32_t>(s.sliding_window) : 0);
    w.SetI32Array(a + ".attention.sliding_window", windows);
  }
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
}

// GGUF keeps 1-D tensors (norms, biases) in f32, as llama.cpp's converter
// does; every 2-D weight, embeddings and output included, takes `dtype`.
DType GgufDType(const SynthTensor& t, DType dtype) { return t.shape.size() == 1 ? DType::kF32 : dtype; }

Status WriteSynthGguf(const SynthSpec& spec, const SynthOptions& o) {
  GgufWriter w;
  SetGgufMetadata(spec, o, w);
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
    const DType dt = GgufDType(t, o.dtype);
    w.AddTensor(t.gguf_name, dt, t.shape, [&t, &spec, &o, &i, n, dt]() -> StatusOr<std::vector<uint8_t>> {
      synth_internal::ReportProgress(o.progress, ++i, n, t.gguf_name);
      std::vector<float> v = synth_internal::SynthValues(t, o.seed);
      if (t.permute != SynthTensor::Permute::kNone) {
        const int64_t heads = t.permute == SynthTensor::Permute::kQ ? spec.heads : spec.kv_heads;
        v = PermuteRowsForGgufRope(v, heads, spec.head_dim, t.shape.back());
      }
      return synth_internal::EncodeRows(v, dt, t.shape);
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
  if (arch != "llama" && arch != "mistral" && arch != "qwen2" && arch != "qwen3") {
    return InvalidArgument("--arch: unknown architecture '" + arch + "' (llama, mistral, qwen2, qwen3)");
  }
  s.arch = arch;
  if (preset == "tiny" || preset == "tiny-rope-llama3" || preset == "tiny-hybrid-swa") {
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
    return InvalidArgument("--preset: unknown preset '" + preset +
                           "' (tiny, tiny-rope-llama3, tiny-hybrid-swa, llama-110m, tinyllama-1.1b)");
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
  }
  if (preset == "tiny-hybrid-swa") {
    // Hybrid attention as the seed's flagship model has it: sliding and full
    // layers interleaved. Only Qwen2/Qwen3 configs express a per-layer mix in
    // HF form (layer_types); Mistral slides every layer, Llama none.
    if (arch != "qwen2" && arch != "qwen3") {
      return InvalidArgument("--preset tiny-hybrid-swa needs --arch qwen2 or qwen3 (their HF configs carry layer_types)");
    }
    s.sliding_window = 16;
    s.sliding_layers = {true, false, true};
  }
  return s;
}

Status WriteSynthModel(const SynthOptions& o) {
  DI_ASSIGN_OR_RETURN(SynthSpec spec, ResolveSynthSpec(o.arch, o.preset));
  if (o.out.empty()) return InvalidArgument("--out: missing output path");
  if (o.format == SynthFormat::kHf) {
    if (o.dtype != DType::kF32 && o.dtype != DType::kF16 && o.dtype != DType::kBF16) {
      return InvalidArgument(std::string("--dtype ") + DTypeName(o.dtype) +
                             " is not supported with --format hf (use f32, f16 or bf16)");
    }
    return synth_internal::WriteSynthHf(spec, o);
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
  return WriteSynthGguf(spec, o);
}

namespace synth_internal {

std::vector<SynthTensor> SynthTensors(const SynthSpec& s) {
  using I = SynthTensor::Init;
  using P = SynthTensor::Permute;
  std::vector<SynthTensor> out;
  // Scales keep activations O(1): projections 1/sqrt(fan_in); embeddings 1,
  // except when tied to the output, where 1/sqrt(hidden) keeps logits O(1).
  auto add = [&out, &s](std::string hf, std::string gguf, std::vector<int64_t> shape, I init,
                        P perm = P::kNone) {
    float stddev = 0.2f;  // norms (around 1) and biases
    if (init == I::kProjection)
      stddev = static_cast<float>(1.0 / std::sqrt(static_cast<double>(shape.back())));
    if (init == I::kEmbedding) {
      stddev = s.tie_embeddings ? static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.hidden))) : 1.0f;
    }
    out.push_back(SynthTensor{std::move(hf), std::move(gguf), std::move(shape), init, stddev, perm});
  };
  const int64_t q_dim = s.heads * s.head_dim, kv_dim = s.kv_heads * s.head_dim;
  // Only llama's GGUF arch uses interleaved rope (mistral is written as llama).
  const bool permute = !s.neox_rope;
  add("model.embed_tokens.weight", "token_embd.weight", {s.vocab, s.hidden}, I::kEmbedding);
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string hf = "model.layers." + std::to_string(l) + ".";
    const std::string gg = "blk." + std::to_string(l) + ".";
    add(hf + "input_layernorm.weight", gg + "attn_norm.weight", {s.hidden}, I::kNorm);
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
      add(hf + "self_attn.q_norm.weight", gg + "attn_q_norm.weight", {s.head_dim}, I::kNorm);
      add(hf + "self_attn.k_norm.weight", gg + "attn_k_norm.weight", {s.head_dim}, I::kNorm);
    }
    add(hf + "self_attn.o_proj.weight", gg + "attn_output.weight", {s.hidden, q_dim}, I::kProjection);
    add(hf + "post_attention_layernorm.weight", gg + "ffn_norm.weight", {s.hidden}, I::kNorm);
    add(hf + "mlp.gate_proj.weight", gg + "ffn_gate.weight", {s.ffn, s.hidden}, I::kProjection);
    add(hf + "mlp.up_proj.weight", gg + "ffn_up.weight", {s.ffn, s.hidden}, I::kProjection);
    add(hf + "mlp.down_proj.weight", gg + "ffn_down.weight", {s.hidden, s.ffn}, I::kProjection);
  }
  add("model.norm.weight", "output_norm.weight", {s.hidden}, I::kNorm);
  if (!s.tie_embeddings) add("lm_head.weight", "output.weight", {s.vocab, s.hidden}, I::kProjection);
  return out;
}

std::vector<float> SynthValues(const SynthTensor& t, uint64_t seed) {
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  const uint64_t key = StreamKey(seed, t.hf_name);
  const float offset = t.init == SynthTensor::Init::kNorm ? 1.0f : 0.0f;
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = offset + t.stddev * NormalFromKey(key, static_cast<uint64_t>(i));
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
  for (int64_t r = 0; r < rows; ++r) {
    if (!QuantizeRow(dtype, &values[static_cast<size_t>(r * cols)], &out[static_cast<size_t>(r * row_bytes)],
                     cols)) {
      return InvalidArgument(std::string("cannot encode ") + DTypeName(dtype));
    }
  }
  return out;
}

void ReportProgress(bool enabled, size_t i, size_t n, const std::string& name) {
  if (enabled) std::fprintf(stderr, "synth: [%zu/%zu] %s\n", i, n, name.c_str());
}

}  // namespace synth_internal
}  // namespace deepinfer
