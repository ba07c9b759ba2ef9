// QuantizeRow: hand-computed blocks where the scale is exact, plus
// quantize -> dequantize error bounds on random rows.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "tensor/dequant.h"

namespace deepinfer {
namespace {

TEST(Quantize, Q8_0RoundsHalfAwayFromZero) {
  // amax = 127 makes d exactly 1, so q = round(x) with ties away from zero.
  float x[32] = {127, 0.5f, -0.5f, 1.5f, 2.5f, -2.5f, 0.49f, -127, 3.2f};
  uint8_t blk[34];
  ASSERT_TRUE(QuantizeRow(DType::kQ8_0, x, blk, 32));
  EXPECT_EQ(blk[0] | (blk[1] << 8), 0x3c00);  // d = 1.0
  const int expected[9] = {127, 1, -1, 2, 3, -3, 0, -127, 3};
  for (int j = 0; j < 9; ++j) EXPECT_EQ(static_cast<int8_t>(blk[2 + j]), expected[j]) << j;
  for (int j = 9; j < 32; ++j) EXPECT_EQ(blk[2 + j], 0);
}

TEST(Quantize, Q4_0MapsLargestMagnitudeToMinus8) {
  // Largest magnitude is -8 -> d = 1; q = min(15, trunc(x + 8.5)).
  float x[32] = {-8, 7, 7.9f, 0.5f, -0.5f, 0.49f, 3, -3.6f};
  uint8_t blk[18];
  ASSERT_TRUE(QuantizeRow(DType::kQ4_0, x, blk, 32));
  EXPECT_EQ(blk[0] | (blk[1] << 8), 0x3c00);
  const int expected[8] = {0, 15, 15, 9, 8, 8, 11, 4};
  for (int j = 0; j < 8; ++j) EXPECT_EQ(blk[2 + j] & 15, expected[j]) << j;
  for (int j = 0; j < 16; ++j) EXPECT_EQ(blk[2 + j] >> 4, 8) << j;  // zeros -> level 8
  // Largest magnitude +8 -> d = -1: x = 8 is level 0, dequantizes to (0-8)*-1 = 8.
  float y[32] = {8, -7};
  ASSERT_TRUE(QuantizeRow(DType::kQ4_0, y, blk, 32));
  EXPECT_EQ(blk[0] | (blk[1] << 8), 0xbc00);
  float back[32];
  DequantizeRow(DType::kQ4_0, blk, back, 32);
  EXPECT_EQ(back[0], 8.0f);
  EXPECT_EQ(back[1], -7.0f);
  EXPECT_EQ(back[2], 0.0f);
}

TEST(Quantize, AllZeroBlock) {
  float x[32] = {};
  uint8_t blk[34];
  ASSERT_TRUE(QuantizeRow(DType::kQ8_0, x, blk, 32));
  float back[32];
  DequantizeRow(DType::kQ8_0, blk, back, 32);
  for (float v : back) EXPECT_EQ(v, 0.0f);
}

// Per-block bounds: rounding to the grid costs half a step; the f16 scale
// adds at most 2^-11 relative error on |q*d| <= amax (so amax * 2^-10 is a
// safe margin). Q4_0's asymmetric grid clips the value opposite the max to
// level 15, a full step away.
TEST(Quantize, RandomRowErrorBounds) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const int64_t n = 32 * 64;
  std::vector<float> x(n), back(n);
  for (float& v : x) v = dist(rng) * (1 + (&v - x.data()) / 256);
  for (DType t : {DType::kQ8_0, DType::kQ4_0, DType::kF16, DType::kBF16, DType::kF32}) {
    std::vector<uint8_t> q(RowBytes(t, n));
    ASSERT_TRUE(QuantizeRow(t, x.data(), q.data(), n));
    DequantizeRow(t, q.data(), back.data(), n);
    for (int64_t b = 0; b < n / 32; ++b) {
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
      for (int j = 0; j < 32; ++j) {
        const float v = x[b * 32 + j], err = std::fabs(back[b * 32 + j] - v);
        float bound = 0;
        switch (t) {
          case DType::kQ8_0:
            bound = amax / 127 / 2 + amax * 0x1p-10f;
            break;
          case DType::kQ4_0:
            bound = amax / 8 + amax * 0x1p-10f;
            break;
          case DType::kF16:
            bound = std::fabs(v) * 0x1p-11f;
            break;
          case DType::kBF16:
            bound = std::fabs(v) * 0x1p-8f;
            break;
          default:
            bound = 0;
        }
        ASSERT_LE(err, bound) << DTypeName(t) << " elem " << b * 32 + j;
      }
    }
  }
}

TEST(Quantize, RejectsUnsupportedTypeAndRaggedRow) {
  float x[256] = {};
  uint8_t out[512];
  EXPECT_FALSE(QuantizeRow(DType::kQ4_K, x, out, 256));
  EXPECT_FALSE(QuantizeRow(DType::kQ8_0, x, out, 31));
}

}  // namespace
}  // namespace deepinfer
