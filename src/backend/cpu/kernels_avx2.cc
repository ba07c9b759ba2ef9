// AVX2 + FMA + F16C kernels (compiled with -mavx2 -mfma -mf16c; reached only
// after CpuSupports(Isa::kAvx2)). The fallback for CPUs without AVX-512: one
// (row, token) dot product at a time, 8 lanes, no register tiling.
//
// Integer dots use vpmaddubsw (u8 x s8 -> saturating s16 pairs). Saturation
// is avoided by the sign trick: |w| (<= 128) times x carrying w's sign
// (|x| <= 127): each pair sum is at most 2 * 128 * 127 = 32512 < 32767.
#include <immintrin.h>

#include <cstring>
#include <vector>

#include "backend/cpu/kernels.h"

namespace deepinfer::cpu {
namespace {

inline float Half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// Fixed-order horizontal sum of 8 lanes.
inline float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Signed int8 weights w times signed int8 x: 8 int32 partial sums.
inline __m256i SignedDot(__m256i w, __m256i x) {
  const __m256i prod = _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
  return _mm256_madd_epi16(prod, _mm256_set1_epi16(1));
}

// Unsigned 4-bit weights (0..15) times signed int8 x.
inline __m256i UnsignedDot(__m256i w, __m256i x) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1));
}

inline __m256i SplitNibbles(__m128i v) {  // [low nibbles (16 B), high nibbles (16 B)]
  const __m128i mask = _mm_set1_epi8(0x0f);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), mask), _mm_and_si128(v, mask));
}

inline __m256i LoadBytes(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// (v >> shift) & mask per byte (a 16-bit shift: the mask drops what came
// from the neighbouring byte, as long as mask >> (8 - shift) is 0).
inline __m256i BitsAt(__m256i v, int shift, int mask) {
  return _mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(shift)),
                          _mm256_set1_epi8(static_cast<char>(mask)));
}

inline int32_t SumLanes(__m128i v) {  // 4 int32 lanes, fixed order
  v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0x4e));
  return _mm_cvtsi128_si32(_mm_add_epi32(v, _mm_shuffle_epi32(v, 0xb1)));
}

