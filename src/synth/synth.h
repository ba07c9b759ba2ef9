// `deepinfer synth`: random-weight checkpoints of named shapes, written as
// GGUF (llama.cpp names, metadata and Q/K row order) or as an HF directory
// (config.json, model.safetensors, tokenizer files).
//
// Weights are a pure function of (seed, HF tensor name, element index)
// through a counter-based generator, so the GGUF and HF copies of one seed
// are the same model and any tensor can be produced alone (streamed to disk
// one at a time). Scales keep activations O(1): projections ~ N(0, 1/fan_in),
// embeddings ~ N(0, 1) (N(0, 1/hidden) when tied to the output), norm weights ~ 1 + N(0, 0.2^2), biases ~
// N(0, 0.2^2). Thread-safety: pure functions; WriteSynthModel writes only under opts.out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "tensor/dtype.h"

namespace deepinfer {

// Resolved hyper-parameters of one (arch, preset) pair.
struct SynthSpec {
  std::string arch;  // llama | mistral | qwen2 | qwen3
  int64_t hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0;
  int64_t vocab = 0, context = 0;
  double rms_eps = 1e-5, rope_theta = 10000.0;
  bool tie_embeddings = false;
  bool qkv_bias = false;             // qwen2
  bool qk_norm = false;              // qwen3: RMSNorm over each q/k head (weight [head_dim])
  bool neox_rope = false;            // qwen2/3: rotate-half in both formats, no Q/K permutation
  int64_t sliding_window = 0;        // mistral: window of the sliding layers
  std::vector<bool> sliding_layers;  // per layer; empty = all full attention
  struct RopeLlama3 {
    double factor = 8, low_freq_factor = 1, high_freq_factor = 4;
    int64_t original_context = 32;
  };
  std::optional<RopeLlama3> rope_llama3;
  // Mixture of experts (mixtral, qwen2_moe, qwen3_moe): experts > 0.
  int64_t experts = 0, experts_per_token = 0, expert_ffn = 0;
  int64_t shared_ffn = 0;  // qwen2_moe: gated shared expert
  bool norm_topk_prob = false;
  int64_t leading_dense_layers = 0;  // MoE models: the first N layers keep a dense MLP of `ffn`
  // DeepSeek (deepseek_v2, deepseek_v3): MLA dims (kv_lora > 0), routing, MTP.
  int64_t q_lora = 0, kv_lora = 0, qk_nope = 0, qk_rope = 0, v_head = 0;
  int64_t shared_experts = 0;  // DeepSeek n_shared_experts (each of expert_ffn)
  bool sigmoid_scoring = false, score_bias = false;
  int64_t n_group = 1, topk_group = 1;
  double routed_scaling = 1.0;
  int64_t mtp_layers = 0;
  struct Yarn {
    double factor = 4, mscale = 1, mscale_all_dim = 1;
    int64_t original_context = 64;
  };
  std::optional<Yarn> yarn;
  // Gemma-2/3: sandwich norms stored as w of (1 + w) in HF (1 + w in GGUF), GeGLU, tied embeddings.
  bool gemma = false;
  double attn_softcap = 0, final_softcap = 0;  // Gemma-2 (0 = none)
  double query_pre_attn_scalar = 0;
  double rope_local_theta = 0;    // Gemma-3's local layers (global: rope_theta)
  double rope_linear_factor = 0;  // Gemma-3's global layers: linear RoPE scaling (0 = none)
};

// Presets: tiny (hidden 64, 3 layers, 4 heads / 2 KV heads, head_dim 16 (32
// for qwen3, to exercise an explicit head_dim), ffn 160, vocab 512),
// tiny-rope-llama3 (tiny + llama3 rope scaling), llama-110m, tinyllama-1.1b.
// Arch variants: mistral = sliding window 16 on every layer; qwen2 = qkv
// bias, rope theta 1e6, NEOX rope, tied embeddings; qwen3 = q/k norms,
// explicit head_dim, rope theta 1e6, tied embeddings. MoE archs (tiny only):
// mixtral = llama + 8 experts of ffn 64, top-2 (GGUF: llama.cpp's `llama`
// with stacked expert tensors); qwen2_moe = qwen2 + 8 experts of ffn 32,
// top-2 unnormalized, gated shared expert of ffn 48, layer 0 dense;
// qwen3_moe = qwen3 + 8 experts of ffn 32, top-3 normalized. InvalidArgument
// for unknown names. deepseek_v2 tiny: MLA without q_lora (kv_lora 32,
// nope 16, rope 8, v 16), 8 experts top-2 softmax, group-limited greedy
// (4 groups, 2 used), unnormalized x1.5, one shared expert, layer 0 dense.
// deepseek_v3 tiny: q_lora 48, sigmoid + e_score_correction_bias, groups
// 4/2, renormalized x2.5, YaRN (factor 4, original 64), one MTP layer.
// tiny-hybrid-swa (deepseek): window 16 on layers 0 and 2 via layer_types.
// swa-bench (qwen3, deepseek_v3): 8 layers of which 6 slide with window
// 128 (layers 3 and 7 full), hidden 512, 8 heads / 4 KV heads of 64 (MLA
// for DeepSeek: latent 128 + rope 32), ffn 1536, vocab 32000, context 8192.
// gemma2 tiny: hidden 64, 4 layers alternating sliding (window 16; layer 0
// slides) / full, 4 heads / 2 KV heads of head_dim 32 (!= hidden / heads),
// query_pre_attn_scalar 24, soft-caps 2 (attention) and 3 (final) - small, so
// capping bends these random models' values -, tied embeddings. gemma3 tiny:
// 6 layers, 5 sliding (window 16) then 1 full, q/k norms, RoPE base 1e6 with
// linear scaling x2 on the full layer and 10000 unscaled on the sliding ones,
// query_pre_attn_scalar 24, no soft-caps.
// v2-lite (DeepSeek-V2-Lite's dims, 15.7B) and v3-mini (hidden 1024, 8
// layers, 32 experts, ~0.3B): benchmark shapes with the arch's routing.
StatusOr<SynthSpec> ResolveSynthSpec(const std::string& arch, const std::string& preset);

enum class SynthFormat { kGguf, kHf };

struct SynthOptions {
  std::string arch = "llama";
  std::string preset = "tiny";
  DType dtype = DType::kF32;  // gguf: f32 f16 bf16 q8_0 q4_0; hf: f32 f16 bf16
  uint64_t seed = 0;
  std::string out;  // gguf: the file; hf: a directory (created if missing)
  SynthFormat format = SynthFormat::kGguf;
  bool progress = false;  // per-tensor progress lines on stderr (the CLI sets it for big presets)
  // Non-empty: a directory with an HF tokenizer.json[.gz] (+ tokenizer_config.json).
  // The model's vocabulary is that tokenizer's; its files (HF) or its
  // tokenizer.ggml.* keys and chat template (GGUF) go into the output
  // (synth/imported_tokenizer.h).
  std::string tokenizer_dir;
  // Overrides for every preset (0 = the preset's): --max-position sets the
  // context; --sliding-window W sets the window of the sliding layers (every
  // layer slides when the preset has none).
  int64_t max_position = 0;
  int64_t sliding_window = 0;
  // --mtp-layers N: MTP (next-n) layers after the decoder stack, in the
  // DeepSeek-V3 layout model/mtp.h reads (-1 = the preset's: one for
  // deepseek_v3, none elsewhere). Random weights: drafts almost always rejected.
  int64_t mtp_layers = -1;
};

// Applies opts' overrides to a resolved spec. InvalidArgument for negative
// values or a context below the preset's YaRN original context.
Status ApplySynthOverrides(const SynthOptions& opts, SynthSpec& spec);

// Writes the model. Errors: InvalidArgument (bad arch/preset/dtype for the
// format), Internal (I/O), each naming the path or flag.
Status WriteSynthModel(const SynthOptions& opts);

// llama.cpp's `llama` architecture rotates adjacent pairs (x[2i], x[2i+1])
// while HF Llama rotates halves (x[i], x[i + d/2]); convert_hf_to_gguf.py
// therefore reorders the rows of q_proj / k_proj within each head:
//   gguf_row(h*d + 2i + s) = hf_row(h*d + s*d/2 + i),  s in {0,1}, i < d/2.
// `w` is [heads*head_dim, cols] row-major; returns the GGUF order.
std::vector<float> PermuteRowsForGgufRope(const std::vector<float>& w, int64_t heads, int64_t head_dim,
                                          int64_t cols);

// The counter-based generator behind every weight: element `index` of the
// standard-normal stream named `stream` under `seed`.
float SynthNormal(uint64_t seed, const std::string& stream, uint64_t index);

}  // namespace deepinfer
