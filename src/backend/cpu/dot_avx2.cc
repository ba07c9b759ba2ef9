// AVX2 Dot family (dot.h): dot_kernels.h over two ymm (lanes 0-7, 8-15).
#include <immintrin.h>

#include "backend/cpu/dot.h"
#include "backend/cpu/dot_kernels.h"

namespace deepinfer::cpu {
namespace {

struct Ymm2 {
  struct Reg {
    __m256 lo, hi;
  };
  // The maskload / maskstore mask of lanes [0, n) of an 8-lane half.
  static __m256i First8(int64_t n) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n < 0 ? 0 : n > 8 ? 8 : n)), lane);
  }
  static Reg Zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static Reg Load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
  static Reg LoadFirst(const float* p, int64_t n) {
    if (n >= 16) return Load(p);
    return {_mm256_maskload_ps(p, First8(n)), _mm256_maskload_ps(p + 8, First8(n - 8))};
  }
  static void StoreFirst(float* p, int64_t n, Reg v) {
    if (n >= 16) {
      _mm256_storeu_ps(p, v.lo);
      _mm256_storeu_ps(p + 8, v.hi);
      return;
    }
    _mm256_maskstore_ps(p, First8(n), v.lo);
    _mm256_maskstore_ps(p + 8, First8(n - 8), v.hi);
  }
  static Reg Set1(float x) { return {_mm256_set1_ps(x), _mm256_set1_ps(x)}; }
  static Reg Fma(Reg a, Reg b, Reg c) {
    return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
  }
  static float Combine(Reg acc) {
    const __m256 s8 = _mm256_add_ps(acc.lo, acc.hi);  // l += l + 8
    const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
  }
};

}  // namespace

float DotAvx2(const float* a, const float* b, int64_t n) { return dot_kernels::Dot<Ymm2>(a, b, n); }

void AddScaledAvx2(float* y, float a, const float* x, int64_t n) { dot_kernels::AddScaled<Ymm2>(y, a, x, n); }

void DotRowsAvx2(const float* a, const float* const* rows, int64_t count, int64_t n, float* out) {
  dot_kernels::DotRows<Ymm2>(a, rows, count, n, out);
}

void AddScaledRowsAvx2(float* y, const float* p, const float* const* rows, int64_t count, int64_t n) {
  dot_kernels::AddScaledRows<Ymm2>(y, p, rows, count, n);
}

void DotRowsBlockAvx2(const float* const* a, int64_t num_a, const float* const* rows, int64_t count,
                      int64_t n, float* out, int64_t out_stride) {
  dot_kernels::DotRowsBlock<Ymm2>(a, num_a, rows, count, n, out, out_stride);
}

void AddScaledRowsBlockAvx2(float* const* y, const float* p, int64_t p_stride, int64_t num_y,
                            const float* const* rows, int64_t count, int64_t n) {
  dot_kernels::AddScaledRowsBlock<Ymm2>(y, p, p_stride, num_y, rows, count, n);
}

}  // namespace deepinfer::cpu
