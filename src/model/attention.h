// Causal attention of one query token over its sequence's paged K/V cache.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model.h"

namespace deepinfer {

struct AttentionParams {
  int64_t layer = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;  // query head h reads kv head h / (num_heads / num_kv_heads)
  int64_t head_dim = 0;
  int64_t window = 0;  // 0 = full; W > 0 = keys at positions > pos - W
  float scale = 1.0f;  // usually 1 / sqrt(head_dim)
};

// out (f32 [head_dim]) = softmax(scale * q . K[j]) . V[j] over the key
// positions j in [lo, pos] (lo = 0, or pos - window + 1) of the sequence
// whose blocks are `block_table`, for query head `head`; q is f32 [head_dim].
// Keys are visited in position order, so the result depends only on the
// sequence's contents, never on the rest of the batch. `scores` is scratch.
void AttendOneHead(const float* q, int64_t head, int64_t pos, const std::vector<int32_t>& block_table,
                   const KvCache& kv, const AttentionParams& p, std::vector<float>& scores, float* out);

}  // namespace deepinfer
