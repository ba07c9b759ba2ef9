// AVX-512 Dot / AddScaled (dot.h): the scalar operations lane for lane, so
// the same bits (products rounded, then added; the scalar combine tree).
#include <immintrin.h>

#include <algorithm>
#include <array>

#include "backend/cpu/dot.h"

namespace deepinfer::cpu {

namespace {

// The scalar combine of 16 lane sums: l += l + 8, + 4, + 2, + 1.
inline float CombineLanes(__m512 acc) {
  const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

// Dot of a with R rows at once (R independent addition chains).
template <int R>
void DotTile(const float* a, const float* const* rows, int64_t n, float* out) {
  __m512 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 av = _mm512_loadu_ps(a + i);
    for (int r = 0; r < R; ++r)
      acc[r] = _mm512_add_ps(acc[r], _mm512_mul_ps(av, _mm512_loadu_ps(rows[r] + i)));
  }
  for (int r = 0; r < R; ++r) {
    float tail = 0.0f;
    for (int64_t t = i; t < n; ++t) tail += a[t] * rows[r][t];
    out[r] = CombineLanes(acc[r]) + tail;
  }
}

// Dot of H vectors a with K rows: H x K independent chains (16 registers at
// 4 x 4), each row chunk loaded once for the H vectors. Each (h, k) chain is
// DotTile's chain, so the same bits.
template <int H, int K>
void DotBlockTile(const float* const* a, const float* const* rows, int64_t n, float* out,
                  int64_t out_stride) {
  __m512 acc[H][K];
  for (int h = 0; h < H; ++h)
    for (int k = 0; k < K; ++k) acc[h][k] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 rv[K];
    for (int k = 0; k < K; ++k) rv[k] = _mm512_loadu_ps(rows[k] + i);
    for (int h = 0; h < H; ++h) {
      const __m512 av = _mm512_loadu_ps(a[h] + i);
      for (int k = 0; k < K; ++k) acc[h][k] = _mm512_add_ps(acc[h][k], _mm512_mul_ps(av, rv[k]));
    }
  }
  for (int h = 0; h < H; ++h) {
    for (int k = 0; k < K; ++k) {
      float tail = 0.0f;
      for (int64_t t = i; t < n; ++t) tail += a[h][t] * rows[k][t];
      out[h * out_stride + k] = CombineLanes(acc[h][k]) + tail;
    }
  }
}

using DotBlockFn = void (*)(const float* const*, const float* const*, int64_t, float*, int64_t);
template <int H>
constexpr std::array<DotBlockFn, 4> kDotBlockRow = {&DotBlockTile<H, 1>, &DotBlockTile<H, 2>,
                                                    &DotBlockTile<H, 3>, &DotBlockTile<H, 4>};
// [H - 1][K - 1]: the tile for H vectors and K rows.
constexpr std::array<std::array<DotBlockFn, 4>, 4> kDotBlockTiles = {kDotBlockRow<1>, kDotBlockRow<2>,
                                                                     kDotBlockRow<3>, kDotBlockRow<4>};

// AddScaledRows for H outputs at once: 64 floats of each y[h] in registers
// (4 x H chains) while the rows pass in order; each row chunk loaded once for
// the H outputs. Per element the same operations as AddScaledRowsAvx512.
template <int H>
void AddScaledBlockTile(float* const* y, const float* p, int64_t p_stride, const float* const* rows,
                        int64_t count, int64_t n) {
  for (int64_t i = 0; i < n; i += 64) {
    __mmask16 m[4];
    __m512 acc[H][4];
    for (int c = 0; c < 4; ++c) {
      const int64_t left = n - i - 16 * c;
      m[c] = left >= 16  ? static_cast<__mmask16>(0xffff)
             : left <= 0 ? static_cast<__mmask16>(0)
                         : static_cast<__mmask16>((1u << left) - 1);
      for (int h = 0; h < H; ++h) acc[h][c] = _mm512_maskz_loadu_ps(m[c], y[h] + i + 16 * c);
    }
    for (int64_t j = 0; j < count; ++j) {
      __m512 rv[4];
      for (int c = 0; c < 4; ++c) rv[c] = _mm512_maskz_loadu_ps(m[c], rows[j] + i + 16 * c);
      for (int h = 0; h < H; ++h) {
        const __m512 pj = _mm512_set1_ps(p[h * p_stride + j]);
        for (int c = 0; c < 4; ++c) acc[h][c] = _mm512_add_ps(acc[h][c], _mm512_mul_ps(pj, rv[c]));
      }
    }
    for (int h = 0; h < H; ++h) {
      for (int c = 0; c < 4; ++c) _mm512_mask_storeu_ps(y[h] + i + 16 * c, m[c], acc[h][c]);
    }
  }
}

}  // namespace

