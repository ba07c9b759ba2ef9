// AVX-512 SiLU-gated product and softmax on the shared vector exp.
#include <immintrin.h>

#include <cmath>

#include "backend/cpu/activation_kernels.h"
#include "backend/cpu/vec_exp_avx512.h"

namespace deepinfer::cpu {

namespace {
inline __mmask16 TailMask(int64_t remaining) {
  return remaining >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << remaining) - 1);
}
}  // namespace

void SiluMulAvx512(float* gate, const float* up, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = TailMask(n - i);
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512 e = ExpAvx512(_mm512_sub_ps(_mm512_setzero_ps(), g));
    const __m512 silu = _mm512_div_ps(g, _mm512_add_ps(one, e));
    _mm512_mask_storeu_ps(gate + i, m, _mm512_mul_ps(silu, _mm512_maskz_loadu_ps(m, up + i)));
  }
}

void SoftmaxAvx512(float* x, int64_t n) {
  __m512 vmax = _mm512_set1_ps(-INFINITY);
  for (int64_t i = 0; i < n; i += 16) {
    vmax = _mm512_max_ps(vmax, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), TailMask(n - i), x + i));
  }
  const __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(vmax));
  __m512d sum_lo = _mm512_setzero_pd(), sum_hi = _mm512_setzero_pd();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = TailMask(n - i);
    const __m512 e = _mm512_maskz_mov_ps(k, ExpAvx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), m)));
    _mm512_mask_storeu_ps(x + i, k, e);
    sum_lo = _mm512_add_pd(sum_lo, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    sum_hi = _mm512_add_pd(sum_hi, _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(e), 1))));
  }
  const __m512 inv = _mm512_set1_ps(static_cast<float>(1.0 / _mm512_reduce_add_pd(_mm512_add_pd(sum_lo, sum_hi))));
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = TailMask(n - i);
    _mm512_mask_storeu_ps(x + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), inv));
  }
}

}  // namespace deepinfer::cpu
