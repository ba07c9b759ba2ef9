// RowToF32: a stored row as f32 with DequantizeRow's bits at every level.
#include "backend/cpu/row_to_f32.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/isa.h"
#include "tensor/dequant.h"

namespace deepinfer::cpu {
namespace {

// RowToF32 gives DequantizeRow's bits for f16 / bf16 rows of odd lengths,
// including subnormals and infinities (an f16 signaling NaN may come back
// quieted: the contract leaves NaN payloads open).
TEST(RowToF32, HalfRowsEqualDequantizeRow) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> bits(0, 0xffff);
  for (DType dtype : {DType::kF16, DType::kBF16}) {
    for (int64_t n : {1, 15, 16, 37, 576}) {
      std::vector<uint16_t> row(static_cast<size_t>(n));
      for (auto& v : row) {
        v = static_cast<uint16_t>(bits(rng));
        if (dtype == DType::kF16 && (v & 0x7c00) == 0x7c00) v &= 0xfc00;  // NaN -> infinity
      }
      row[0] = 0x0001;  // smallest subnormal (f16) / a tiny one (bf16)
      const auto* bytes = reinterpret_cast<const uint8_t*>(row.data());
      std::vector<float> got(static_cast<size_t>(n)), want(static_cast<size_t>(n));
      RowToF32(dtype, bytes, n, got.data());
      DequantizeRow(dtype, bytes, want.data(), n);
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
          << DTypeName(dtype) << " " << n;
      if (CpuSupports(Isa::kAvx512)) {
        HalfRowToF32Avx512(dtype, bytes, n, got.data());
        EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
            << DTypeName(dtype) << " " << n;
      }
    }
  }
}

}  // namespace
}  // namespace deepinfer::cpu