// One (row, token) dot of the quantized types (kernels.h's arithmetic per
// block; the K-quants with halves multiply each half's 4 int32 lanes by its
// scale before the f32 fold). low_sums: Q2_K only, token t's sum of the
// first 16 q of each block (LowHalfSums).
float DotQuant(DType dtype, const uint8_t* row, const Int8Activations& xq, int64_t t,
               const int32_t* low_sums) {
  const int8_t* xs = xq.TokenQ(t);
  const float* dx = xq.TokenD(t);
  const int32_t* sx = xq.TokenSum(t);
  __m256 acc = _mm256_setzero_ps();
  float mins = 0.0f;
  for (int64_t b = 0; b < xq.blocks; ++b) {
    const __m256i x = _mm256_load_si256(reinterpret_cast<const __m256i*>(xs + b * 32));
    __m256i dot;
    float scale;
    switch (dtype) {
      case DType::kQ8_0: {
        const uint8_t* blk = row + b * 34;
        dot = SignedDot(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2)), x);
        scale = Half(blk);
        break;
      }
      case DType::kQ4_0: {
        const uint8_t* blk = row + b * 18;
        const __m256i w = _mm256_sub_epi8(
            SplitNibbles(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 2))), _mm256_set1_epi8(8));
        dot = SignedDot(w, x);
        scale = Half(blk);
        break;
      }
      case DType::kQ4_K:
      case DType::kQ5_K: {  // Q5_K: Q4_K's nibbles plus bit s of qh[l] as 16
        const bool five = dtype == DType::kQ5_K;
        const uint8_t* sb = row + (b / 8) * (five ? 176 : 144);
        const int s = static_cast<int>(b % 8);
        const __m256i v = LoadBytes(sb + (five ? 48 : 16) + 32 * (s / 2));
        __m256i w = s % 2 == 0 ? _mm256_and_si256(v, _mm256_set1_epi8(0x0f))
                               : _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0f));
        if (five) w = _mm256_or_si256(w, _mm256_slli_epi16(BitsAt(LoadBytes(sb + 16), s, 1), 4));
        dot = UnsignedDot(w, x);
        int sc, m;
        Q4KScaleMin(s, sb + 4, &sc, &m);
        scale = Half(sb) * static_cast<float>(sc);
        mins += (Half(sb + 2) * static_cast<float>(m)) * (dx[b] * static_cast<float>(sx[b]));
        break;
      }
      default: {  // Q6_K / Q3_K / Q2_K: two 16-element halves, each with its scale
        const int j = static_cast<int>(b % 8), half = j / 4, quarter = j % 4;
        int sc[2];
        if (dtype == DType::kQ6_K) {
          const uint8_t* sb = row + (b / 8) * 210;
          const __m256i v = LoadBytes(sb + 64 * half + 32 * (quarter & 1));
          const __m256i nib = quarter < 2 ? _mm256_and_si256(v, _mm256_set1_epi8(0x0f))
                                          : _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0f));
          const __m256i q = _mm256_or_si256(
              nib, _mm256_slli_epi16(BitsAt(LoadBytes(sb + 128 + 32 * half), 2 * quarter, 3), 4));
          dot = SignedDot(_mm256_sub_epi8(q, _mm256_set1_epi8(32)), x);
          for (int i = 0; i < 2; ++i) {
            const int byte = sb[192 + 2 * j + i];
            sc[i] = byte < 128 ? byte : byte - 256;  // the int8 scale
          }

          scale = Half(sb + 208);
        } else if (dtype == DType::kQ3_K) {
          const uint8_t* sb = row + (b / 8) * 110;
          const __m256i low = BitsAt(LoadBytes(sb + 32 + 32 * half), 2 * quarter, 3);
          const __m256i high = BitsAt(LoadBytes(sb), 4 * half + quarter, 1);
          const __m256i q = _mm256_or_si256(low, _mm256_slli_epi16(high, 2));
          dot = SignedDot(_mm256_sub_epi8(q, _mm256_set1_epi8(4)), x);
          for (int i = 0; i < 2; ++i) sc[i] = Q3_KScale(sb, 2 * j + i);
          scale = Half(sb + 108);
        } else {  // Q2_K: q = 0..3 and a 4-bit minimum per half
          const uint8_t* sb = row + (b / 8) * 84;
          dot = UnsignedDot(BitsAt(LoadBytes(sb + 16 + 32 * half), 2 * quarter, 3), x);
          const int32_t s_lo = low_sums[b], s_hi = sx[b] - s_lo;  // the halves' sums of x
          const float dmin = Half(sb + 82);
          for (int i = 0; i < 2; ++i) sc[i] = sb[2 * j + i] & 0x0f;
          mins += (dmin * static_cast<float>(sb[2 * j] >> 4)) * (dx[b] * static_cast<float>(s_lo));
          mins += (dmin * static_cast<float>(sb[2 * j + 1] >> 4)) * (dx[b] * static_cast<float>(s_hi));
          scale = Half(sb + 80);
        }
        dot = _mm256_mullo_epi32(dot, _mm256_set_m128i(_mm_set1_epi32(sc[1]), _mm_set1_epi32(sc[0])));
        break;
      }
    }

    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(scale * dx[b]), acc);
  }
  return HorizontalSum(acc) - mins;
}

// Every token's sum of the first 16 q of each block ([n_tokens][blocks]):
// Q2_K's minimum terms need the halves' sums, and the activations carry
// only the whole block's.
void LowHalfSums(const Int8Activations& xq, int64_t n_tokens, std::vector<int32_t>& out) {
  out.resize(static_cast<size_t>(n_tokens * xq.blocks));
  for (int64_t t = 0; t < n_tokens; ++t) {
    const int8_t* q = xq.TokenQ(t);
    for (int64_t b = 0; b < xq.blocks; ++b) {
      const __m128i v = _mm_load_si128(reinterpret_cast<const __m128i*>(q + b * 32));
      out[static_cast<size_t>(t * xq.blocks + b)] =
          SumLanes(_mm_madd_epi16(_mm_maddubs_epi16(_mm_set1_epi8(1), v), _mm_set1_epi16(1)));
    }
  }
}

