// AVX-512 kernels (compiled with -mavx512{f,bw,dq,vl,vnni,bf16}; reached only
// after CpuSupports(Isa::kAvx512)).
//
// Register tiling: a tile is R weight rows x T tokens with one 16-lane
// accumulator per (row, token); a row's weights are loaded and decoded once
// per tile and reused for its T tokens, a token's activations once and
// reused for the R rows. The per-(row, token) operation sequence is the same
// in every tile shape, which is what keeps GEMV (T = 1) and GEMM results
// bit-identical (kernels.h).
//
// Quantized types use VNNI vpdpbusd (u8 x s8 -> s32). Weights must be the
// unsigned operand: Q8_0 bytes are flipped to w + 128 (xor 0x80), Q4_0 and
// Q4_K nibbles are already 0..15 (= w + 8 for Q4_0). The offset is removed
// exactly in int32 by starting the accumulation at -offset * sum(x_block),
// precomputed per token in lanes_bias (Prepare below).
//
// Packed Q8_0 / Q4_0 matrices have their own K-interleaved kernels
// (interleaved_avx512.cc); activation quantization is quantize_avx512.cc;
// BF16 (vdpbf16ps on bf16-rounded activations) is bf16_avx512.cc.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/kernels.h"
#include "backend/cpu/kernels_amx.h"
#include "backend/cpu/kernels_avx512.h"

namespace deepinfer::cpu {
namespace {

inline float Half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// a in lanes 0-7, b in lanes 8-15: one factor per 32-block of a block pair.
inline __m512 Halves(float a, float b) { return _mm512_insertf32x8(_mm512_set1_ps(a), _mm256_set1_ps(b), 1); }

// A block pair of one weight row: 64 unsigned 4/8-bit values in natural
// element order, the per-block scales, and (Q4_K) the per-block minimums.
struct WeightPair {
  __m512i q;
  __m512 scale;
  __m512 min;
};

struct Q8_0Format {
  static const float* Scales(const uint8_t*, int64_t) { return nullptr; }  // inline in the blocks
  static constexpr bool kHasMin = false;
  static constexpr int kOffset = 128;
  static WeightPair Pair(const uint8_t* row, const float*, int64_t p) {
    const uint8_t* b = row + p * 68;
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 2));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 36));
    const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    return {_mm512_xor_si512(q, _mm512_set1_epi8(static_cast<char>(0x80))), Halves(Half(b), Half(b + 34)),
            _mm512_setzero_ps()};
  }
  static WeightPair Single(const uint8_t* row, const float*, int64_t p) {  // odd last block; partner is zero
    const uint8_t* b = row + p * 68;
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 2));
    return {_mm512_zextsi256_si512(_mm256_xor_si256(lo, _mm256_set1_epi8(static_cast<char>(0x80)))),
            Halves(Half(b), 0.0f), _mm512_setzero_ps()};
  }
};

struct Q4_0Format {
  static const float* Scales(const uint8_t*, int64_t) { return nullptr; }  // inline in the blocks
  static constexpr bool kHasMin = false;
  static constexpr int kOffset = 8;
  // v = [qs_a (16 B), qs_b (16 B)] -> [lo_a, hi_a, lo_b, hi_b]: elements 0-15
  // of a block are the low nibbles, 16-31 the high ones.
  static __m512i Nibbles(__m256i v) {
    const __m256i mask = _mm256_set1_epi8(0x0f);
    const __m256i lo = _mm256_and_si256(v, mask);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
    const __m512i order = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
    return _mm512_permutex2var_epi64(_mm512_castsi256_si512(lo), order, _mm512_castsi256_si512(hi));
  }
  static WeightPair Pair(const uint8_t* row, const float*, int64_t p) {
    const uint8_t* b = row + p * 36;
    const __m256i v = _mm256_set_m128i(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 20)),
                                       _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2)));
    return {Nibbles(v), Halves(Half(b), Half(b + 18)), _mm512_setzero_ps()};
  }
  static WeightPair Single(const uint8_t* row, const float*, int64_t p) {
    const uint8_t* b = row + p * 36;
    const __m256i v = _mm256_zextsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2)));
    return {Nibbles(v), Halves(Half(b), 0.0f), _mm512_setzero_ps()};
  }
};

