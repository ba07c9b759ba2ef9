// Top-k selection for mixture-of-experts routing: the k largest scores in
// descending order, ties broken towards the lower id, NaN ranked below every
// number (so a NaN is picked only when fewer than k numbers exist).
// Thread-safety: pure.
#pragma once

#include <cstdint>

namespace deepinfer::cpu {

// ids[0..k) / vals[0..k) = the k best (id, score) pairs of scores[0..n), best
// first. Requires 0 <= k <= n. vals may be null.
void TopK(const float* scores, int64_t n, int64_t k, int32_t* ids, float* vals);

}  // namespace deepinfer::cpu
