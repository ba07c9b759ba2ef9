// llama.cpp's GGUF `deepseek2` convention (DeepSeek-V2/V3 and their MLA +
// MoE + MTP layers): the metadata keys read into a ModelConfig (synth/synth.cc
// writes the same keys for a synth model). Tensor names are bound by mla.cc /
// moe.cc / mtp.cc.
//
// Keys (`deepseek2.` prefix):
//   attention.kv_lora_rank, attention.q_lora_rank (absent: q_proj directly),
//   attention.key_length_mla / value_length_mla: the per-head q/k and v dims
//     (current converters; then attention.key_length / value_length describe
//     the latent cache, kv_lora + rope and kv_lora, and the k/v up-projection
//     is split into attn_k_b + attn_v_b). Legacy files lack the *_mla keys:
//     key_length / value_length are the head dims and attn_kv_b is unsplit.
//   rope.dimension_count = qk_rope_head_dim; the rest of the q/k head is nope.
//   expert_count, expert_used_count, expert_feed_forward_length,
//   expert_shared_count (shared experts of expert_feed_forward_length each),
//   leading_dense_block_count, expert_weights_norm (default false),
//   expert_weights_scale (default 1), expert_gating_func (1 softmax, the
//   default; 2 sigmoid), expert_group_count / expert_group_used_count;
//   e_score_correction_bias = the tensor blk.N.exp_probs_b.bias when present.
//   rope.scaling.type "yarn" with factor, original_context_length,
//   yarn_log_multiplier (= 0.1 * mscale_all_dim; llama.cpp assumes mscale ==
//   mscale_all_dim), yarn_beta_fast / yarn_beta_slow (default 32 / 1).
//   nextn_predict_layers: MTP blocks counted in block_count (read by config_gguf.cc).
//
// Semantics that differ from the HF configs: routing renormalizes iff
// expert_weights_norm and always multiplies by expert_weights_scale (what
// llama.cpp computes); the group score is the group's best score, or the sum
// of its top-2 when a correction bias is present (DeepSeek's definitions; note
// llama.cpp uses top-2 sums for both).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "model/model_config.h"

namespace deepinfer {

class GgufFile;

// llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE_* (the `expert_gating_func` key).
inline constexpr int64_t kGgufGatingSoftmax = 1;
inline constexpr int64_t kGgufGatingSigmoid = 2;

// Fills the MLA dims, head_dim / rope_dim / num_kv_heads, MoE routing and
// YaRN of `c`, whose generic fields (hidden size, layers, heads, ...)
// config_gguf.cc has read. Errors name the key. (Which of DeepSeek-V2/V3 the
// file is, model/archs/deepseek.cc decides from the routing read here.)
Status ReadDeepseek2GgufConfig(const GgufFile& gguf, ModelConfig& c);

// The converter's split of HF kv_b_proj f32 [heads * (nope + v), lora] (per
// head: nope rows of W_uk, then v rows of W_uv): `keys` gives attn_k_b
// [heads, lora, nope] (each head's W_uk transposed), else attn_v_b [heads, v, lora].
std::vector<float> SplitMlaKvB(const std::vector<float>& kv_b, int64_t heads, int64_t nope, int64_t v,
                               int64_t lora, bool keys);

}  // namespace deepinfer
