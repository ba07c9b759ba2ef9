#include "model/attention.h"

#include <algorithm>
#include <cmath>

#include "model/ops.h"

namespace deepinfer {

void AttendOneHead(const float* q, int64_t head, int64_t pos, const std::vector<int32_t>& block_table,
                   const KvCache& kv, const AttentionParams& p, std::vector<float>& scores, float* out) {
  const int64_t kv_head = head / (p.num_heads / p.num_kv_heads);
  const int64_t lo = p.window > 0 ? std::max<int64_t>(0, pos - p.window + 1) : 0;
  const int64_t n_keys = pos - lo + 1;
  const int64_t bs = kv.block_size();
  const int64_t head_offset = kv_head * p.head_dim;
  scores.resize(static_cast<size_t>(n_keys));

  float max_score = -INFINITY;
  for (int64_t j = lo; j <= pos; ++j) {
    const float* k = kv.K(p.layer, block_table[j / bs], j % bs) + head_offset;
    const float s = ops::Dot(q, k, p.head_dim) * p.scale;
    scores[j - lo] = s;
    max_score = std::max(max_score, s);
  }
  float sum = 0.0f;
  for (int64_t i = 0; i < n_keys; ++i) {
    scores[i] = std::exp(scores[i] - max_score);
    sum += scores[i];
  }
  const float inv_sum = 1.0f / sum;
  std::fill(out, out + p.head_dim, 0.0f);
  for (int64_t j = lo; j <= pos; ++j) {
    const float* v = kv.V(p.layer, block_table[j / bs], j % bs) + head_offset;
    const float w = scores[j - lo] * inv_sum;
    for (int64_t d = 0; d < p.head_dim; ++d) {
      out[d] += w * v[d];
    }
  }
}

}  // namespace deepinfer
