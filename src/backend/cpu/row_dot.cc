#include "backend/cpu/row_dot.h"

#include <cmath>
#include <vector>

#include "core/check.h"
#include "tensor/dequant.h"

namespace deepinfer::cpu {
namespace {

constexpr int kLanes = 16;

float CombineLanes(float* acc) {
  for (int width = kLanes / 2; width >= 1; width /= 2) {
    for (int l = 0; l < width; ++l) acc[l] += acc[l + width];
  }
  return acc[0];
}

float DotF32(const float* w, const float* x, int64_t k) {
  float acc[kLanes] = {};
  for (int64_t i = 0; i < k; ++i) {
    float& a = acc[i % kLanes];
    a = std::fma(w[i], x[i], a);
  }
  return CombineLanes(acc);
}

// Integer value j (0..31) of a Q8_0 / Q4_0 block's quants `qs`.
int BlockValue(DType dtype, const uint8_t* qs, int j) {
  if (dtype == DType::kQ8_0) return static_cast<int8_t>(qs[j]);
  return (j < 16 ? qs[j] & 0x0f : qs[j - 16] >> 4) - 8;
}

float DotBlocks(DType dtype, const uint8_t* row, const float* x, int64_t k) {
  const int64_t block_bytes = BlockBytes(dtype);
  float acc[kLanes] = {};
  for (int64_t b = 0; b < k / 32; ++b) {
    const uint8_t* blk = row + b * block_bytes;
    const float d = F16ToF32(static_cast<uint16_t>(blk[0] | blk[1] << 8));
    const float* xb = x + b * 32;
    for (int l = 0; l < kLanes; ++l) {
      const float lo = static_cast<float>(BlockValue(dtype, blk + 2, l));
      const float hi = static_cast<float>(BlockValue(dtype, blk + 2, l + 16));
      const float s = std::fma(hi, xb[l + 16], lo * xb[l]);
      acc[l] = std::fma(d, s, acc[l]);
    }
  }
  return CombineLanes(acc);
}

}  // namespace

void RowsDotF32Scalar(DType dtype, const uint8_t* w, int64_t row_bytes, int64_t rows, int64_t k,
                      const float* x, float* y) {
  if (dtype == DType::kQ8_0 || dtype == DType::kQ4_0) {
    DI_CHECK(k % 32 == 0);
    for (int64_t r = 0; r < rows; ++r) y[r] = DotBlocks(dtype, w + r * row_bytes, x, k);
    return;
  }
  if (dtype == DType::kF32) {
    for (int64_t r = 0; r < rows; ++r) y[r] = DotF32(reinterpret_cast<const float*>(w + r * row_bytes), x, k);
    return;
  }
  DI_CHECK(CanDequantize(dtype));
  thread_local std::vector<float> row;
  row.resize(static_cast<size_t>(k));
  for (int64_t r = 0; r < rows; ++r) {
    DequantizeRow(dtype, w + r * row_bytes, row.data(), k);
    y[r] = DotF32(row.data(), x, k);
  }
}

void RowsDotF32WithIsa(Isa isa, DType dtype, const uint8_t* w, int64_t row_bytes, int64_t rows, int64_t k,
                       const float* x, float* y) {
  DI_CHECK(CpuSupports(isa));
  if (isa == Isa::kAvx512) {
    RowsDotF32Avx512(dtype, w, row_bytes, rows, k, x, y);
  } else {
    RowsDotF32Scalar(dtype, w, row_bytes, rows, k, x, y);
  }
}

void RowToF32(DType dtype, const uint8_t* row, int64_t n, float* out) {
  static const bool avx512 = ActiveIsa() == Isa::kAvx512;
  if (avx512 && (dtype == DType::kF16 || dtype == DType::kBF16)) {
    HalfRowToF32Avx512(dtype, row, n, out);
  } else {
    DequantizeRow(dtype, row, out, n);
  }
}

void RowsDotF32(DType dtype, const uint8_t* w, int64_t row_bytes, int64_t rows, int64_t k, const float* x,
                float* y) {
  static const Isa isa = ActiveIsa();
  RowsDotF32WithIsa(isa, dtype, w, row_bytes, rows, k, x, y);
}

void RowsDotF32Multi(DType dtype, const uint8_t* w, int64_t row_bytes, int64_t rows, int64_t k,
                     const float* const* xs, int64_t num_x, float* const* ys) {
  static const Isa isa = ActiveIsa();
  if (isa == Isa::kAvx512 && (dtype == DType::kQ4_0 || dtype == DType::kQ8_0)) {
    RowsDotF32MultiAvx512(dtype, w, row_bytes, rows, k, xs, num_x, ys);
    return;
  }
  for (int64_t t = 0; t < num_x; ++t) RowsDotF32WithIsa(isa, dtype, w, row_bytes, rows, k, xs[t], ys[t]);
}

}  // namespace deepinfer::cpu
