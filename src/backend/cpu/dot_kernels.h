// The Dot family (dot.h) written once over a 16-lane f32 vector type, for
// dot_avx512.cc (one zmm) and dot_avx2.cc (two ymm). Include only from
// files compiled for the ISA of the vector type they instantiate it with.
//
// V provides: Zero(); Load(p) (16 floats); LoadFirst(p, n) (lanes >= n
// read as 0, nothing read there); StoreFirst(p, n, v); Set1(x);
// Fma(a, b, c) = a * b + c rounded once; Combine(v), the lane tree of dot.h
// (l += l + 8, + 4, + 2, + 1), returning lane 0.
//
// Every (vector, row) chain below is DotScalar's chain and every element of
// an AddScaled output sees AddScaledScalar's operations in its order, so a
// result has the scalar bits whatever the tile or the level (dot_test).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace deepinfer::cpu::dot_kernels {

// The tail of a dot product past the last whole 16 elements, in index order.
inline float Tail(const float* a, const float* b, int64_t from, int64_t n) {
  float tail = 0.0f;
  for (int64_t t = from; t < n; ++t) tail = std::fma(a[t], b[t], tail);
  return tail;
}

// Dot of H vectors a with K rows: H x K independent chains (16 registers at
// 4 x 4), each row chunk loaded once for the H vectors.
template <class V, int H, int K>
void DotBlockTile(const float* const* a, const float* const* rows, int64_t n, float* out,
                  int64_t out_stride) {
  typename V::Reg acc[H][K];
  for (int h = 0; h < H; ++h)
    for (int k = 0; k < K; ++k) acc[h][k] = V::Zero();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    typename V::Reg rv[K];
    for (int k = 0; k < K; ++k) rv[k] = V::Load(rows[k] + i);
    for (int h = 0; h < H; ++h) {
      const typename V::Reg av = V::Load(a[h] + i);
      for (int k = 0; k < K; ++k) acc[h][k] = V::Fma(av, rv[k], acc[h][k]);
    }
  }
  for (int h = 0; h < H; ++h) {
    for (int k = 0; k < K; ++k) out[h * out_stride + k] = V::Combine(acc[h][k]) + Tail(a[h], rows[k], i, n);
  }
}

template <class V, int K>
void DotBlockRow(int64_t hh, const float* const* a, const float* const* rows, int64_t n, float* out,
                 int64_t out_stride) {
  switch (hh) {
    case 4:
      return DotBlockTile<V, 4, K>(a, rows, n, out, out_stride);
    case 3:
      return DotBlockTile<V, 3, K>(a, rows, n, out, out_stride);
    case 2:
      return DotBlockTile<V, 2, K>(a, rows, n, out, out_stride);
    default:
      return DotBlockTile<V, 1, K>(a, rows, n, out, out_stride);
  }
}

template <class V>
void DotRowsBlock(const float* const* a, int64_t num_a, const float* const* rows, int64_t count, int64_t n,
                  float* out, int64_t out_stride) {
  // Rows outer: a block of 4 rows stays in L1 while every block of vectors
  // passes over it.
  for (int64_t j = 0; j < count; j += 4) {
    const int64_t k = std::min<int64_t>(4, count - j);
    for (int64_t h = 0; h < num_a; h += 4) {
      const int64_t hh = std::min<int64_t>(4, num_a - h);
      float* o = out + h * out_stride + j;
      switch (k) {
        case 4:
          DotBlockRow<V, 4>(hh, a + h, rows + j, n, o, out_stride);
          break;
        case 3:
          DotBlockRow<V, 3>(hh, a + h, rows + j, n, o, out_stride);
          break;
        case 2:
          DotBlockRow<V, 2>(hh, a + h, rows + j, n, o, out_stride);
          break;
        default:
          DotBlockRow<V, 1>(hh, a + h, rows + j, n, o, out_stride);
          break;
      }
    }
  }
}

template <class V>
void DotRows(const float* a, const float* const* rows, int64_t count, int64_t n, float* out) {
  DotRowsBlock<V>(&a, 1, rows, count, n, out, 0);
}

template <class V>
float Dot(const float* a, const float* b, int64_t n) {
  float out;
  DotBlockTile<V, 1, 1>(&a, &b, n, &out, 0);
  return out;
}

// AddScaledRows for H outputs at once: 64 floats of each y[h] in registers
// (4 x H chains) while the rows pass in order; each row chunk loaded once
// for the H outputs.
template <class V, int H>
void AddScaledBlockTile(float* const* y, const float* p, int64_t p_stride, const float* const* rows,
                        int64_t count, int64_t n) {
  for (int64_t i = 0; i < n; i += 64) {
    int64_t valid[4];
    typename V::Reg acc[H][4];
    for (int c = 0; c < 4; ++c) {
      valid[c] = std::clamp<int64_t>(n - i - 16 * c, 0, 16);
      for (int h = 0; h < H; ++h) acc[h][c] = V::LoadFirst(y[h] + i + 16 * c, valid[c]);
    }
    for (int64_t j = 0; j < count; ++j) {
      typename V::Reg rv[4];
      for (int c = 0; c < 4; ++c) rv[c] = V::LoadFirst(rows[j] + i + 16 * c, valid[c]);
      for (int h = 0; h < H; ++h) {
        const typename V::Reg pj = V::Set1(p[h * p_stride + j]);
        for (int c = 0; c < 4; ++c) acc[h][c] = V::Fma(pj, rv[c], acc[h][c]);
      }
    }
    for (int h = 0; h < H; ++h) {
      for (int c = 0; c < 4; ++c) V::StoreFirst(y[h] + i + 16 * c, valid[c], acc[h][c]);
    }
  }
}

template <class V>
void AddScaledRowsBlock(float* const* y, const float* p, int64_t p_stride, int64_t num_y,
                        const float* const* rows, int64_t count, int64_t n) {
  int64_t h = 0;
  for (; h + 4 <= num_y; h += 4) AddScaledBlockTile<V, 4>(y + h, p + h * p_stride, p_stride, rows, count, n);
  switch (num_y - h) {
    case 3:
      return AddScaledBlockTile<V, 3>(y + h, p + h * p_stride, p_stride, rows, count, n);
    case 2:
      return AddScaledBlockTile<V, 2>(y + h, p + h * p_stride, p_stride, rows, count, n);
    case 1:
      return AddScaledBlockTile<V, 1>(y + h, p + h * p_stride, p_stride, rows, count, n);
    default:
      return;
  }
}

template <class V>
void AddScaledRows(float* y, const float* p, const float* const* rows, int64_t count, int64_t n) {
  AddScaledBlockTile<V, 1>(&y, p, 0, rows, count, n);
}

template <class V>
void AddScaled(float* y, float a, const float* x, int64_t n) {
  AddScaledBlockTile<V, 1>(&y, &a, 0, &x, 1, n);
}

}  // namespace deepinfer::cpu::dot_kernels
