// AVX-512 RowsDotF32 (row_dot.h): the scalar lane order with one zmm of 16
// lane sums per row, four rows at a time for independent fma chains.
#include <immintrin.h>

#include <algorithm>
#include <array>

#include "backend/cpu/row_dot.h"
#include "backend/cpu/simd_avx512.h"
#include "core/check.h"

namespace deepinfer::cpu {
namespace {

// Block b's two halves as f32 integer values (lanes l and l + 16).
struct BlockHalves {
  __m512 lo, hi;
  float d;
};

inline float BlockScale(const uint8_t* blk) {
  return _cvtsh_ss(static_cast<unsigned short>(blk[0] | blk[1] << 8));
}

inline BlockHalves Q4_0Block(const uint8_t* blk) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2));
  const __m128i mask = _mm_set1_epi8(0x0f);
  const __m512i eight = _mm512_set1_epi32(8);
  const __m512i lo = _mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_and_si128(raw, mask)), eight);
  const __m512i hi =
      _mm512_sub_epi32(_mm512_cvtepu8_epi32(_mm_and_si128(_mm_srli_epi16(raw, 4), mask)), eight);
  return {_mm512_cvtepi32_ps(lo), _mm512_cvtepi32_ps(hi), BlockScale(blk)};
}

inline BlockHalves Q8_0Block(const uint8_t* blk) {
  const __m512i lo = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2)));
  const __m512i hi = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 18)));
  return {_mm512_cvtepi32_ps(lo), _mm512_cvtepi32_ps(hi), BlockScale(blk)};
}

template <int R, bool kQ4>
void BlockRows(const uint8_t* w, int64_t row_bytes, int64_t k, const float* x, float* y) {
  constexpr int64_t kBlockBytes = kQ4 ? 18 : 34;
  __m512 acc[4];
  for (int r = 0; r < 4; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t b = 0; b < k / 32; ++b) {
    const __m512 x_lo = _mm512_loadu_ps(x + b * 32), x_hi = _mm512_loadu_ps(x + b * 32 + 16);
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = w + r * row_bytes + b * kBlockBytes;
      const BlockHalves v = kQ4 ? Q4_0Block(blk) : Q8_0Block(blk);
      const __m512 s = _mm512_fmadd_ps(v.hi, x_hi, _mm512_mul_ps(v.lo, x_lo));
      acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(v.d), s, acc[r]);
    }
  }
  float sums[4];
  _mm_storeu_ps(sums, SumLanes4(acc[0], acc[1], acc[2], acc[3]));
  for (int r = 0; r < R; ++r) y[r] = sums[r];
}

// BlockRows for X vectors: each of R rows' blocks decoded once for the X
// vectors; every (vector, row) chain is BlockRows' chain and its lane sum
// the same SumLanes4 tree (an output's tree reads only its own accumulator),
// so the same bits. R = 2, X = 8: the decode is shared by 8 vectors and the 16
// accumulators stay in registers.
template <int R, int X, bool kQ4>
void BlockRowsMulti(const uint8_t* w, int64_t row_bytes, int64_t k, const float* const* xs, float* const* ys,
                    int64_t row0) {
  constexpr int64_t kBlockBytes = kQ4 ? 18 : 34;
  __m512 acc[X][R];
  for (int x = 0; x < X; ++x)
    for (int r = 0; r < R; ++r) acc[x][r] = _mm512_setzero_ps();
  for (int64_t b = 0; b < k / 32; ++b) {
    BlockHalves v[R];
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = w + r * row_bytes + b * kBlockBytes;
      v[r] = kQ4 ? Q4_0Block(blk) : Q8_0Block(blk);
    }
    for (int x = 0; x < X; ++x) {
      const __m512 x_lo = _mm512_loadu_ps(xs[x] + b * 32), x_hi = _mm512_loadu_ps(xs[x] + b * 32 + 16);
      for (int r = 0; r < R; ++r) {
        const __m512 s = _mm512_fmadd_ps(v[r].hi, x_hi, _mm512_mul_ps(v[r].lo, x_lo));
        acc[x][r] = _mm512_fmadd_ps(_mm512_set1_ps(v[r].d), s, acc[x][r]);
      }
    }
  }
  // Four (vector, row) sums per SumLanes4: each output's own tree, so the bits
  // of one BlockRows call, with half the reductions of one per vector.
  const __m512 zero = _mm512_setzero_ps();
  constexpr int kOut = X * R;
  for (int o = 0; o < kOut; o += 4) {
    __m512 v[4];
    for (int i = 0; i < 4; ++i) v[i] = o + i < kOut ? acc[(o + i) / R][(o + i) % R] : zero;
    float sums[4];
    _mm_storeu_ps(sums, SumLanes4(v[0], v[1], v[2], v[3]));
    for (int i = 0; i < 4 && o + i < kOut; ++i) ys[(o + i) / R][row0 + (o + i) % R] = sums[i];
  }
}

