// Multi-head latent attention (DeepSeek-V2/V3) over a cache that holds per
// token one row [c_kv (lora) | k_pe (rope)] of the view's dtype (f32, or
// 16-/8-bit rows decoded to f32 one row at a time; model/mla.h has the math). The absorbed form runs
// a thread's heads of one token as a block over their shared latent rows (DotRowsBlock /
// AddScaledRowsBlock), the softmax per (token, head) - max, exp, a double sum - and every dot
// product has the fixed-order Dot's bits (dot.h); its up-projections are MatMuls, batch-invariant
// too (matmul.h): a (token, head)'s result depends only on its own query and keys, never on the
// batch, the thread split or which heads share its block.
// Thread-safety: pure apart from per-thread scratch.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/cpu/paged_attention.h"
#include "core/thread_pool.h"
#include "tensor/tensor_view.h"

namespace deepinfer::cpu {

struct PackedLayout;

struct MlaShape {
  int64_t num_heads = 0;
  int64_t nope = 0;    // qk_nope_head_dim
  int64_t rope = 0;    // qk_rope_head_dim
  int64_t v_dim = 0;   // v_head_dim
  int64_t lora = 0;    // kv_lora_rank
  int64_t window = 0;  // 0 = full; W > 0 = keys at positions > pos - W
  float scale = 1.0f;  // softmax scale
  // Absorbed form: scores and values in the latent space (W_uk^T q, then
  // W_uv (sum_j p_j c_j)); otherwise keys and values expanded per key.
  bool absorb = true;
};

// One head's up-projection as MatMul reads it: rows [h * rows, (h + 1) *
// rows) of w_uk_t or w_uv as a matrix of their own, in file layout (packed
// null) or packed (packed_weights.h).
struct MlaHeadMatrix {
  const TensorView* w = nullptr;
  const PackedLayout* packed = nullptr;
};

// out f32 [n_tokens, num_heads * v_dim] from q f32 [n_tokens, num_heads *
// (nope + rope)] (RoPE applied to each head's last `rope` floats): for token
// t at positions[t], softmax over keys j in [lo, positions[t]] of its
// sequence (blocks *block_tables[t]) of scale * (q_nope . W_uk c_j + q_pe .
// k_pe_j), times W_uv c_j. kv: the latent rows (only head0's k, block_size
// and block / slot strides are read). The up-projections: w_uk_t [num_heads
// * lora, nope], per head W_uk transposed (row r = latent dim r), and w_uv
// [num_heads * v_dim, lora], per head W_uv, in any type MatMul reads.
//
// The absorbed form runs them per head as MatMuls (one MatMulGrouped of all
// heads per projection: q_lat = W_uk^T q_nope, then out = W_uv o_lat), on
// uk_heads / uv_heads (num_heads each; the model's packed copies) or, when
// those are empty, on row views of w_uk_t / w_uv in file layout. A quantized
// type quantizes the activations as any MatMul does (matmul.h). The naive
// form (a test path) reads w_uk_t / w_uv exactly, with f32 activations.
void MlaAttention(const float* q, int64_t n_tokens, const int64_t* positions,
                  const std::vector<const std::vector<int32_t>*>& block_tables, const PagedKvLayer& kv,
                  const TensorView& w_uk_t, const TensorView& w_uv, std::span<const MlaHeadMatrix> uk_heads,
                  std::span<const MlaHeadMatrix> uv_heads, const MlaShape& s, ThreadPool& pool, float* out);

}  // namespace deepinfer::cpu
