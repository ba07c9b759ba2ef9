// Hyper-parameters of a decoder-only transformer, independent of the file
// format they were read from (GGUF metadata or HF config.json).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace deepinfer {

// How RoPE pairs the dimensions of a head.
enum class RopeStyle {
  kInterleaved,  // pairs (2i, 2i+1): GGUF llama (weights permuted by the converter), llama2.c
  kNeox,         // pairs (i, i + d/2): HF Llama/Qwen/Mistral, GGUF qwen2/qwen3
};

struct RopeScaling {
  std::string type;  // "" (none), "linear", "llama3", "yarn" (later)
  double factor = 1.0;
  double low_freq_factor = 1.0;   // llama3
  double high_freq_factor = 4.0;  // llama3
  int64_t original_max_position = 8192;
};

// Mixture-of-experts feed-forward (Mixtral, Qwen2/3-MoE, DeepSeek-V2/V3).
// Routing of one token: scores = softmax or sigmoid of the router logits;
// choice = scores (+ e_score_correction_bias when present); with n_group > 1
// only the experts of the topk_group best groups compete (group score: max
// of the group, or the sum of its top-2 choice values when a bias is
// present, as DeepSeek-V3); the experts_per_token best choices win (lowest
// id first on ties); their weights are the unbiased scores, divided by their
// sum when norm_topk_prob, times routed_scaling_factor.
struct MoeConfig {
  int64_t num_experts = 0;  // 0: a dense model
  int64_t experts_per_token = 0;
  int64_t expert_ffn = 0;  // each routed expert's intermediate size
  // Always-on shared experts: DeepSeek n_shared_experts (one SwiGLU of
  // n * expert_ffn), Qwen2-MoE shared_expert_intermediate_size (scaled by
  // sigmoid(shared_expert_gate . x)).
  int64_t shared_ffn = 0;
  bool shared_expert_gate = false;
  bool sigmoid_scoring = false;  // false: softmax over all experts
  bool norm_topk_prob = false;
  double routed_scaling_factor = 1.0;
  int64_t n_group = 1, topk_group = 1;
  bool score_correction_bias = false;  // DeepSeek-V3 noaux_tc
  std::vector<bool> sparse_layers;     // per layer: MoE (true) or dense MLP of intermediate_size
};

// Multi-head latent attention (DeepSeek-V2/V3). Per token the cache keeps
// only the normed latent c_kv [kv_lora_rank] and the roped shared key
// k_pe [qk_rope_head_dim]; per-head keys and values are kv_b_proj(c_kv).
struct MlaConfig {
  int64_t q_lora_rank = 0;   // 0: q_proj directly; else q_a_proj -> RMSNorm -> q_b_proj
  int64_t kv_lora_rank = 0;  // > 0: the model uses MLA
  int64_t qk_nope_head_dim = 0, qk_rope_head_dim = 0, v_head_dim = 0;
};

// YaRN RoPE parameters (rope_scaling type "yarn", DeepSeek form).
struct YarnConfig {
  double beta_fast = 32, beta_slow = 1;
  double mscale = 1, mscale_all_dim = 0;
};

// The gate activation of the gated MLP down(act(gate x) * up x).
enum class FfnActivation {
  kSilu,      // SwiGLU: HF "silu"
  kGeluTanh,  // GeGLU with the tanh approximation of GELU: HF "gelu_pytorch_tanh" (Gemma-2/3)
};

struct ModelConfig {
  std::string arch;  // a registered ArchitectureSpec::name (model/registry.h)
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t intermediate_size = 0;
  int64_t max_position = 2048;
  double rms_norm_eps = 1e-5;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  RopeStyle rope_style = RopeStyle::kNeox;
  int64_t rope_dim = 0;         // rotary dims per head (== head_dim unless partial)
  bool attention_bias = false;  // qkv bias (Qwen2)
  bool qk_norm = false;         // per-head RMSNorm on q and k (Qwen3)
  bool tie_word_embeddings = false;
  // Per layer: 0 = full attention, W > 0 = sliding window of W tokens (the
  // query attends to keys at positions > pos - W).
  std::vector<int64_t> sliding_window;
  FfnActivation ffn_activation = FfnActivation::kSilu;
  // Gemma-2/3 (model/gemma.h); the defaults change nothing for other models.
  // Added to every RMSNorm weight as the checkpoint stores it: 1 for Gemma's
  // HF checkpoints, whose norms scale by (1 + w); llama.cpp's converter
  // stores 1 + w in GGUF, so 0 there.
  float norm_weight_offset = 0.0f;
  double embedding_scale = 1.0;        // the embedding rows are multiplied by this (Gemma: sqrt(hidden))
  double attn_logit_softcap = 0.0;     // > 0: scores = cap * tanh(scores / cap) before the softmax
  double final_logit_softcap = 0.0;    // > 0: logits = cap * tanh(logits / cap)
  double query_pre_attn_scalar = 0.0;  // > 0: attention scale query_pre_attn_scalar^-0.5, else head_dim^-0.5
  double rope_local_theta = 0.0;       // > 0: sliding layers use this RoPE base, unscaled (Gemma-3)
  // Multi-token-prediction (DeepSeek-V3 "next-n") layers stored after the
  // decoder layers (HF num_nextn_predict_layers, GGUF {arch}.nextn_predict_layers).
  // The main Forward never runs them; model/mtp.h does.
  int64_t num_nextn_predict_layers = 0;
  MoeConfig moe;
  MlaConfig mla;
  YarnConfig yarn;  // used when rope_scaling.type == "yarn"
  // KV cache row widths per token and layer: K (GQA: kv_dim; MLA: latent +
  // rope key) and V (GQA: kv_dim; MLA: 0, values come from the latent).
  int64_t cache_k_dim() const {
    return mla.kv_lora_rank > 0 ? mla.kv_lora_rank + mla.qk_rope_head_dim : kv_dim();
  }
  int64_t cache_v_dim() const { return mla.kv_lora_rank > 0 ? 0 : kv_dim(); }

  int64_t q_dim() const { return num_heads * head_dim; }
  int64_t kv_dim() const { return num_kv_heads * head_dim; }
};

}  // namespace deepinfer
