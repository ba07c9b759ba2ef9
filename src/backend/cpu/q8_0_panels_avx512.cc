// Q8_0 weights in the row-panel layout (packed_weights.h, small K) on
// AVX-512 with VNNI: an outer product per 4-byte step of a block.
//
// Why a second Q8_0 layout: the K-interleaved one puts a row's 16 blocks in
// the 16 lanes of a vpdpbusd, so a row of fewer than 8 blocks (K < 256:
// an MTP layer or a small model's matrices) fills 2-4 of 8 lanes and pays
// for the padding; at K = 64 it ran slower than f32 panels. Here lane r of
// a vpdpbusd is row 16p + r: token t's 4 activations of step s of block b
// are broadcast to every lane, and 8 vpdpbusd leave each row's exact int32
// dot product with block b, started from -128 * sum(q_x of the block),
// which removes the weights' unsigned offset. Then per block and (row,
// token), as kernels.h specifies for Q8_0:
//   acc += float(isum) * (d_w * d_x)
// in block order from zero, then + bias: the same operations in every tile
// (any token count, any row split), so the results are batch invariant.
// Nothing is reduced across lanes: a finished accumulator is 16 rows of y.
//
// Tiles: P panels x T tokens (P = 4, T = 2 or 1): P * T int32 sums, P * T
// f32 accumulators and P weight vectors in registers. With one token the
// 8 steps of a block are two chains (odd / even steps): integer sums are
// exact, so the split changes no bit.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/kernels_avx512.h"
#include "backend/cpu/packed_weights.h"

namespace deepinfer::cpu {
namespace {

constexpr int kSteps = 8;  // 32 bytes of a block, 4 per vpdpbusd lane

template <int P, int T>
void RowPanelTile(const MatMulArgs& a, int64_t p0, int64_t t0) {
  const Int8Activations& xq = *a.xq;
  const int64_t blocks = a.k / 32, panel_bytes = 16 * a.row_bytes;
  const uint8_t* w[P];
  for (int p = 0; p < P; ++p) w[p] = a.w + (p0 + p) * panel_bytes;
  const int8_t* xs[T];
  const float* xd[T];
  const int32_t* xsum[T];
  for (int t = 0; t < T; ++t) {
    xs[t] = xq.TokenQ(t0 + t);
    xd[t] = xq.TokenD(t0 + t);
    xsum[t] = xq.TokenSum(t0 + t);
  }
  constexpr bool kSplit = T == 1;
  __m512 acc[P][T];
  for (int p = 0; p < P; ++p) {
    for (int t = 0; t < T; ++t) acc[p][t] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < blocks; ++b) {
    __m512i isum[P][T], isum2[P][T];
    for (int t = 0; t < T; ++t) {
      const __m512i bias = _mm512_set1_epi32(-128 * xsum[t][b]);
      for (int p = 0; p < P; ++p) {
        isum[p][t] = bias;
        if constexpr (kSplit) isum2[p][t] = _mm512_setzero_si512();
      }
    }
#pragma GCC unroll 8
    for (int s = 0; s < kSteps; ++s) {
      __m512i wv[P];
      for (int p = 0; p < P; ++p) wv[p] = _mm512_load_si512(w[p] + b * kQ8_0PanelBlockBytes + s * 64);
      for (int t = 0; t < T; ++t) {
        int32_t four;
        std::memcpy(&four, xs[t] + 32 * b + 4 * s, 4);
        const __m512i x = _mm512_set1_epi32(four);
        for (int p = 0; p < P; ++p) {
          if (kSplit && s % 2 == 1) {
            isum2[p][t] = _mm512_dpbusd_epi32(isum2[p][t], wv[p], x);
          } else {
            isum[p][t] = _mm512_dpbusd_epi32(isum[p][t], wv[p], x);
          }
        }
      }
    }
    for (int p = 0; p < P; ++p) {
      const __m512 dw = _mm512_load_ps(reinterpret_cast<const float*>(w[p] + b * kQ8_0PanelBlockBytes + 512));
      for (int t = 0; t < T; ++t) {
        const __m512i sum = kSplit ? _mm512_add_epi32(isum[p][t], isum2[p][t]) : isum[p][t];
        acc[p][t] =
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(dw, _mm512_set1_ps(xd[t][b])), acc[p][t]);
      }
    }
  }
  for (int p = 0; p < P; ++p) {
    const int64_t r = (p0 + p) * 16;
    const __mmask16 m = static_cast<__mmask16>((1u << std::min<int64_t>(16, a.n_rows - r)) - 1);
    const __m512 bias = a.bias != nullptr ? _mm512_maskz_loadu_ps(m, a.bias + r) : _mm512_setzero_ps();
    for (int t = 0; t < T; ++t) {
      const __m512 y = a.bias != nullptr ? _mm512_add_ps(acc[p][t], bias) : acc[p][t];
      _mm512_mask_storeu_ps(a.y + (t0 + t) * a.n_rows + r, m, y);
    }
  }
}

// Panels [p0, p1) for T tokens at t0: 4 at a time, then one at a time.
template <int T>
void RowPanels(const MatMulArgs& a, int64_t p0, int64_t p1, int64_t t0) {
  int64_t p = p0;
  for (; p + 4 <= p1; p += 4) RowPanelTile<4, T>(a, p, t0);
  for (; p < p1; ++p) RowPanelTile<1, T>(a, p, t0);
}

}  // namespace

void PackedQ8_0PanelsAvx512(const MatMulArgs& a, int64_t row_begin, int64_t row_end) {
  const int64_t p0 = row_begin / 16, p1 = (row_end + 15) / 16;
  int64_t t = 0;
  for (; t + 2 <= a.n_tokens; t += 2) RowPanels<2>(a, p0, p1, t);
  if (t < a.n_tokens) RowPanels<1>(a, p0, p1, t);
}

}  // namespace deepinfer::cpu
