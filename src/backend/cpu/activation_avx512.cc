// AVX-512 SiLU-gated product and exp sum on the shared vector exp.
#include <immintrin.h>

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

// Four 16-lane partial sums (independent add chains), added pairwise at
// the end, then across lanes.
float SumExpAvx512(const float* x, int64_t n, float shift) {
  const __m512 s = _mm512_set1_ps(shift);
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    for (int u = 0; u < 4; ++u) {
      acc[u] = _mm512_add_ps(acc[u], ExpAvx512(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16 * u), s)));
    }
  }
  for (int u = 0; i < n; i += 16, ++u) {
    const __mmask16 m = TailMask(n - i);
    const __m512 e = ExpAvx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), s));
    acc[u] = _mm512_add_ps(acc[u], _mm512_maskz_mov_ps(m, e));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
}

}  // namespace deepinfer::cpu