struct Q4_KFormat {
  static const float* Scales(const uint8_t*, int64_t) { return nullptr; }  // inline in the blocks
  static constexpr bool kHasMin = true;
  static constexpr int kOffset = 0;
  // Pair j of a 256-super-block is sub-blocks 2j (low nibbles of qs[32j..])
  // and 2j+1 (high nibbles). K is a multiple of 256, so there is no Single.
  static WeightPair Pair(const uint8_t* row, const float*, int64_t p) {
    const uint8_t* sb = row + (p >> 2) * 144;
    const int j = static_cast<int>(p & 3);
    int sc0, m0, sc1, m1;
    Q4KScaleMin(2 * j, sb + 4, &sc0, &m0);
    Q4KScaleMin(2 * j + 1, sb + 4, &sc1, &m1);
    const float d = Half(sb), dmin = Half(sb + 2);
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sb + 16 + 32 * j));
    const __m256i mask = _mm256_set1_epi8(0x0f);
    const __m256i lo = _mm256_and_si256(v, mask);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
    return {_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1),
            Halves(d * static_cast<float>(sc0), d * static_cast<float>(sc1)),
            Halves(dmin * static_cast<float>(m0), dmin * static_cast<float>(m1))};
  }
  static WeightPair Single(const uint8_t* row, const float* s, int64_t p) { return Pair(row, s, p); }
};

template <class Format, int R, int T>
void QuantTile(const MatMulArgs& a, int64_t r0, int64_t t0) {
  const Int8Activations& xq = *a.xq;
  const int64_t full_pairs = xq.blocks / 2, pairs = xq.pairs;
  const uint8_t* rows[R];
  const float* scales[R];
  for (int r = 0; r < R; ++r) {
    rows[r] = a.w + (r0 + r) * a.row_bytes;
    scales[r] = Format::Scales(rows[r], pairs);
  }
  const int8_t* xs[T];
  const int32_t* xbias[T];
  const float* xd[T];
  const float* xdsum[T];
  for (int t = 0; t < T; ++t) {
    xs[t] = xq.TokenQ(t0 + t);
    xbias[t] = xq.lanes_bias.data() + (t0 + t) * pairs * 16;
    xd[t] = xq.lanes_d.data() + (t0 + t) * pairs * 16;
    xdsum[t] = Format::kHasMin ? xq.lanes_dsum.data() + (t0 + t) * pairs * 16 : nullptr;
  }
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }

  for (int64_t p = 0; p < pairs; ++p) {
    WeightPair w[R];
    for (int r = 0; r < R; ++r) {
      w[r] = p < full_pairs ? Format::Pair(rows[r], scales[r], p) : Format::Single(rows[r], scales[r], p);
    }
    for (int t = 0; t < T; ++t) {
      const __m512i x = _mm512_load_si512(xs[t] + p * 64);
      const __m512i bias = _mm512_load_si512(xbias[t] + p * 16);
      const __m512 dx = _mm512_load_ps(xd[t] + p * 16);
      for (int r = 0; r < R; ++r) {
        const __m512i dot = _mm512_dpbusd_epi32(bias, w[r].q, x);
        acc[r][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(w[r].scale, dx), acc[r][t]);
      }
      if constexpr (Format::kHasMin) {
        const __m512 dsum = _mm512_load_ps(xdsum[t] + p * 16);
        for (int r = 0; r < R; ++r) acc[r][t] = _mm512_fnmadd_ps(w[r].min, dsum, acc[r][t]);
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    for (int r = 0; r < R; ++r) {
      const float v = _mm512_reduce_add_ps(acc[r][t]);
      a.y[(t0 + t) * a.n_rows + r0 + r] = a.bias ? v + a.bias[r0 + r] : v;
    }
  }
}

struct F32Format {
  static __m512 Load(const uint8_t* row, int64_t i) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + i);
  }
  static __m512 LoadMasked(const uint8_t* row, int64_t i, __mmask16 m) {
    return _mm512_maskz_loadu_ps(m, reinterpret_cast<const float*>(row) + i);
  }
};

struct F16Format {
  static __m512 Load(const uint8_t* row, int64_t i) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * i)));
  }
  static __m512 LoadMasked(const uint8_t* row, int64_t i, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, row + 2 * i));
  }
};

