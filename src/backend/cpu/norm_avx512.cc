// AVX-512 RMSNorm: squares summed in double, 2 x 8 lanes per 16 floats, then
// a fixed-order horizontal sum; the scaling is 16 floats at a time.
#include <immintrin.h>

#include <cmath>

#include "backend/cpu/norm_kernel.h"

namespace deepinfer::cpu {

void RmsNormAvx512(const float* x, const float* weight, int64_t n, double eps, float* out) {
  __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    const __m512d a = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    const __m512d b = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    lo = _mm512_fmadd_pd(a, a, lo);
    hi = _mm512_fmadd_pd(b, b, hi);
  }
  double sum_sq = _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
  for (int64_t t = i; t < n; ++t) sum_sq += static_cast<double>(x[t]) * x[t];
  const float inv = static_cast<float>(1.0 / std::sqrt(sum_sq / static_cast<double>(n) + eps));
  const __m512 vinv = _mm512_set1_ps(inv);
  for (i = 0; i < n; i += 16) {
    const __mmask16 m =
        n - i >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512 v = _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), vinv),
                                   _mm512_maskz_loadu_ps(m, weight + i));
    _mm512_mask_storeu_ps(out + i, m, v);
  }
}

}  // namespace deepinfer::cpu
