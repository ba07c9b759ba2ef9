// AVX-512 Dot family (dot.h): dot_kernels.h over one zmm of 16 lanes.
#include <immintrin.h>

#include "backend/cpu/dot.h"
#include "backend/cpu/dot_kernels.h"

namespace deepinfer::cpu {
namespace {

struct Zmm {
  using Reg = __m512;
  static __mmask16 First(int64_t n) {
    return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1);
  }
  static Reg Zero() { return _mm512_setzero_ps(); }
  static Reg Load(const float* p) { return _mm512_loadu_ps(p); }
  static Reg LoadFirst(const float* p, int64_t n) { return _mm512_maskz_loadu_ps(First(n), p); }
  static void StoreFirst(float* p, int64_t n, Reg v) { _mm512_mask_storeu_ps(p, First(n), v); }
  static Reg Set1(float x) { return _mm512_set1_ps(x); }
  static Reg Fma(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static float Combine(Reg acc) {
    const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
    const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
  }
};

}  // namespace

float DotAvx512(const float* a, const float* b, int64_t n) { return dot_kernels::Dot<Zmm>(a, b, n); }

void AddScaledAvx512(float* y, float a, const float* x, int64_t n) {
  dot_kernels::AddScaled<Zmm>(y, a, x, n);
}

void DotRowsAvx512(const float* a, const float* const* rows, int64_t count, int64_t n, float* out) {
  dot_kernels::DotRows<Zmm>(a, rows, count, n, out);
}

void AddScaledRowsAvx512(float* y, const float* p, const float* const* rows, int64_t count, int64_t n) {
  dot_kernels::AddScaledRows<Zmm>(y, p, rows, count, n);
}

void DotRowsBlockAvx512(const float* const* a, int64_t num_a, const float* const* rows, int64_t count,
                        int64_t n, float* out, int64_t out_stride) {
  dot_kernels::DotRowsBlock<Zmm>(a, num_a, rows, count, n, out, out_stride);
}

void AddScaledRowsBlockAvx512(float* const* y, const float* p, int64_t p_stride, int64_t num_y,
                              const float* const* rows, int64_t count, int64_t n) {
  dot_kernels::AddScaledRowsBlock<Zmm>(y, p, p_stride, num_y, rows, count, n);
}

}  // namespace deepinfer::cpu