template <class Format, int R, int T>
void FloatTile(const MatMulArgs& a, int64_t r0, int64_t t0) {
  const int64_t k = a.k;
  const uint8_t* rows[R];
  for (int r = 0; r < R; ++r) rows[r] = a.w + (r0 + r) * a.row_bytes;
  const float* xs[T];
  for (int t = 0; t < T; ++t) xs[t] = a.x + (t0 + t) * k;
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    __m512 w[R];
    for (int r = 0; r < R; ++r) w[r] = Format::Load(rows[r], i);
    for (int t = 0; t < T; ++t) {
      const __m512 x = _mm512_loadu_ps(xs[t] + i);
      for (int r = 0; r < R; ++r) acc[r][t] = _mm512_fmadd_ps(w[r], x, acc[r][t]);
    }
  }
  if (i < k) {  // masked tail: zero lanes add exactly nothing
    const __mmask16 m = static_cast<__mmask16>((1u << (k - i)) - 1);
    __m512 w[R];
    for (int r = 0; r < R; ++r) w[r] = Format::LoadMasked(rows[r], i, m);
    for (int t = 0; t < T; ++t) {
      const __m512 x = _mm512_maskz_loadu_ps(m, xs[t] + i);
      for (int r = 0; r < R; ++r) acc[r][t] = _mm512_fmadd_ps(w[r], x, acc[r][t]);
    }
  }
  for (int t = 0; t < T; ++t) {
    for (int r = 0; r < R; ++r) {
      const float v = _mm512_reduce_add_ps(acc[r][t]);
      a.y[(t0 + t) * a.n_rows + r0 + r] = a.bias ? v + a.bias[r0 + r] : v;
    }
  }
}

template <class Format>
struct QuantKernel {
  template <int R, int T>
  static void Tile(const MatMulArgs& a, int64_t r0, int64_t t0) {
    QuantTile<Format, R, T>(a, r0, t0);
  }
};
template <class Format>
struct FloatKernel {
  template <int R, int T>
  static void Tile(const MatMulArgs& a, int64_t r0, int64_t t0) {
    FloatTile<Format, R, T>(a, r0, t0);
  }
};

// Loop order: blocks of kRowBlock rows (their weights stay in L1/L2), then
// token tiles, then row tiles. Leftover rows / tokens use the 1-wide tiles,
// which do the same per-(row, token) arithmetic.
template <class Kernel>
void RowRange(const MatMulArgs& a, int64_t row_begin, int64_t row_end) {
  constexpr int kR = 4, kT = 4;
  constexpr int64_t kRowBlock = 16;
  for (int64_t b0 = row_begin; b0 < row_end; b0 += kRowBlock) {
    const int64_t b1 = std::min(row_end, b0 + kRowBlock);
    int64_t t = 0;
    for (; t + kT <= a.n_tokens; t += kT) {
      int64_t r = b0;
      for (; r + kR <= b1; r += kR) Kernel::template Tile<kR, kT>(a, r, t);
      for (; r < b1; ++r) Kernel::template Tile<1, kT>(a, r, t);
    }
    for (; t < a.n_tokens; ++t) {
      int64_t r = b0;
      for (; r + kR <= b1; r += kR) Kernel::template Tile<kR, 1>(a, r, t);
      for (; r < b1; ++r) Kernel::template Tile<1, 1>(a, r, t);
    }
  }
}

// The groups of Q6_K / Q3_K (activations.h): group_q and group_d as for
// Q8_0, and the offset o of q (32 / 4) removed per 16-element half:
// group_bias_lo = -o * sum of the first 16 values of the block,
// group_bias = -o * sum of the last 16.
void PrepareHalvesGroups(Int8Activations* xq, int32_t offset, int64_t t) {
  PrepareGroupsAvx512(xq, offset, t);  // group_bias = -o * sum of all 32
  const int8_t* q = xq->TokenQ(t);
  int32_t* lo = xq->group_bias_lo.data() + t * xq->GroupLaneStride();
  int32_t* hi = xq->group_bias.data() + t * xq->GroupLaneStride();
  for (int64_t b = 0; b < xq->blocks; ++b) {
    const __m128i v = _mm_load_si128(reinterpret_cast<const __m128i*>(q + b * 32));
    // The block's first 16 values, sign-extended to int32 and summed.
    const __m512i wide = _mm512_cvtepi8_epi32(v);
    lo[b] = -offset * _mm512_reduce_add_epi32(wide);
    hi[b] -= lo[b];
  }
}

