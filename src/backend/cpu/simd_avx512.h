// Small AVX-512 helpers shared by the *_avx512.cc kernels (include only from
// files compiled with AVX-512 flags).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace deepinfer::cpu {

// The 16-lane sums of four vectors: lane j + lane j + 8, then + 4, + 2, + 1
// (a fixed tree, so every caller reduces in the same order). Four at a time
// because a single horizontal sum is a chain of seven dependent shuffles and
// adds; here the shuffles are shared.
inline __m128 SumLanes4(__m512 a, __m512 b, __m512 c, __m512 d) {
  const __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm512_shuffle_f32x4(c, d, _MM_SHUFFLE(3, 2, 3, 2)));
  // ab: a's 8 sums (lane j + lane j + 8) in the low 256 bits, b's in the high; cd likewise.
  // quads: 128-bit block k holds the 4 sums of a, b, c, d respectively.
  const __m512 quads = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, _MM_SHUFFLE(2, 0, 2, 0)),
                                     _mm512_shuffle_f32x4(ab, cd, _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512 twos = _mm512_add_ps(quads, _mm512_permute_ps(quads, _MM_SHUFFLE(1, 0, 3, 2)));
  const __m512 ones = _mm512_add_ps(twos, _mm512_permute_ps(twos, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm512_castps512_ps128(
      _mm512_permutexvar_ps(_mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 8, 4, 0), ones));
}

// 16 (masked: m) f16 / bf16 values at src as f32. Both conversions are exact.
inline __m512 LoadF16AsF32(const void* src, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, src));
}
inline __m512 LoadBf16AsF32(const void* src, __mmask16 m) {
  const __m512i wide = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, src));
  return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}

// Lanes [0, remaining) of a 16-lane chunk (all when remaining >= 16).
inline __mmask16 TailMask(int64_t remaining) {
  return remaining >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << remaining) - 1);
}

}  // namespace deepinfer::cpu
