// Causal attention over a paged K/V cache for a whole step's tokens, on the
// flash-style kernel of attention_kernel.h (online softmax, no score
// matrix). model/ops.h's PagedAttention describes the model's KvCache to it.
//
// Work is cut into (token, KV head, key split) items: the query heads that
// share a KV head are processed together (GQA reads each K/V row once per
// group), and a long key range is split at multiples of kAttentionSplitKeys
// absolute positions, the pieces run on different threads and their partial
// states are merged in position order. Every cut depends only on the token's
// own position and window, so a token's output is bit-identical whatever else
// is in the batch and however many threads run it (batch invariance).
// Consecutive positions of one sequence in the batch (a prefill chunk, the
// rows of a verification) share an item per KV head and split, reading each
// K/V tile once for all of them; each keeps its own cuts and arithmetic.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/cpu/attention_kernel.h"
#include "core/thread_pool.h"

namespace deepinfer::cpu {

inline constexpr int64_t kAttentionSplitKeys = 256;

// One layer of a paged K/V cache: the view of its KV head 0 (block_table
// unset: each token brings its own) and the bytes between consecutive
// heads (head h's rows start h * k_head / h * v_head bytes further).
struct PagedKvLayer {
  PagedKvView head0;
  int64_t k_head = 0, v_head = 0;
};

struct AttentionShape {
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;  // query head h reads kv head h / (num_heads / num_kv_heads)
  int64_t head_dim = 0;
  int64_t window = 0;    // 0 = full; W > 0 = keys at positions > pos - W
  float scale = 1.0f;    // usually 1 / sqrt(head_dim)
  float softcap = 0.0f;  // > 0: scores become softcap * tanh(score / softcap) (Gemma-2)
};

// The 16-bit K/V element type (f16 or bf16) the attention kernels of the
// active ISA level decode fastest (--kv-cache-dtype auto; docs/kv-cache.md
// has the measurement).
DType FasterHalfKvDType();

// Causal attention of each token over its own sequence's keys (blocks
// *block_tables[t], window `p.window`) in layer `kv`: the contract of
// ops::PagedAttention (model/ops.h). q, out f32 [n_tokens, num_heads * head_dim].
void PagedAttention(const float* q, int64_t n_tokens, const int64_t* positions,
                    const std::vector<const std::vector<int32_t>*>& block_tables, const PagedKvLayer& kv,
                    const AttentionShape& p, ThreadPool& pool, float* out);

// The same for one query head of one token; out is f32 [head_dim]. The same
// key splits as PagedAttention, so the same bits.
void AttendOneHead(const float* q, int64_t head, int64_t pos, const std::vector<int32_t>& block_table,
                   const PagedKvLayer& kv, const AttentionShape& p, float* out);

}  // namespace deepinfer::cpu
