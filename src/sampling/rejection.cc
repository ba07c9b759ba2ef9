#include "sampling/rejection.h"

#include <algorithm>

namespace deepinfer {

bool KeepDraft(float p_d, float q_d, double u) {
  if (q_d <= 0.0f) return p_d > 0.0f;
  return u * static_cast<double>(q_d) < static_cast<double>(p_d);
}

namespace {
// The index where the cumulative sum of weight(i) first exceeds u * total.
template <typename Weight>
int32_t DrawByCumulative(int64_t vocab, double u, Weight weight) {
  double total = 0.0;
  for (int64_t i = 0; i < vocab; ++i) total += weight(i);
  const double target = u * total;
  double cumulative = 0.0;
  int32_t last_positive = 0;
  for (int64_t i = 0; i < vocab; ++i) {
    const double w = weight(i);
    if (w <= 0.0) continue;
    cumulative += w;
    last_positive = static_cast<int32_t>(i);
    if (target < cumulative) return last_positive;
  }
  return last_positive;  // target == total after rounding
}
}  // namespace

int32_t SampleResidual(const float* p, const float* q, int64_t vocab, double u) {
  auto residual = [&](int64_t i) { return std::max(0.0, static_cast<double>(p[i]) - q[i]); };
  const int32_t t = DrawByCumulative(vocab, u, residual);
  if (residual(t) > 0.0) return t;  // an all-zero residual draws nothing
  return DrawByCumulative(vocab, u, [&](int64_t i) { return static_cast<double>(p[i]); });
}

}  // namespace deepinfer
