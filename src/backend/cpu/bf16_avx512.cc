// BF16 weights in the FILE layout on AVX-512 with AVX512_BF16 (matrices the
// loader did not pack; packed matrices use the outer-product panel kernel,
// panels_avx512.cc, ~1.2-1.6x faster in the GEMM): vdpbf16ps
// multiplies 32 bf16 pairs and adds them into 16 f32 lanes, twice the f32
// FMA rate per instruction and no widening work. It needs bf16
// activations: MatMul rounds them once per call (RoundTokenToBf16Avx512
// below, args.xb), as llama.cpp does. Arithmetic contract in kernels.h.
//
// Tile: R weight rows x T tokens, one accumulator per (row, token). Per
// 32-element chunk of K a row's 64 bytes are loaded once and used for T
// tokens, a token's once and used for R rows. Every (row, token) pair sees
// the same chunks in the same order and the same final reduction in every
// tile shape, so GEMV (T = 1) and GEMM give bit-identical results.
//   GEMM: 4 x 6 tile (24 accumulators + 4 weight registers + 1 activation =
//         29 zmm): 10 loads per 24 vdpbf16ps, enough independent chains
//         to cover the instruction's latency.
//   GEMV: 8 rows at a time, so 8 weight streams are in flight (memory-level
//         parallelism: decode is bandwidth-bound), plus software prefetch.
// Loop order (GEMM): blocks of 64 rows, token tiles, row tiles: a token
// tile's activations stay in L1 across the block's 16 row tiles, the
// block's weights in L2 across the token tiles (16-row blocks were ~15%
// slower at K = 2048). K > 2048 runs in K parts (KBlockedRows).

#include <immintrin.h>

#include <algorithm>

#include "backend/cpu/kernels.h"
#include "backend/cpu/kernels_avx512.h"

namespace deepinfer::cpu {
namespace {

inline __m512bh AsBf16(__m512i v) { return reinterpret_cast<__m512bh>(v); }

// Fixed-order sum of the 16 lanes: halves, quarters, then within 128 bits.
inline float ReduceAdd(__m512 v) {
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Software prefetch distance for GEMV rows. Each row is its own short
// stream (4 KB at K = 2048), which the hardware prefetcher re-learns per
// row; 512 bytes ahead measured +5-15% single-thread on a DRAM-sized matrix
// (noisy machine), 1-4 KB ahead no better. Prefetches never fault, so
// running past a row's end is harmless.
constexpr int64_t kPrefetchBytes = 512;

// Part [kb, ke) of K (kb a multiple of 32; ke a multiple of 32, or k with
// the masked tail) of the R x T tile at (r0, t0), continuing the
// accumulators in `acc_mem` (R * T vectors, row-major). Every (row, token)
// sees the same 32-element chunks in k order whether K is run in one part
// (Tile) or several (KBlockedRows), so splitting K changes no bit.
template <int R, int T>
void TilePart(const MatMulArgs& a, int64_t r0, int64_t t0, int64_t kb, int64_t ke, __m512* acc_mem) {
  const int64_t full = std::min(ke, a.k / 32 * 32);
  const uint8_t* rows[R];
  for (int r = 0; r < R; ++r) rows[r] = a.w + (r0 + r) * a.row_bytes;
  const uint16_t* xs[T];
  for (int t = 0; t < T; ++t) xs[t] = a.xb + (t0 + t) * a.xb_stride;
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) {
      acc[r][t] = _mm512_load_ps(reinterpret_cast<const float*>(acc_mem + r * T + t));
    }
  }
  for (int64_t i = kb; i < full; i += 32) {
    __m512bh w[R];
    for (int r = 0; r < R; ++r) w[r] = AsBf16(_mm512_loadu_si512(rows[r] + 2 * i));
    if constexpr (T == 1) {  // GEMV streams weights from DRAM: ask 8 lines ahead per row
      for (int r = 0; r < R; ++r) {
        _mm_prefetch(reinterpret_cast<const char*>(rows[r] + 2 * i + kPrefetchBytes), _MM_HINT_T0);
      }
    }
    for (int t = 0; t < T; ++t) {
      const __m512bh x = AsBf16(_mm512_load_si512(xs[t] + i));
      for (int r = 0; r < R; ++r) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], w[r], x);
    }
  }
  if (ke == a.k && full < a.k) {  // masked tail: zero weights (and zero padded activations) add nothing
    const __mmask32 m = static_cast<__mmask32>((uint64_t{1} << (a.k - full)) - 1);
    __m512bh w[R];
    for (int r = 0; r < R; ++r) w[r] = AsBf16(_mm512_maskz_loadu_epi16(m, rows[r] + 2 * full));
    for (int t = 0; t < T; ++t) {
      const __m512bh x = AsBf16(_mm512_load_si512(xs[t] + full));
      for (int r = 0; r < R; ++r) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], w[r], x);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) _mm512_store_ps(reinterpret_cast<float*>(acc_mem + r * T + t), acc[r][t]);
  }
}

// y (+ bias) of the R x T tile at (r0, t0) from its finished accumulators.
template <int R, int T>
void StoreTile(const MatMulArgs& a, int64_t r0, int64_t t0, const __m512* acc) {
  for (int t = 0; t < T; ++t) {
    for (int r = 0; r < R; ++r) {
      const float v = ReduceAdd(acc[r * T + t]);
      a.y[(t0 + t) * a.n_rows + r0 + r] = a.bias ? v + a.bias[r0 + r] : v;
    }
  }
}

