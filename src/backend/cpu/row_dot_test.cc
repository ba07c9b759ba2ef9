// RowsDotF32: every ISA level gives the scalar kernel's bits (the lane order
// is part of the contract), and the scalar kernel equals a double-precision
// dot of the dequantized rows to f32 rounding, on odd shapes (leftover rows of
// the 4-row tiles, k with a partial 16-element chunk, one block).
#include "backend/cpu/row_dot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tensor/dequant.h"

namespace deepinfer::cpu {
namespace {

struct Case {
  DType dtype;
  int64_t rows, k;
};

TEST(RowsDotF32, IsasMatchScalarBitsAndScalarMatchesDequantizedDot) {
  std::mt19937 rng(11);
  std::normal_distribution<float> n(0.0f, 1.0f);
  const std::vector<Case> cases = {
      {DType::kQ4_0, 1, 32},  {DType::kQ4_0, 7, 128}, {DType::kQ4_0, 13, 160}, {DType::kQ8_0, 5, 96},
      {DType::kQ8_0, 4, 512}, {DType::kF32, 9, 45},   {DType::kF32, 3, 1},     {DType::kF32, 6, 128},
      {DType::kF16, 5, 37},   {DType::kBF16, 2, 64},
  };
  for (const Case& c : cases) {
    std::vector<float> values(static_cast<size_t>(c.rows * c.k)), x(static_cast<size_t>(c.k));
    for (auto& v : values) v = n(rng);
    for (auto& v : x) v = n(rng);
    const int64_t row_bytes = RowBytes(c.dtype, c.k) + 8;  // rows not packed back to back (f32 stays aligned)
    std::vector<uint8_t> w(static_cast<size_t>(c.rows * row_bytes));
    std::vector<float> deq(static_cast<size_t>(c.k));
    std::vector<double> want(static_cast<size_t>(c.rows));
    for (int64_t r = 0; r < c.rows; ++r) {
      ASSERT_TRUE(QuantizeRow(c.dtype, values.data() + r * c.k, w.data() + r * row_bytes, c.k));
      DequantizeRow(c.dtype, w.data() + r * row_bytes, deq.data(), c.k);
      double s = 0;
      for (int64_t i = 0; i < c.k; ++i) s += double(deq[static_cast<size_t>(i)]) * x[static_cast<size_t>(i)];
      want[static_cast<size_t>(r)] = s;
    }
    std::vector<float> scalar(static_cast<size_t>(c.rows));
    RowsDotF32Scalar(c.dtype, w.data(), row_bytes, c.rows, c.k, x.data(), scalar.data());
    for (int64_t r = 0; r < c.rows; ++r) {
      EXPECT_NEAR(scalar[static_cast<size_t>(r)], want[static_cast<size_t>(r)],
                  1e-5 * std::sqrt(double(c.k)) * 4)
          << DTypeName(c.dtype) << " row " << r << " k " << c.k;
    }
    for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
      if (!CpuSupports(isa)) continue;
      std::vector<float> got(static_cast<size_t>(c.rows));
      RowsDotF32WithIsa(isa, c.dtype, w.data(), row_bytes, c.rows, c.k, x.data(), got.data());
      EXPECT_EQ(0, std::memcmp(got.data(), scalar.data(), got.size() * sizeof(float)))
          << DTypeName(c.dtype) << " rows " << c.rows << " k " << c.k << " isa " << static_cast<int>(isa);
    }
  }
}

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

// RowsDotF32Multi: each vector's outputs the bits of one RowsDotF32 call,
// for vector counts around the 4-vector block (leftover vectors) and row
// counts around the 4-row tile (leftover rows), every weight type.
TEST(RowsDotF32, MultiGivesTheBitsOfOneCallPerVector) {
  std::mt19937 rng(29);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (DType dtype : {DType::kQ4_0, DType::kQ8_0, DType::kF32}) {
    for (int64_t rows : {1, 3, 4, 9}) {
      for (int64_t k : {32, 128, 512}) {
        for (int64_t num_x : {0, 1, 2, 3, 4, 5, 11}) {
          const int64_t row_bytes = RowBytes(dtype, k) + 8;
          std::vector<float> values(static_cast<size_t>(rows * k));
          for (auto& v : values) v = n(rng);
          std::vector<uint8_t> w(static_cast<size_t>(rows * row_bytes));
          for (int64_t r = 0; r < rows; ++r) {
            ASSERT_TRUE(QuantizeRow(dtype, values.data() + r * k, w.data() + r * row_bytes, k));
          }
          std::vector<std::vector<float>> x(static_cast<size_t>(num_x),
                                            std::vector<float>(static_cast<size_t>(k)));
          std::vector<std::vector<float>> got(static_cast<size_t>(num_x),
                                              std::vector<float>(static_cast<size_t>(rows)));
          std::vector<const float*> xs;
          std::vector<float*> ys;
          for (int64_t t = 0; t < num_x; ++t) {
            for (auto& v : x[static_cast<size_t>(t)]) v = n(rng);
            xs.push_back(x[static_cast<size_t>(t)].data());
            ys.push_back(got[static_cast<size_t>(t)].data());
          }
          RowsDotF32Multi(dtype, w.data(), row_bytes, rows, k, xs.data(), num_x, ys.data());
          for (int64_t t = 0; t < num_x; ++t) {
            std::vector<float> want(static_cast<size_t>(rows));
            RowsDotF32(dtype, w.data(), row_bytes, rows, k, xs[static_cast<size_t>(t)], want.data());
            EXPECT_EQ(
                0, std::memcmp(got[static_cast<size_t>(t)].data(), want.data(), want.size() * sizeof(float)))
                << DTypeName(dtype) << " rows " << rows << " k " << k << " vectors " << num_x << " at " << t;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace deepinfer::cpu
