// ops::BackendWeights / ops::Matrix: a prepared matrix keeps its name, dtype
// and shape, carries the backend's handle when (and only when) the backend
// made a copy, and MatMul gives the file layout's results through it.
#include "model/ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tensor/dequant.h"

namespace deepinfer {
namespace {

// A [rows, cols] view of `bytes` bytes at data.
TensorView ViewOf(const char* name, DType dtype, int64_t rows, int64_t cols, void* data, size_t bytes) {
  TensorView view;
  view.name = name;
  view.dtype = dtype;
  view.shape = {rows, cols};
  view.data = data;
  view.nbytes = static_cast<int64_t>(bytes);
  return view;
}

TEST(BackendWeightsTest, PreparedMatrixMultipliesLikeTheFileLayout) {
  constexpr int64_t kRows = 37, kCols = 96, kTokens = 3;
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<uint16_t> bf16(kRows * kCols);  // bf16: the top half of an f32
  for (uint16_t& v : bf16) {
    const float f = dist(rng);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    v = static_cast<uint16_t>(bits >> 16);
  }
  std::vector<float> x(kTokens * kCols);
  for (float& v : x) v = dist(rng);

  const TensorView view = ViewOf("w", DType::kBF16, kRows, kCols, bf16.data(), bf16.size() * 2);
  const ops::Matrix file(view);
  ops::Matrix prepared(view);
  ops::BackendWeights backend;
  backend.Prepare(prepared);
  EXPECT_EQ(prepared.name, "w");
  EXPECT_EQ(prepared.dtype, DType::kBF16);
  EXPECT_EQ(prepared.shape, view.shape);
  // A copy exactly when the handle is set.
  EXPECT_EQ(prepared.packed != nullptr, prepared.data != view.data);

  ThreadPool pool(2);
  std::vector<float> want(kTokens * kRows), got(kTokens * kRows);
  ops::MatMul(file, x.data(), kTokens, nullptr, want.data(), pool);
  ops::MatMul(prepared, x.data(), kTokens, nullptr, got.data(), pool);
  for (size_t i = 0; i < want.size(); ++i) {
    if (prepared.packed == nullptr) {
      ASSERT_EQ(got[i], want[i]) << i;
    } else {  // another kernel (summation order): f32 rounding apart
      ASSERT_NEAR(got[i], want[i], 1e-4f * (1.0f + std::fabs(want[i]))) << i;
    }
  }
}

// PrepareTiedHead (the tied LM head): no copy where the file layout has a
// fast kernel at every level (F32) and rows of kShortRow elements or more;
// for F32 rows shorter than that, and for Q6_K - which has no file-layout
// kernel at the SIMD levels, only the dequantize-a-row fallback - the same
// copy Prepare makes, multiplying like the file layout.
TEST(BackendWeightsTest, PrepareTiedHeadCopiesOnlyWhereTheFileLayoutIsSlow) {
  constexpr int64_t kRows = 21, kCols = 512, kTokens = 2;
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> f32(kRows * kCols), x(kTokens * kCols);
  for (float& v : f32) v = dist(rng);
  for (float& v : x) v = dist(rng);
  const TensorView f32_view = ViewOf("f32", DType::kF32, kRows, kCols, f32.data(), f32.size() * 4);
  ops::BackendWeights backend;
  ops::Matrix tied_f32(f32_view);
  backend.PrepareTiedHead(tied_f32);
  EXPECT_EQ(tied_f32.packed, nullptr);
  EXPECT_EQ(tied_f32.data, f32_view.data);

  // Rows of 64 (a tiny model's hidden size): the same copy as Prepare's,
  // multiplying like the file layout (another summation order: f32 rounding apart).
  constexpr int64_t kShort = 64;
  const TensorView short_view = ViewOf("short", DType::kF32, kRows * 8, kShort, f32.data(), f32.size() * 4);
  ops::Matrix tied_short(short_view), untied_short(short_view);
  backend.PrepareTiedHead(tied_short);
  backend.Prepare(untied_short);
  ASSERT_EQ(tied_short.packed != nullptr, untied_short.packed != nullptr);
  if (tied_short.packed != nullptr) {
    ThreadPool short_pool(1);
    std::vector<float> short_want(kTokens * kRows * 8), short_got(short_want.size());
    ops::MatMul(ops::Matrix(short_view), x.data(), kTokens, nullptr, short_want.data(), short_pool);
    ops::MatMul(tied_short, x.data(), kTokens, nullptr, short_got.data(), short_pool);
    for (size_t i = 0; i < short_want.size(); ++i) {
      ASSERT_NEAR(short_got[i], short_want[i], 1e-4f * (1.0f + std::fabs(short_want[i]))) << i;
    }
  }

  // Q6_K super-blocks of random bytes with a small finite f16 d (0.01: 0x211f).
  std::vector<uint8_t> q6(static_cast<size_t>(kRows * kCols / 256 * 210));
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& b : q6) b = static_cast<uint8_t>(byte(rng));
  for (size_t sb = 0; sb < q6.size(); sb += 210) {
    q6[sb + 208] = 0x1f;
    q6[sb + 209] = 0x21;
  }
  const TensorView q6_view = ViewOf("q6_k", DType::kQ6_K, kRows, kCols, q6.data(), q6.size());

  ops::Matrix tied(q6_view), untied(q6_view);
  backend.PrepareTiedHead(tied);
  backend.Prepare(untied);
  EXPECT_EQ(tied.packed != nullptr, untied.packed != nullptr);
  ThreadPool pool(2);
  std::vector<float> want(kTokens * kRows), got(kTokens * kRows);
  ops::MatMul(ops::Matrix(q6_view), x.data(), kTokens, nullptr, want.data(), pool);
  ops::MatMul(tied, x.data(), kTokens, nullptr, got.data(), pool);
  // int8 activations in the packed kernel (per 32-block d = max|x| / 127,
  // an error of at most d / 2 per element), f32 in the fallback: |err| <=
  // sum_i |w_i| * d_block(i) / 2, plus f32 rounding.
  std::vector<float> w(static_cast<size_t>(kCols));
  for (int64_t r = 0; r < kRows; ++r) {
    DequantizeRow(DType::kQ6_K, q6.data() + r * (kCols / 256 * 210), w.data(), kCols);
    for (int64_t t = 0; t < kTokens; ++t) {
      double bound = 0.0;
      for (int64_t b = 0; b < kCols / 32; ++b) {
        double amax = 0.0;
        for (int i = 0; i < 32; ++i)
          amax = std::max(amax, std::fabs(static_cast<double>(x[t * kCols + b * 32 + i])));
        for (int i = 0; i < 32; ++i) {
          const double wx = std::fabs(static_cast<double>(w[b * 32 + i]));
          bound += wx * amax / 254.0 + 1e-5 * wx * std::fabs(x[t * kCols + b * 32 + i]);
        }
      }
      ASSERT_NEAR(got[t * kRows + r], want[t * kRows + r], bound) << "row " << r << " token " << t;
    }
  }
}

}  // namespace
}  // namespace deepinfer