// The whole of K for the R x T tile at (r0, t0).
template <int R, int T>
void Tile(const MatMulArgs& a, int64_t r0, int64_t t0) {
  __m512 acc[R * T];
  for (__m512& v : acc) v = _mm512_setzero_ps();
  TilePart<R, T>(a, r0, t0, 0, a.k, acc);
  StoreTile<R, T>(a, r0, t0, acc);
}

// Rows [b0, b1) for tokens [t0, t0 + T): R-row tiles, then single rows.
template <int R, int T>
void RowsOfTile(const MatMulArgs& a, int64_t b0, int64_t b1, int64_t t0) {
  int64_t r = b0;
  for (; r + R <= b1; r += R) Tile<R, T>(a, r, t0);
  for (; r < b1; ++r) Tile<1, T>(a, r, t0);
}

// The leftover tokens of a GEMM (fewer than a full tile) as one tile of
// exactly that many, so a batch of e.g. 4 does not fall back to GEMV tiles.
template <int R>
void LeftoverTokens(const MatMulArgs& a, int64_t b0, int64_t b1, int64_t t0, int64_t n) {
  switch (n) {
    case 1:
      return RowsOfTile<R, 1>(a, b0, b1, t0);
    case 2:
      return RowsOfTile<R, 2>(a, b0, b1, t0);
    case 3:
      return RowsOfTile<R, 3>(a, b0, b1, t0);
    case 4:
      return RowsOfTile<R, 4>(a, b0, b1, t0);
    case 5:
      return RowsOfTile<R, 5>(a, b0, b1, t0);
    default:
      return;
  }
}

constexpr int kGemmRows = 4, kGemmTokens = 6, kGemvRows = 8;
// Rows whose weights stay in cache while every token tile passes over them.
constexpr int64_t kRowBlock = 64;

// Long rows (the down projection, K = 5632): a 6-token activation tile is
// 66 KB, past L1, so every row tile re-read it from L2 (~50 of L2's 64
// bytes per cycle). Then K is cut into kKBlock parts: a part's activation
// tile (12 KB) stays in L1 while the block's row tiles pass, their
// accumulators parked in a small scratch in between. 1 thread, 2048 x 5632,
// 512 tokens: see docs/kernels.md.
constexpr int64_t kKBlock = 1024;
constexpr int64_t kKBlockedRowBlock = 32;

// Rows [b0, b1) (at most kKBlockedRowBlock) for the 6 tokens from t0.
void KBlockedRows(const MatMulArgs& a, int64_t b0, int64_t b1, int64_t t0) {
  constexpr int R = kGemmRows, T = kGemmTokens;
  alignas(64) __m512 acc[kKBlockedRowBlock / R][R * T];
  const int tiles = static_cast<int>((b1 - b0) / R);
  for (int i = 0; i < tiles; ++i) {
    for (int j = 0; j < R * T; ++j) acc[i][j] = _mm512_setzero_ps();
  }
  for (int64_t kb = 0; kb < a.k; kb += kKBlock) {
    const int64_t ke = std::min(a.k, kb + kKBlock);
    for (int i = 0; i < tiles; ++i) TilePart<R, T>(a, b0 + i * R, t0, kb, ke, acc[i]);
  }
  for (int i = 0; i < tiles; ++i) StoreTile<R, T>(a, b0 + i * R, t0, acc[i]);
  for (int64_t r = b0 + tiles * R; r < b1; ++r) Tile<1, T>(a, r, t0);  // leftover rows, unblocked
}

}  // namespace

void Bf16RowsAvx512(const MatMulArgs& a, int64_t row_begin, int64_t row_end) {
  if (a.n_tokens == 1) {
    RowsOfTile<kGemvRows, 1>(a, row_begin, row_end, 0);
    return;
  }
  if (a.k > 2 * kKBlock) {
    for (int64_t b0 = row_begin; b0 < row_end; b0 += kKBlockedRowBlock) {
      const int64_t b1 = std::min(row_end, b0 + kKBlockedRowBlock);
      int64_t t = 0;
      for (; t + kGemmTokens <= a.n_tokens; t += kGemmTokens) KBlockedRows(a, b0, b1, t);
      if (t < a.n_tokens) LeftoverTokens<kGemmRows>(a, b0, b1, t, a.n_tokens - t);
    }
    return;
  }
  for (int64_t b0 = row_begin; b0 < row_end; b0 += kRowBlock) {
    const int64_t b1 = std::min(row_end, b0 + kRowBlock);
    int64_t t = 0;
    for (; t + kGemmTokens <= a.n_tokens; t += kGemmTokens) RowsOfTile<kGemmRows, kGemmTokens>(a, b0, b1, t);
    if (t < a.n_tokens) LeftoverTokens<kGemmRows>(a, b0, b1, t, a.n_tokens - t);
  }
}

// vcvtneps2bf16 is RoundToBf16 (kernels.h) bit for bit: nearest even, NaN
// quiet, denormals to zero. Masked loads give the zero padding past k.
void RoundTokenToBf16Avx512(const float* x_t, int64_t k, int64_t stride, uint16_t* out) {
  for (int64_t i = 0; i < stride; i += 16) {
    const int64_t n = std::clamp<int64_t>(k - i, 0, 16);
    const __mmask16 m = static_cast<__mmask16>((1u << n) - 1);
    const __m256bh b = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x_t + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), reinterpret_cast<__m256i>(b));
  }
}

}  // namespace deepinfer::cpu
