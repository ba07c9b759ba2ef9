// The per-ISA kernel sets behind cpu::MatMul (internal to the backend).
//
// Every kernel computes y[t * n_rows + r] for rows r in [row_begin, row_end)
// and all tokens t. Contract that makes batching and threading invisible in
// the results (batch invariance): the arithmetic for one (row, token) pair is
// a fixed sequence of operations that depends only on K and the ISA - not on
// n_tokens, on the row range, or on which register tile the pair landed in.
//
// Arithmetic per weight type:
//   F32 / F16: weights widened exactly to f32, f32 activations, f32
//     multiply-adds (no rounding of the activations). AVX-512 packed panels
//     (packed_weights.h, the model's path): lane r of an accumulator is row
//     r, per (row, token) a sequential fma over K in order from zero, then
//     + bias; file layout: 16-lane partial sums and one reduction.
//   BF16: activations rounded to bf16 once per MatMul call (RoundToBf16:
//     round-to-nearest-even, NaN stays NaN, denormals to +-0 - what
//     vcvtneps2bf16 does; llama.cpp rounds the same way), so every product
//     w * x is exact in f32; per (row, token) the products are summed in f32.
//     AVX-512 (vdpbf16ps), packed panels (packed_weights.h, the model's
//     path): lane r of an accumulator is row r, and per (row, token) the
//     K-pairs (2i, 2i+1) are added in order, one vdpbf16ps each, from zero
//     (a zero element pads an odd K), then + bias - a sequential sum over
//     pairs, no cross-lane reduction; running K in parts with the
//     accumulators parked in between changes no bit. With AMX-BF16
//     (bf16_panels_amx.cc) the tile unit's own f32 order over K-chunks of
//     16 pairs instead, for every token count. File layout
//     (unpacked): lane j of one accumulator takes elements 2j, 2j+1 of each
//     32-element chunk of K in order (masked zeros past K), then one fixed
//     16-lane reduction. The instruction also treats denormal inputs as zero
//     and flushes denormal results (DAZ/FTZ), unlike the scalar and AVX2
//     levels: differences far below the tests' tolerance.
//   Q8_0 / Q4_0 / Q4_K / Q5_K: activations quantized to int8 per 32-block
//     (activations.h); per block an exact int32 dot product isum, then
//     acc += float(isum) * (d_w * d_x)   [Q4_K / Q5_K also: acc -= (dmin*m) * (d_x * sum_x)].
//     (Q5_K is Q4_K with a fifth bit: q = 0..31, the same scales and mins.)
//     Which f32 lane a block's product lands in (and so the summation order
//     over blocks) is fixed per kernel and layout: the AVX-512 kernels of the
//     interleaved packed Q8_0 / Q4_0 layouts sum in a different order from
//     the file-layout kernel of the same level (last-bit differences), still
//     a function of K only.
//   Q6_K / Q3_K: the same int8 activations; per 32-block b (two 16-element
//     sub-blocks lo / hi with int8 scales sc_lo, sc_hi and the super-block's
//     f16 d) an exact int32 (Q6_K: o = 32, Q3_K: o = 4, sc = the 6-bit scale - 32)
//       isum = sc_lo * sum_lo((q - o) * x) + sc_hi * sum_hi((q - o) * x)
//     (|isum| < 2^25), then acc += float(isum) * (d_w * d_x). The scales are
//     folded in integers, so the only rounding is the f32 accumulation over
//     blocks (order fixed per kernel and layout, as above).
//   Q2_K: halves as Q3_K with q = 0..3 (no offset), 4-bit scales sc and
//     minimums m, and the super-block's f16 d and dmin; per 32-block an
//     exact int32 and three f32 operations (s_lo / s_hi: the halves' sums of
//     the int8 activations, as Q4_K's sum_x per half):
//       isum = sc_lo * sum_lo(q * x) + sc_hi * sum_hi(q * x)
//       acc += float(isum) * (d_w * d_x)
//       acc -= (dmin_w * m_lo) * (d_x * s_lo);  acc -= (dmin_w * m_hi) * (d_x * s_hi)

#pragma once

#include <bit>
#include <cstdint>

#include "backend/cpu/activations.h"
#include "tensor/dequant.h"
#include "tensor/dtype.h"

