// Causal attention over the paged K/V cache for a whole step's tokens, on
// the flash-style kernel of backend/cpu/attention_kernel.h (online softmax,
// no score matrix).
//
// Work is cut into (token, KV head, key split) items: the query heads that
// share a KV head are processed together (GQA reads each K/V row once per
// group), and a long key range is split at multiples of kAttentionSplitKeys
// absolute positions, the pieces run on different threads and their partial
// states are merged in position order. Every cut depends only on the token's
// own position and window, so a token's output is bit-identical whatever else
// is in the batch and however many threads run it (batch invariance).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/thread_pool.h"
#include "model/model.h"

namespace deepinfer {

inline constexpr int64_t kAttentionSplitKeys = 256;

struct AttentionParams {
  int64_t layer = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;  // query head h reads kv head h / (num_heads / num_kv_heads)
  int64_t head_dim = 0;
  int64_t window = 0;  // 0 = full; W > 0 = keys at positions > pos - W
  float scale = 1.0f;  // usually 1 / sqrt(head_dim)
};

// out f32 [n_tokens, num_heads * head_dim]: for token t at position
// positions[t], softmax(scale * q . K[j]) . V[j] over its sequence's key
// positions j in [lo, positions[t]] (lo = 0, or pos - window + 1), where the
// sequence's blocks are *block_tables[t]. q is f32 [n_tokens, num_heads * head_dim]
// (RoPE applied); the tokens' own K/V must already be in the cache.
void PagedAttention(const float* q, int64_t n_tokens, const int64_t* positions,
                    const std::vector<const std::vector<int32_t>*>& block_tables, const KvCache& kv,
                    const AttentionParams& p, ThreadPool& pool, float* out);

// The same for one query head of one token (`scores` is unused scratch, kept
// for existing callers); out is f32 [head_dim].
void AttendOneHead(const float* q, int64_t head, int64_t pos, const std::vector<int32_t>& block_table,
                   const KvCache& kv, const AttentionParams& p, std::vector<float>& scores, float* out);

}  // namespace deepinfer