void DotRowsBlockAvx512(const float* const* a, int64_t num_a, const float* const* rows, int64_t count,
                        int64_t n, float* out, int64_t out_stride) {
  // Rows outer: a block of 4 rows stays in L1 while every block of vectors
  // passes over it.
  for (int64_t j = 0; j < count; j += 4) {
    const int64_t k = std::min<int64_t>(4, count - j);
    for (int64_t h = 0; h < num_a; h += 4) {
      const int64_t hh = std::min<int64_t>(4, num_a - h);
      kDotBlockTiles[static_cast<size_t>(hh - 1)][static_cast<size_t>(k - 1)](
          a + h, rows + j, n, out + h * out_stride + j, out_stride);
    }
  }
}

void AddScaledRowsBlockAvx512(float* const* y, const float* p, int64_t p_stride, int64_t num_y,
                              const float* const* rows, int64_t count, int64_t n) {
  int64_t h = 0;
  for (; h + 4 <= num_y; h += 4) AddScaledBlockTile<4>(y + h, p + h * p_stride, p_stride, rows, count, n);
  switch (num_y - h) {
    case 3:
      AddScaledBlockTile<3>(y + h, p + h * p_stride, p_stride, rows, count, n);
      break;
    case 2:
      AddScaledBlockTile<2>(y + h, p + h * p_stride, p_stride, rows, count, n);
      break;
    case 1:
      AddScaledBlockTile<1>(y + h, p + h * p_stride, p_stride, rows, count, n);
      break;
    default:
      break;
  }
}

float DotAvx512(const float* a, const float* b, int64_t n) {
  float out;
  DotTile<1>(a, &b, n, &out);
  return out;
}

void DotRowsAvx512(const float* a, const float* const* rows, int64_t count, int64_t n, float* out) {
  int64_t j = 0;
  for (; j + 4 <= count; j += 4) DotTile<4>(a, rows + j, n, out + j);
  for (; j < count; ++j) DotTile<1>(a, rows + j, n, out + j);
}

void AddScaledRowsAvx512(float* y, const float* p, const float* const* rows, int64_t count, int64_t n) {
  // 64 floats of y stay in registers while every row passes (4 independent
  // chains); each element still sees the rows in order.
  for (int64_t i = 0; i < n; i += 64) {
    __mmask16 m[4];
    __m512 acc[4];
    for (int c = 0; c < 4; ++c) {
      const int64_t left = n - i - 16 * c;
      m[c] = left >= 16  ? static_cast<__mmask16>(0xffff)
             : left <= 0 ? static_cast<__mmask16>(0)
                         : static_cast<__mmask16>((1u << left) - 1);
      acc[c] = _mm512_maskz_loadu_ps(m[c], y + i + 16 * c);
    }
    for (int64_t j = 0; j < count; ++j) {
      const __m512 pj = _mm512_set1_ps(p[j]);
      for (int c = 0; c < 4; ++c) {
        acc[c] = _mm512_add_ps(acc[c], _mm512_mul_ps(pj, _mm512_maskz_loadu_ps(m[c], rows[j] + i + 16 * c)));
      }
    }
    for (int c = 0; c < 4; ++c) _mm512_mask_storeu_ps(y + i + 16 * c, m[c], acc[c]);
  }
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
