#include "tensor/dtype.h"

#include <gtest/gtest.h>

#include <limits>

namespace deepinfer {
namespace {

TEST(DType, NamesRoundTrip) {
  for (DType t :
       {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K,
        DType::kQ5_K, DType::kQ3_K, DType::kQ2_K, DType::kI32, DType::kI64, DType::kI8, DType::kU8}) {
    auto back = DTypeFromName(DTypeName(t));
    ASSERT_TRUE(back.has_value()) << DTypeName(t);
    EXPECT_EQ(*back, t);
  }
  EXPECT_STREQ(DTypeName(DType::kQ8_0), "q8_0");
  EXPECT_STREQ(DTypeName(DType::kQ5_K), "q5_k");
  EXPECT_FALSE(DTypeFromName("q5_0").has_value());
}

TEST(DType, BlockSizesMatchGgml) {
  // sizeof(block_*) in ggml-common.h: q8_0 = 2+32, q4_0 = 2+16,
  // q4_K = 2*2+12+256/2, q6_K = 256/2+256/4+256/16+2, q5_K = 2*2+12+256/8+256/2,
  // q3_K = 256/8+256/4+12+2, q2_K = 256/16+256/4+2*2.
  EXPECT_EQ(BlockElems(DType::kQ8_0), 32);
  EXPECT_EQ(BlockBytes(DType::kQ8_0), 34);
  EXPECT_EQ(BlockBytes(DType::kQ4_0), 18);
  EXPECT_EQ(BlockElems(DType::kQ4_K), 256);
  EXPECT_EQ(BlockBytes(DType::kQ4_K), 144);
  EXPECT_EQ(BlockBytes(DType::kQ6_K), 210);
  EXPECT_EQ(BlockBytes(DType::kQ5_K), 176);
  EXPECT_EQ(BlockBytes(DType::kQ3_K), 110);
  EXPECT_EQ(BlockBytes(DType::kQ2_K), 84);
  EXPECT_EQ(BlockElems(DType::kQ2_K), 256);
  EXPECT_EQ(BlockBytes(DType::kBF16), 2);
  EXPECT_EQ(BlockBytes(DType::kI64), 8);
  EXPECT_TRUE(IsQuantized(DType::kQ4_K));
  EXPECT_FALSE(IsQuantized(DType::kF16));
}

TEST(DType, RowBytes) {
  EXPECT_EQ(RowBytes(DType::kF32, 10), 40);
  EXPECT_EQ(RowBytes(DType::kQ8_0, 64), 68);
  EXPECT_EQ(RowBytes(DType::kQ4_K, 512), 288);
  EXPECT_EQ(RowBytes(DType::kQ4_0, 33), -1);
  EXPECT_EQ(RowBytes(DType::kF16, -2), -1);
  EXPECT_EQ(RowBytes(DType::kF32, std::numeric_limits<int64_t>::max() / 2), -1);  // overflow
}

TEST(DType, GgmlIds) {
  const std::pair<DType, uint32_t> expected[] = {
      {DType::kF32, 0},   {DType::kF16, 1},   {DType::kQ4_0, 2},  {DType::kQ8_0, 8},  {DType::kQ4_K, 12},
      {DType::kQ6_K, 14}, {DType::kQ5_K, 13}, {DType::kQ3_K, 11}, {DType::kQ2_K, 10}, {DType::kI8, 24},
      {DType::kI32, 26},  {DType::kI64, 27},  {DType::kBF16, 30}};
  for (auto [t, id] : expected) {
    EXPECT_EQ(GgmlTypeFromDType(t), id) << DTypeName(t);
    ASSERT_TRUE(DTypeFromGgmlType(id).has_value());
    EXPECT_EQ(*DTypeFromGgmlType(id), t);
  }
  EXPECT_EQ(GgmlTypeFromDType(DType::kU8), kNoGgmlType);
  EXPECT_FALSE(DTypeFromGgmlType(6).has_value());  // Q5_0: not supported
  EXPECT_FALSE(DTypeFromGgmlType(kNoGgmlType).has_value());
  EXPECT_FALSE(DTypeFromGgmlType(1000).has_value());
}

}  // namespace
}  // namespace deepinfer
