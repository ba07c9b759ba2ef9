// exp(x) for 16 floats with AVX-512 (include only from *_avx512.cc files).
// Range reduction x = n ln2 + r (|r| <= ln2 / 2, ln2 split in two parts for
// exactness) and a degree-6 Taylor polynomial for e^r, then 2^n by scalef:
// relative error about 2e-7 over the float range; exp(-inf) = 0,
// large inputs saturate to +inf.
#pragma once

#include <immintrin.h>

namespace deepinfer::cpu {

inline __m512 ExpAvx512(__m512 x) {
  const __m512 log2e = _mm512_set1_ps(1.44269504088896341f);
  const __m512 ln2_hi = _mm512_set1_ps(0.693359375f);
  const __m512 ln2_lo = _mm512_set1_ps(-2.12194440e-4f);
  // Below -104 the result is 0 in float; above 88.8 it is +inf.
  x = _mm512_max_ps(x, _mm512_set1_ps(-104.0f));
  x = _mm512_min_ps(x, _mm512_set1_ps(88.8f));
  const __m512 n =
      _mm512_roundscale_ps(_mm512_mul_ps(x, log2e), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, ln2_hi, x);
  r = _mm512_fnmadd_ps(n, ln2_lo, r);
  __m512 p = _mm512_set1_ps(1.0f / 720);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

}  // namespace deepinfer::cpu
