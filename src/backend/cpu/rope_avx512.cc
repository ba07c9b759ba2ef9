// AVX-512 RoPE rotation. NeoX: the two halves are separate runs, 16 pairs per
// step. Interleaved: 8 pairs per vector; each lane's partner comes from a
// pair swap (permute), with cos/sin spread to [c0 c0 c1 c1 ...]. The same
// products and sums as the scalar version (the compiler may fuse a multiply
// into the add, so the two agree to rounding, not to the bit).
#include <immintrin.h>

#include "backend/cpu/rope_kernel.h"

namespace deepinfer::cpu {

namespace {
inline __mmask16 TailMask(int64_t remaining) {
  return remaining >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << remaining) - 1);
}
}  // namespace

void RopeRotateAvx512(float* x, int64_t n_heads, int64_t head_dim, const RopeRotation& r) {
  const int64_t half = r.half;
  if (!r.interleaved) {
    for (int64_t h = 0; h < n_heads; ++h) {
      float* a = x + h * head_dim;
      float* b = a + half;
      for (int64_t i = 0; i < half; i += 16) {
        const __mmask16 m = TailMask(half - i);
        const __m512 c = _mm512_maskz_loadu_ps(m, r.cos + i), s = _mm512_maskz_loadu_ps(m, r.sin + i);
        const __m512 x0 = _mm512_maskz_loadu_ps(m, a + i), x1 = _mm512_maskz_loadu_ps(m, b + i);
        _mm512_mask_storeu_ps(a + i, m, _mm512_sub_ps(_mm512_mul_ps(x0, c), _mm512_mul_ps(x1, s)));
        _mm512_mask_storeu_ps(b + i, m, _mm512_add_ps(_mm512_mul_ps(x0, s), _mm512_mul_ps(x1, c)));
      }
    }
    return;
  }
  // Interleaved: lane 2i holds a (even), lane 2i+1 holds b (odd).
  const __m512i spread = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
  const __mmask16 odd = 0xAAAA;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* head = x + h * head_dim;
    for (int64_t i = 0; i < half; i += 8) {
      const int64_t pairs = half - i < 8 ? half - i : 8;
      const __mmask16 m = TailMask(2 * pairs);
      const __mmask16 m8 = TailMask(pairs);
      const __m512 c = _mm512_permutexvar_ps(spread, _mm512_maskz_loadu_ps(m8, r.cos + i));
      const __m512 s = _mm512_permutexvar_ps(spread, _mm512_maskz_loadu_ps(m8, r.sin + i));
      const __m512 v = _mm512_maskz_loadu_ps(m, head + 2 * i);
      const __m512 swapped = _mm512_permute_ps(v, 0xB1);  // [b0 a0 b1 a1 ...]
      // even: a c - b s; odd: b c + a s.
      const __m512 prod_c = _mm512_mul_ps(v, c);
      const __m512 prod_s = _mm512_mul_ps(swapped, s);
      const __m512 even = _mm512_sub_ps(prod_c, prod_s);
      // Scalar computes b' = a s + b c: the same two products, added in that order.
      const __m512 odd_v = _mm512_add_ps(prod_s, prod_c);
      _mm512_mask_storeu_ps(head + 2 * i, m, _mm512_mask_mov_ps(even, odd, odd_v));
    }
  }
}

}  // namespace deepinfer::cpu