void QuantRows(const MatMulArgs& a, int64_t row_begin, int64_t row_end) {
  thread_local std::vector<int32_t> low_sums;
  const bool q2_k = a.dtype == DType::kQ2_K;
  if (q2_k) LowHalfSums(*a.xq, a.n_tokens, low_sums);
  for (int64_t r = row_begin; r < row_end; ++r) {
    const uint8_t* row = a.w + r * a.row_bytes;
    for (int64_t t = 0; t < a.n_tokens; ++t) {
      const int32_t* token_low_sums = q2_k ? low_sums.data() + t * a.xq->blocks : nullptr;
      const float v = DotQuant(a.dtype, row, *a.xq, t, token_low_sums);

      a.y[t * a.n_rows + r] = a.bias ? v + a.bias[r] : v;
    }
  }
}

// 8 weights widened to f32.
inline __m256 LoadWeights8(DType dtype, const uint8_t* row, int64_t i) {
  switch (dtype) {
    case DType::kF32:
      return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + i);
    case DType::kF16:
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i)));
    default:  // BF16
      return _mm256_castsi256_ps(_mm256_slli_epi32(
          _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i))), 16));
  }
}

float DotFloat(DType dtype, const uint8_t* row, const float* x, int64_t k) {
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) acc = _mm256_fmadd_ps(LoadWeights8(dtype, row, i), _mm256_loadu_ps(x + i), acc);
  if (i < k) {  // tail through zero-padded copies: the padding adds exactly nothing
    alignas(32) uint8_t wbuf[32] = {};
    alignas(32) float xbuf[8] = {};
    const int64_t n = k - i, elem = dtype == DType::kF32 ? 4 : 2;
    std::memcpy(wbuf, row + i * elem, static_cast<size_t>(n * elem));
    std::memcpy(xbuf, x + i, static_cast<size_t>(n) * 4);
    acc = _mm256_fmadd_ps(LoadWeights8(dtype, wbuf, 0), _mm256_load_ps(xbuf), acc);
  }
  return HorizontalSum(acc);
}

void FloatRows(const MatMulArgs& a, int64_t row_begin, int64_t row_end) {
  for (int64_t r = row_begin; r < row_end; ++r) {
    const uint8_t* row = a.w + r * a.row_bytes;
    for (int64_t t = 0; t < a.n_tokens; ++t) {
      const float v = DotFloat(a.dtype, row, a.x + t * a.k, a.k);
      a.y[t * a.n_rows + r] = a.bias ? v + a.bias[r] : v;
    }
  }
}

// BF16: weights and the bf16-rounded activations (args.xb, zero-padded to a
// multiple of 32) both widened exactly; each product is exact, so only the
// f32 sums round (kernels.h).
inline __m256 WidenBf16x8(const void* p) {
  return _mm256_castsi256_ps(
      _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p))), 16));
}

float DotBf16(const uint8_t* row, const uint16_t* x, int64_t k) {
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) acc = _mm256_fmadd_ps(WidenBf16x8(row + 2 * i), WidenBf16x8(x + i), acc);
  if (i < k) {  // x is zero past k; the weights through a zero-padded copy
    alignas(16) uint16_t wbuf[8] = {};
    std::memcpy(wbuf, row + 2 * i, static_cast<size_t>(k - i) * 2);
    acc = _mm256_fmadd_ps(WidenBf16x8(wbuf), WidenBf16x8(x + i), acc);
  }
  return HorizontalSum(acc);
}

void Bf16Rows(const MatMulArgs& a, int64_t row_begin, int64_t row_end) {
  for (int64_t r = row_begin; r < row_end; ++r) {
    const uint8_t* row = a.w + r * a.row_bytes;
    for (int64_t t = 0; t < a.n_tokens; ++t) {
      const float v = DotBf16(row, a.xb + t * a.xb_stride, a.k);
      a.y[t * a.n_rows + r] = a.bias ? v + a.bias[r] : v;
    }
  }
}

}  // namespace

const KernelSet& Avx2Kernels() {
  static const KernelSet set = [] {
    KernelSet s;
    s.f32 = s.f16 = FloatRows;
    s.bf16 = Bf16Rows;
    s.q8_0 = s.q4_0 = s.q4_k = QuantRows;
    s.q2_k = s.q3_k = s.q5_k = s.q6_k = QuantRows;

    return s;
  }();
  return set;
}

}  // namespace deepinfer::cpu