// Token t's lanes_* (for the pair kernels above: one zmm per block pair,
// lanes 0-7 block 2p, 8-15 block 2p + 1) and, for Q8_0 / Q4_0, its
// interleaved groups (for the packed kernels). Both are filled because the
// token does not know which layout the matrix it meets is in; each costs a
// few instructions per block against K * N / 64 vpdpbusd of the matmul.
void Prepare(Int8Activations* xq, DType dtype, int64_t t) {
  const int32_t offset = dtype == DType::kQ8_0   ? Q8_0Format::kOffset
                         : dtype == DType::kQ4_0 ? Q4_0Format::kOffset
                                                 : Q4_KFormat::kOffset;
  const bool need_dsum = HasBlockMinimum(dtype);
  const float* d = xq->TokenD(t);
  const int32_t* sum = xq->TokenSum(t);
  const __m512i halves = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  constexpr __mmask16 kFirstLanes = 0x0101;
  const __m512i neg_offset = _mm512_set1_epi32(-offset);
  for (int64_t p = 0; p < xq->pairs; ++p) {
    const size_t base = static_cast<size_t>((t * xq->pairs + p) * 16);
    const __m512 d2 =
        _mm512_castps128_ps512(_mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(d + 2 * p))));
    const __m512i s2 = _mm512_castsi128_si512(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sum + 2 * p)));
    _mm512_store_ps(xq->lanes_d.data() + base, _mm512_permutexvar_ps(halves, d2));
    _mm512_store_si512(
        xq->lanes_bias.data() + base,
        _mm512_maskz_permutexvar_epi32(kFirstLanes, halves, _mm512_mullo_epi32(s2, neg_offset)));
    if (need_dsum) {
      const __m512 dsum = _mm512_mul_ps(d2, _mm512_cvtepi32_ps(s2));
      _mm512_store_ps(xq->lanes_dsum.data() + base, _mm512_maskz_permutexvar_ps(kFirstLanes, halves, dsum));
    }
  }
  if (dtype == DType::kQ8_0 || dtype == DType::kQ4_0) {
    PrepareGroupsAvx512(xq, offset, t);
    if (t < xq->tile_tokens) PrepareAmxTileToken(xq, t);
  } else if (HasBlockMinimum(dtype)) {
    PrepareGroupsAvx512(xq, -1, t);  // group_bias = + sum(q): the minimum's term
    if (t < xq->tile_tokens) PrepareAmxTileToken(xq, t);
  } else if (HasHalves(dtype)) {
    PrepareHalvesGroups(xq, HalvesOffset(dtype), t);
    if (t < xq->tile_tokens) PrepareAmxTileToken(xq, t);
  }
}

}  // namespace

const KernelSet& Avx512Kernels() {
  static const KernelSet set = [] {
    KernelSet s;
    s.f32 = RowRange<FloatKernel<F32Format>>;
    s.f16 = RowRange<FloatKernel<F16Format>>;
    s.bf16 = Bf16RowsAvx512;
    s.q8_0 = RowRange<QuantKernel<Q8_0Format>>;
    s.q4_0 = RowRange<QuantKernel<Q4_0Format>>;
    s.q4_k = RowRange<QuantKernel<Q4_KFormat>>;
    s.q8_0_packed = PackedQ8_0RowsAvx512;
    s.q8_0_row_panels = PackedQ8_0PanelsAvx512;
    s.q4_0_packed = PackedQ4_0RowsAvx512;
    s.q4_k_packed = PackedQ4_KRowsAvx512;
    s.q2_k_packed = PackedQ2_KRowsAvx512;
    s.q3_k_packed = PackedQ3_KRowsAvx512;

    s.q5_k_packed = PackedQ5_KRowsAvx512;
    s.q6_k_packed = PackedQ6_KRowsAvx512;
    s.bf16_packed = Bf16PanelsAvx512;
    s.f16_packed = F16PanelsAvx512;
    s.f32_packed = F32PanelsAvx512;
    s.quantize_token = QuantizeTokenAvx512;
    s.prepare = Prepare;
    s.round_bf16 = RoundTokenToBf16Avx512;
    return s;
  }();
  return set;
}

}  // namespace deepinfer::cpu
