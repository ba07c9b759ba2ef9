#include <cmath>

#include "backend/cpu/isa.h"
#include "backend/cpu/norm_kernel.h"

namespace deepinfer::cpu {

void RmsNormScalar(const float* x, const float* weight, int64_t n, double eps, float* out) {
  double sum_sq = 0.0;
  for (int64_t i = 0; i < n; ++i) sum_sq += static_cast<double>(x[i]) * x[i];
  const float inv = static_cast<float>(1.0 / std::sqrt(sum_sq / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i) out[i] = (x[i] * inv) * weight[i];
}

void RmsNorm(const float* x, const float* weight, int64_t n, double eps, float* out) {
  static const bool avx512 = ActiveIsa() == Isa::kAvx512;
  if (avx512) {
    RmsNormAvx512(x, weight, n, eps, out);
  } else {
    RmsNormScalar(x, weight, n, eps, out);
  }
}

}  // namespace deepinfer::cpu