namespace deepinfer::cpu {

// f32 -> bf16 bits, round to nearest even; NaN stays NaN (made quiet);
// denormals (and +-0) become +-0; values past the largest bf16 become +-inf.
// Bit for bit what vcvtneps2bf16 does.
inline uint16_t RoundToBf16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7f800000u) == 0) return static_cast<uint16_t>((bits >> 16) & 0x8000u);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
// out[0, k) = RoundToBf16(x_t[i]), out[k, stride) = 0.
void RoundTokenToBf16(const float* x_t, int64_t k, int64_t stride, uint16_t* out);

struct MatMulArgs {
  DType dtype = DType::kF32;
  const uint8_t* w = nullptr;  // [n_rows] rows of row_bytes, file layout (any alignment)
  int64_t row_bytes = 0;
  int64_t k = 0;
  int64_t n_rows = 0;  // N; also the stride of y
  int64_t n_tokens = 0;
  const float* x = nullptr;             // f32 [n_tokens, k] (float weight types)
  const Int8Activations* xq = nullptr;  // quantized weight types
  // BF16 weights: the activations rounded once per call (RoundTokenToBf16),
  // bf16 [n_tokens, xb_stride], xb_stride a multiple of 32 (64 bytes), rows
  // 64-byte aligned, zero from k to xb_stride.
  const uint16_t* xb = nullptr;
  int64_t xb_stride = 0;
  const float* bias = nullptr;  // [n_rows] or null
  float* y = nullptr;           // f32 [n_tokens, n_rows]
};

using RowRangeKernel = void (*)(const MatMulArgs& args, int64_t row_begin, int64_t row_end);

struct KernelSet {
  // Null when this set has no kernel for the type (the caller falls back).
  RowRangeKernel f32 = nullptr, f16 = nullptr, bf16 = nullptr;
  RowRangeKernel q8_0 = nullptr, q4_0 = nullptr, q2_k = nullptr, q3_k = nullptr, q4_k = nullptr,
                 q5_k = nullptr, q6_k = nullptr;
  // Kernels for matrices in packed_weights.h's layouts (row_bytes = stride).
  RowRangeKernel q8_0_packed = nullptr, q4_0_packed = nullptr, q2_k_packed = nullptr, q3_k_packed = nullptr,
                 q4_k_packed = nullptr, q5_k_packed = nullptr, q6_k_packed = nullptr, bf16_packed = nullptr,
                 f16_packed = nullptr, f32_packed = nullptr;
  // Q8_0 in row panels (PackedLayout::row_panels).
  RowRangeKernel q8_0_row_panels = nullptr;
  // Quantizes token t (activations.h); a SIMD version must give the same
  // bytes as the scalar QuantizeToken. Called concurrently for different tokens.
  void (*quantize_token)(const float* x_t, int64_t t, Int8Activations* out) = QuantizeToken;
  // Optional: fills token t's lanes_* and group_* arrays of xq (already
  // quantized) for weight type `dtype`. Called concurrently for different tokens.
  void (*prepare)(Int8Activations* xq, DType dtype, int64_t t) = nullptr;
  // Rounds one token's activations for the bf16 kernel (RoundTokenToBf16's
  // contract; a SIMD version must give the same bits). Called concurrently
  // for different tokens.
  void (*round_bf16)(const float* x_t, int64_t k, int64_t stride, uint16_t* out) = RoundTokenToBf16;

  RowRangeKernel For(DType t) const {
    switch (t) {
      case DType::kF32:
        return f32;
      case DType::kF16:
        return f16;
      case DType::kBF16:
        return bf16;
      case DType::kQ8_0:
        return q8_0;
      case DType::kQ4_0:
        return q4_0;
      case DType::kQ2_K:
        return q2_k;
      case DType::kQ3_K:
        return q3_k;
      case DType::kQ4_K:
        return q4_k;
      case DType::kQ5_K:
        return q5_k;
      case DType::kQ6_K:
        return q6_k;
      default:
        return nullptr;
    }
  }
  RowRangeKernel ForPacked(DType t) const {
    switch (t) {
      case DType::kQ8_0:
        return q8_0_packed;
      case DType::kQ4_0:
        return q4_0_packed;
      case DType::kQ2_K:
        return q2_k_packed;
      case DType::kQ3_K:
        return q3_k_packed;
      case DType::kQ4_K:
        return q4_k_packed;
      case DType::kQ5_K:
        return q5_k_packed;
      case DType::kQ6_K:
        return q6_k_packed;
      case DType::kBF16:
        return bf16_packed;
      case DType::kF16:
        return f16_packed;
      case DType::kF32:
        return f32_packed;
      default:
        return nullptr;
    }
  }
};

