// Scalar reference kernels: the definition the SIMD kernels are tested
// against. Portable C++; each weight row is first decoded (to f32 for the
// float types, to int8 + per-block scales for the quantized ones) and then
// used for every token.
#include <cstring>
#include <vector>

#include "backend/cpu/kernels.h"
#include "core/check.h"
#include "tensor/dequant.h"

namespace deepinfer::cpu {
namespace {

constexpr int kLanes = 16;

float LoadF16(const uint8_t* p) { return F16ToF32(static_cast<uint16_t>(p[0] | (p[1] << 8))); }

// 16 strided partial sums combined pairwise, then the tail in order: the
// lane order of cpu::Dot (dot.h), with products rounded before the add (not
// fused as Dot is), so scalar f32 results match the old reference.
float Dot16(const float* a, const float* b, int64_t n) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += a[i + l] * b[i + l];
  }
  for (int width = kLanes / 2; width >= 1; width /= 2) {
    for (int l = 0; l < width; ++l) acc[l] += acc[l + width];
  }
  float tail = 0.0f;
  for (; i < n; ++i) tail += a[i] * b[i];
  return acc[0] + tail;
}

void FloatRows(const MatMulArgs& a, int64_t row_begin, int64_t row_end) {
  thread_local std::vector<float> row;
  row.resize(static_cast<size_t>(a.k));
  for (int64_t r = row_begin; r < row_end; ++r) {
    const uint8_t* src = a.w + r * a.row_bytes;
    if (a.dtype == DType::kF32) {
      std::memcpy(row.data(), src, static_cast<size_t>(a.k) * 4);  // rows may be unaligned
    } else {
      DequantizeRow(a.dtype, src, row.data(), a.k);
    }
    for (int64_t t = 0; t < a.n_tokens; ++t) {
      const float v = Dot16(row.data(), a.x + t * a.k, a.k);
      a.y[t * a.n_rows + r] = a.bias ? v + a.bias[r] : v;
    }
  }
}

// BF16: the weights widened exactly, the activations already rounded to
// bf16 by MatMul (args.xb), so each product is exact in f32 and only the
// summation rounds - the arithmetic of vdpbf16ps in another order.
void Bf16Rows(const MatMulArgs& a, int64_t row_begin, int64_t row_end) {
  thread_local std::vector<float> row, x;
  row.resize(static_cast<size_t>(a.k));
  x.resize(static_cast<size_t>(a.k * a.n_tokens));
  for (int64_t t = 0; t < a.n_tokens; ++t) {
    for (int64_t i = 0; i < a.k; ++i) x[t * a.k + i] = BF16ToF32(a.xb[t * a.xb_stride + i]);
  }
  for (int64_t r = row_begin; r < row_end; ++r) {
    DequantizeRow(DType::kBF16, a.w + r * a.row_bytes, row.data(), a.k);
    for (int64_t t = 0; t < a.n_tokens; ++t) {
      const float v = Dot16(row.data(), x.data() + t * a.k, a.k);
      a.y[t * a.n_rows + r] = a.bias ? v + a.bias[r] : v;
    }
  }
}

// A quantized row decoded to signed int8 values and per-32-block factors
// such that row[i] = scale[b] * q[i] - min[b] (b = i / 32).
struct DecodedRow {
  std::vector<int8_t> q;
  std::vector<float> scale, min;
};

void DecodeRow(DType t, const uint8_t* src, int64_t k, DecodedRow* out) {
  const int64_t blocks = k / 32;
  out->q.resize(static_cast<size_t>(k));
  out->scale.resize(static_cast<size_t>(blocks));
  out->min.assign(static_cast<size_t>(blocks), 0.0f);
  int8_t* q = out->q.data();
  switch (t) {
    case DType::kQ8_0:
      for (int64_t b = 0; b < blocks; ++b, src += 34) {
        out->scale[b] = LoadF16(src);
        std::memcpy(q + b * 32, src + 2, 32);
      }
      break;
    case DType::kQ4_0:
      for (int64_t b = 0; b < blocks; ++b, src += 18) {
        out->scale[b] = LoadF16(src);
        for (int j = 0; j < 16; ++j) {
          q[b * 32 + j] = static_cast<int8_t>((src[2 + j] & 0x0f) - 8);
          q[b * 32 + j + 16] = static_cast<int8_t>((src[2 + j] >> 4) - 8);
        }
      }
      break;
    case DType::kQ4_K:
    case DType::kQ5_K:  // Q4_K's header and sub-blocks, q with a fifth bit
      for (int64_t sb = 0; sb < blocks / 8; ++sb, src += BlockBytes(t)) {
        const float d = LoadF16(src), dmin = LoadF16(src + 2);
        for (int s = 0; s < 8; ++s) {
          int sc, m;
          Q4KScaleMin(s, src + 4, &sc, &m);
          out->scale[sb * 8 + s] = d * static_cast<float>(sc);
          out->min[sb * 8 + s] = dmin * static_cast<float>(m);
          const uint8_t* qs = src + 16 + 32 * (s / 2);
          for (int l = 0; l < 32; ++l) {
            const int value = t == DType::kQ5_K ? Q5_KValue(src, s, l)
                              : s % 2 == 0      ? qs[l] & 0x0f
                                                : qs[l] >> 4;
            q[(sb * 8 + s) * 32 + l] = static_cast<int8_t>(value);
          }
        }
      }
      break;

    default:
      DI_CHECK_MSG(false, "not a quantized type with int8 kernels");
  }
}

