// Activation quantization (activations.h) with AVX-512: one block of 32 is
// two zmm. Reproduces the scalar QuantizeToken bit for bit, which is what
// lets every ISA level see the same int8 activations:
//   - amax: vmaxps(|x|, acc) returns acc when |x| is NaN, like std::fmax;
//     a max is exact in any order.
//   - d = amax / 127 and 1 / d are the same scalar IEEE operations.
//   - round-half-away(v): t = trunc(v); v - t is exact, so |v - t| >= 0.5
//     decides the step away from zero exactly (adding 0.5 and truncating
//     would not: 0.49999997 + 0.5 rounds up to 1).
//   - NaN -> 0, then clamp to [-127, 127]; infinities clamp like the scalar.
#include <immintrin.h>

#include <cstring>

#include "backend/cpu/kernels_avx512.h"

namespace deepinfer::cpu {
namespace {

inline __m512i QuantizeHalf(__m512 x, __m512 id) {
  const __m512 v = _mm512_mul_ps(x, id);
  const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m512 frac = _mm512_abs_ps(_mm512_sub_ps(v, t));
  const __mmask16 away = _mm512_cmp_ps_mask(frac, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  const __m512 one = _mm512_or_ps(_mm512_set1_ps(1.0f), _mm512_and_ps(v, _mm512_set1_ps(-0.0f)));
  __m512 r = _mm512_mask_add_ps(t, away, t, one);
  r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q), _mm512_setzero_ps());
  r = _mm512_min_ps(_mm512_max_ps(r, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
  return _mm512_cvttps_epi32(r);  // r is integral: the conversion is exact
}

void QuantizeBlock(const float* x, int8_t* q, float* d_out, int32_t* sum_out) {
  const __m512 lo = _mm512_loadu_ps(x), hi = _mm512_loadu_ps(x + 16);
  const __m512 m = _mm512_max_ps(_mm512_abs_ps(hi), _mm512_max_ps(_mm512_abs_ps(lo), _mm512_setzero_ps()));
  const float amax = _mm512_reduce_max_ps(m);
  const float d = amax / 127.0f;
  const __m512 id = _mm512_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
  const __m512i qlo = QuantizeHalf(lo, id), qhi = QuantizeHalf(hi, id);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtepi32_epi8(qlo));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16), _mm512_cvtepi32_epi8(qhi));
  *d_out = d;
  *sum_out = _mm512_reduce_add_epi32(_mm512_add_epi32(qlo, qhi));
}

}  // namespace

void QuantizeTokenAvx512(const float* x_t, int64_t t, Int8Activations* out) {
  QuantizeTokenBlocks(x_t, t, out, QuantizeBlock);
}

}  // namespace deepinfer::cpu