// X vectors (X <= 8) against all rows: 2 rows at a time, then the last one.
template <int X, bool kQ4>
void RowsMulti(const uint8_t* w, int64_t row_bytes, int64_t rows, int64_t k, const float* const* xs,
               float* const* ys) {
  static_assert(X >= 1 && X <= 8);
  int64_t r = 0;
  for (; r + 2 <= rows; r += 2) BlockRowsMulti<2, X, kQ4>(w + r * row_bytes, row_bytes, k, xs, ys, r);
  if (r < rows) BlockRowsMulti<1, X, kQ4>(w + r * row_bytes, row_bytes, k, xs, ys, r);
}

using RowsMultiFn = void (*)(const uint8_t*, int64_t, int64_t, int64_t, const float* const*, float* const*);
// [X - 1]: the kernel for X vectors.
template <bool kQ4>
constexpr std::array<RowsMultiFn, 8> kRowsMulti = {&RowsMulti<1, kQ4>, &RowsMulti<2, kQ4>, &RowsMulti<3, kQ4>,
                                                   &RowsMulti<4, kQ4>, &RowsMulti<5, kQ4>, &RowsMulti<6, kQ4>,
                                                   &RowsMulti<7, kQ4>, &RowsMulti<8, kQ4>};

template <bool kQ4>
void VectorsMulti(const uint8_t* w, int64_t row_bytes, int64_t rows, int64_t k, const float* const* xs,
                  int64_t num_x, float* const* ys) {
  // Vectors outer: a block of 8 vectors stays in L1 while the rows pass.
  for (int64_t t = 0; t < num_x; t += 8) {
    const int64_t count = std::min<int64_t>(8, num_x - t);
    kRowsMulti<kQ4>[static_cast<size_t>(count - 1)](w, row_bytes, rows, k, xs + t, ys + t);
  }
}

template <int R>
void F32Rows(const uint8_t* w, int64_t row_bytes, int64_t k, const float* x, float* y) {
  __m512 acc[4];
  for (int r = 0; r < 4; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t i = 0; i < k; i += 16) {
    const __mmask16 m = TailMask(k - i);
    const __m512 xv = _mm512_maskz_loadu_ps(m, x + i);
    for (int r = 0; r < R; ++r) {
      const float* row = reinterpret_cast<const float*>(w + r * row_bytes);
      acc[r] = _mm512_mask3_fmadd_ps(_mm512_maskz_loadu_ps(m, row + i), xv, acc[r], m);
    }
  }
  float sums[4];
  _mm_storeu_ps(sums, SumLanes4(acc[0], acc[1], acc[2], acc[3]));
  for (int r = 0; r < R; ++r) y[r] = sums[r];
}

template <template <int> class Kernel>
void Rows(const uint8_t* w, int64_t row_bytes, int64_t rows, int64_t k, const float* x, float* y) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) Kernel<4>::Run(w + r * row_bytes, row_bytes, k, x, y + r);
  for (; r < rows; ++r) Kernel<1>::Run(w + r * row_bytes, row_bytes, k, x, y + r);
}

template <int R>
struct Q4 {
  static void Run(const uint8_t* w, int64_t rb, int64_t k, const float* x, float* y) {
    BlockRows<R, true>(w, rb, k, x, y);
  }
};
template <int R>
struct Q8 {
  static void Run(const uint8_t* w, int64_t rb, int64_t k, const float* x, float* y) {
    BlockRows<R, false>(w, rb, k, x, y);
  }
};
template <int R>
struct F32 {
  static void Run(const uint8_t* w, int64_t rb, int64_t k, const float* x, float* y) {
    F32Rows<R>(w, rb, k, x, y);
  }
};

}  // namespace

void HalfRowToF32Avx512(DType dtype, const uint8_t* row, int64_t n, float* out) {
  DI_CHECK(dtype == DType::kF16 || dtype == DType::kBF16);
  const bool f16 = dtype == DType::kF16;
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = TailMask(n - i);
    _mm512_mask_storeu_ps(out + i, m, f16 ? LoadF16AsF32(row + 2 * i, m) : LoadBf16AsF32(row + 2 * i, m));
  }
}

void RowsDotF32Avx512(DType dtype, const uint8_t* w, int64_t row_bytes, int64_t rows, int64_t k,
                      const float* x, float* y) {
  switch (dtype) {
    case DType::kQ4_0:
      DI_CHECK(k % 32 == 0);
      Rows<Q4>(w, row_bytes, rows, k, x, y);
      return;
    case DType::kQ8_0:
      DI_CHECK(k % 32 == 0);
      Rows<Q8>(w, row_bytes, rows, k, x, y);
      return;
    case DType::kF32:
      Rows<F32>(w, row_bytes, rows, k, x, y);
      return;
    default:  // dequantized rows: the scalar path's f32 order is the F32 kernel's
      RowsDotF32Scalar(dtype, w, row_bytes, rows, k, x, y);
      return;
  }
}

void RowsDotF32MultiAvx512(DType dtype, const uint8_t* w, int64_t row_bytes, int64_t rows, int64_t k,
                           const float* const* xs, int64_t num_x, float* const* ys) {
  DI_CHECK((dtype == DType::kQ4_0 || dtype == DType::kQ8_0) && k % 32 == 0);
  if (dtype == DType::kQ4_0) {
    VectorsMulti<true>(w, row_bytes, rows, k, xs, num_x, ys);
  } else {
    VectorsMulti<false>(w, row_bytes, rows, k, xs, num_x, ys);
  }
}

}  // namespace deepinfer::cpu
