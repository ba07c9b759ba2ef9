// ops::BackendWeights / ops::Matrix: a prepared matrix keeps its name, dtype
// and shape, carries the backend's handle when (and only when) the backend
// made a copy, and MatMul gives the file layout's results through it.
#include "model/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace deepinfer {
namespace {

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

  TensorView view;
  view.name = "w";
  view.dtype = DType::kBF16;
  view.shape = {kRows, kCols};
  view.data = bf16.data();
  view.nbytes = static_cast<int64_t>(bf16.size() * 2);
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

}  // namespace
}  // namespace deepinfer
