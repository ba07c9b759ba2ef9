// AVX-512 Dot / AddScaled (dot.h): the scalar operations lane for lane, so
// the same bits (products rounded, then added; the scalar combine tree).
#include <immintrin.h>

#include "backend/cpu/dot.h"

namespace deepinfer::cpu {

float DotAvx512(const float* a, const float* b, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
  }
  // l += l + 8, + 4, + 2, + 1.
  const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  const float sum = _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
  float tail = 0.0f;
  for (; i < n; ++i) tail += a[i] * b[i];
  return sum + tail;
}

void AddScaledAvx512(float* y, float a, const float* x, int64_t n) {
  const __m512 av = _mm512_set1_ps(a);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m =
        n - i >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512 v =
        _mm512_add_ps(_mm512_maskz_loadu_ps(m, y + i), _mm512_mul_ps(av, _mm512_maskz_loadu_ps(m, x + i)));
    _mm512_mask_storeu_ps(y + i, m, v);
  }
}

}  // namespace deepinfer::cpu