void QuantRows(const MatMulArgs& a, int64_t row_begin, int64_t row_end) {
  thread_local DecodedRow row;
  const Int8Activations& xq = *a.xq;
  const bool has_min = HasBlockMinimum(a.dtype);
  for (int64_t r = row_begin; r < row_end; ++r) {
    DecodeRow(a.dtype, a.w + r * a.row_bytes, a.k, &row);
    for (int64_t t = 0; t < a.n_tokens; ++t) {
      const int8_t* xqt = xq.TokenQ(t);
      const float* dx = xq.TokenD(t);
      const int32_t* sx = xq.TokenSum(t);
      float acc = 0.0f;
      for (int64_t b = 0; b < xq.blocks; ++b) {
        int32_t isum = 0;
        for (int i = 0; i < 32; ++i) isum += row.q[b * 32 + i] * xqt[b * 32 + i];
        acc += static_cast<float>(isum) * (row.scale[b] * dx[b]);
        if (has_min) acc -= row.min[b] * (dx[b] * static_cast<float>(sx[b]));
      }
      a.y[t * a.n_rows + r] = a.bias ? acc + a.bias[r] : acc;
    }
  }
}

// Q6_K / Q3_K / Q2_K (kernels.h): per 32-block the two 16-element sub-block
// dots, exact in int32, scaled by their scales in int32, then one f32
// multiply-add (Q2_K: and the minimums' term, from the halves' sums of x).
void HalvesRows(const MatMulArgs& a, int64_t row_begin, int64_t row_end) {
  const Int8Activations& xq = *a.xq;
  const DType type = a.dtype;
  const int64_t sb_bytes = BlockBytes(type);
  const int64_t d_at = type == DType::kQ6_K ? 208 : type == DType::kQ3_K ? 108 : 80;
  thread_local std::vector<int8_t> w;                // q - offset
  thread_local std::vector<int32_t> scale, minimum;  // per 16-element sub-block (minimum: Q2_K)
  w.resize(static_cast<size_t>(a.k));
  scale.resize(static_cast<size_t>(a.k / 16));
  minimum.assign(static_cast<size_t>(a.k / 16), 0);
  for (int64_t r = row_begin; r < row_end; ++r) {
    const uint8_t* row = a.w + r * a.row_bytes;
    for (int64_t i = 0; i < a.k; ++i) {
      const uint8_t* sb = row + i / 256 * sb_bytes;
      const int e = static_cast<int>(i % 256), j = e / 16;
      if (type == DType::kQ6_K) {
        w[i] = static_cast<int8_t>(Q6_KValue(sb, e) - 32);
        scale[i / 16] = sb[192 + j] < 128 ? sb[192 + j] : sb[192 + j] - 256;  // the int8 byte

      } else if (type == DType::kQ3_K) {
        w[i] = static_cast<int8_t>(Q3_KValue(sb, e) - 4);
        scale[i / 16] = Q3_KScale(sb, j);
      } else {
        w[i] = static_cast<int8_t>(Q2_KValue(sb, e));
        scale[i / 16] = sb[j] & 0x0f;
        minimum[i / 16] = sb[j] >> 4;
      }
    }
    for (int64_t t = 0; t < a.n_tokens; ++t) {
      const int8_t* xqt = xq.TokenQ(t);
      const float* dx = xq.TokenD(t);
      float acc = 0.0f;
      for (int64_t b = 0; b < xq.blocks; ++b) {
        int32_t lo = 0, hi = 0, x_lo = 0, x_hi = 0;
        for (int i = 0; i < 16; ++i) lo += w[b * 32 + i] * xqt[b * 32 + i];
        for (int i = 16; i < 32; ++i) hi += w[b * 32 + i] * xqt[b * 32 + i];
        const int32_t isum = scale[2 * b] * lo + scale[2 * b + 1] * hi;
        const uint8_t* ds = row + b / 8 * sb_bytes + d_at;
        acc += static_cast<float>(isum) * (LoadF16(ds) * dx[b]);
        if (type != DType::kQ2_K) continue;
        for (int i = 0; i < 16; ++i) x_lo += xqt[b * 32 + i];
        for (int i = 16; i < 32; ++i) x_hi += xqt[b * 32 + i];
        const float dmin = LoadF16(ds + 2);
        acc -= (dmin * static_cast<float>(minimum[2 * b])) * (dx[b] * static_cast<float>(x_lo));
        acc -= (dmin * static_cast<float>(minimum[2 * b + 1])) * (dx[b] * static_cast<float>(x_hi));
      }
      a.y[t * a.n_rows + r] = a.bias ? acc + a.bias[r] : acc;
    }
  }
}

}  // namespace

void RoundTokenToBf16(const float* x_t, int64_t k, int64_t stride, uint16_t* out) {
  for (int64_t i = 0; i < k; ++i) out[i] = RoundToBf16(x_t[i]);
  for (int64_t i = k; i < stride; ++i) out[i] = 0;
}

RowRangeKernel DequantizingKernel() { return FloatRows; }

const KernelSet& ScalarKernels() {
  static const KernelSet set = [] {
    KernelSet s;
    s.f32 = s.f16 = FloatRows;
    s.bf16 = Bf16Rows;
    s.q8_0 = s.q4_0 = s.q4_k = s.q5_k = QuantRows;
    s.q6_k = s.q3_k = s.q2_k = HalvesRows;

    return s;
  }();
  return set;
}

}  // namespace deepinfer::cpu