const KernelSet& ScalarKernels();
// Dequantizes each row to f32 and dots it with f32 activations: correct for
// every type DequantizeRow accepts (used for types without a fast kernel).
RowRangeKernel DequantizingKernel();
const KernelSet& Avx2Kernels();    // call only when CpuSupports(Isa::kAvx2)
const KernelSet& Avx512Kernels();  // call only when CpuSupports(Isa::kAvx512)

// Q4_K's packed 6-bit (scale, min) of sub-block s (0..7) from the 12 scale bytes.
inline void Q4KScaleMin(int s, const uint8_t* scales, int* sc, int* m) {
  if (s < 4) {
    *sc = scales[s] & 63;
    *m = scales[s + 4] & 63;
  } else {
    *sc = (scales[s + 4] & 0x0f) | ((scales[s - 4] >> 6) << 4);
    *m = (scales[s + 4] >> 4) | ((scales[s] >> 6) << 4);
  }
}

// Q5_K element l (0..31) of sub-block s (0..7) of a super-block as its
// 5-bit q (0..31): Q4_K's nibble, plus bit s of qh[l] as 16 (tensor/dequant.cc).
inline int Q5_KValue(const uint8_t* sb, int s, int l) {
  const uint8_t byte = sb[48 + 32 * (s / 2) + l];
  const int nibble = s % 2 == 0 ? byte & 0x0f : byte >> 4;
  return nibble | (((sb[16 + l] >> s) & 1) << 4);
}

// Q6_K element i of a super-block as its stored 6-bit value (0..63; w = q - 32).
inline int Q6_KValue(const uint8_t* sb, int i) {
  const int half = i / 128, j = (i % 128) / 32, l = i % 32;
  const uint8_t* ql = sb + half * 64;
  const uint8_t* qh = sb + 128 + half * 32;
  // j = 0..3 take ql[l], ql[l + 32], ql[l] >> 4, ql[l + 32] >> 4 (tensor/dequant.cc)
  const uint8_t q = ql[l + 32 * (j % 2)];
  const int lo_nibble = j < 2 ? q & 0x0f : q >> 4;
  return lo_nibble | (((qh[l] >> (2 * j)) & 3) << 4);
}

// Q3_K element i of a super-block as its stored 3-bit value (0..7; w = q - 4):
// 2 bits of qs plus the hmask bit as 4 (tensor/dequant.cc).
inline int Q3_KValue(const uint8_t* sb, int i) {
  const int half = i / 128, j = (i % 128) / 32, l = i % 32;
  const int low = (sb[32 + 32 * half + l] >> (2 * j)) & 3;
  return low | (((sb[l] >> (4 * half + j)) & 1) << 2);
}

// Q2_K element i of a super-block as its 2-bit q (0..3), from qs (tensor/dequant.cc).
inline int Q2_KValue(const uint8_t* sb, int i) {
  const int half = i / 128, j = (i % 128) / 32, l = i % 32;
  return (sb[16 + 32 * half + l] >> (2 * j)) & 3;
}

// True for the weight types whose kernels read int8 activations (Int8Activations).
inline bool UsesInt8Activations(DType t) {
  return t == DType::kQ8_0 || t == DType::kQ4_0 || t == DType::kQ2_K || t == DType::kQ3_K ||
         t == DType::kQ4_K || t == DType::kQ5_K || t == DType::kQ6_K;
}

// The K-quants with two 16-element sub-blocks per 32-block, each with its
// own scale (Q6_K, Q3_K, Q2_K). Their activation groups carry per half
// -HalvesOffset * the half's sum of x: the unsigned q's offset (Q6_K 32,
// Q3_K 4) removed from the integer sums; Q2_K (no offset, a minimum
// instead) gets + the sums, for its minimum term.
constexpr bool HasHalves(DType t) { return t == DType::kQ6_K || t == DType::kQ3_K || t == DType::kQ2_K; }
constexpr int HalvesOffset(DType t) { return t == DType::kQ6_K ? 32 : t == DType::kQ3_K ? 4 : -1; }

// True for the K-quants with a per-sub-block minimum (Q4_K, Q5_K): their
// activations also carry sum(q_x) per block.
constexpr bool HasBlockMinimum(DType t) { return t == DType::kQ4_K || t == DType::kQ5_K; }

}  // namespace deepinfer::cpu
