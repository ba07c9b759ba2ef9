#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "backend/cpu/topk.h"

namespace deepinfer::cpu {

namespace {

// Strict "ranks before": larger score, then lower id; NaN after all numbers.
inline bool Before(float va, int32_t a, float vb, int32_t b) {
  const bool na = std::isnan(va), nb = std::isnan(vb);
  if (na != nb) return nb;
  if (!na && va != vb) return va > vb;
  return a < b;
}

}  // namespace

void TopK(const float* scores, int64_t n, int64_t k, int32_t* ids, float* vals) {
  if (k <= 0) return;
  // Small k (routing: 2..8 of 8..256 experts): one pass with an insertion-sorted list.
  if (k <= 16) {
    int64_t filled = 0;
    for (int64_t i = 0; i < n; ++i) {
      const int32_t id = static_cast<int32_t>(i);
      const float v = scores[i];
      if (filled == k && !Before(v, id, scores[ids[k - 1]], ids[k - 1])) continue;
      int64_t j = filled < k ? filled++ : k - 1;
      while (j > 0 && Before(v, id, scores[ids[j - 1]], ids[j - 1])) {
        ids[j] = ids[j - 1];
        --j;
      }
      ids[j] = id;
    }
  } else {
    std::vector<int32_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int32_t a, int32_t b) { return Before(scores[a], a, scores[b], b); });
    std::copy(order.begin(), order.begin() + k, ids);
  }
  if (vals != nullptr) {
    for (int64_t j = 0; j < k; ++j) vals[j] = scores[ids[j]];
  }
}

}  // namespace deepinfer::cpu
