// SiLU-gated product, softmax and exp-sum kernels against double-precision formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/activation_kernels.h"
#include "backend/cpu/isa.h"

namespace deepinfer::cpu {
namespace {

TEST(SiluMulKernel, MatchesFormulaIncludingExtremes) {
  std::vector<void (*)(float*, const float*, int64_t)> kernels = {&SiluMulScalar, &SiluMul};
  if (CpuSupports(Isa::kAvx512)) kernels.push_back(&SiluMulAvx512);
  std::mt19937 rng(2);
  for (int64_t n : {1, 7, 16, 33, 1000, 5632}) {
    std::vector<float> g(n), u(n);
    for (auto& v : g) v = std::normal_distribution<float>(0.0f, 4.0f)(rng);
    for (auto& v : u) v = std::normal_distribution<float>(0.0f, 1.0f)(rng);
    if (n > 4) g[0] = -120.0f, g[1] = 120.0f, g[2] = 0.0f, g[3] = -88.0f;  // exp over/underflow edges
    for (auto k : kernels) {
      std::vector<float> out = g;
      k(out.data(), u.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const double ref = g[i] / (1.0 + std::exp(-static_cast<double>(g[i]))) * u[i];
        ASSERT_TRUE(std::isfinite(out[i])) << i;
        ASSERT_NEAR(out[i], ref, 2e-6 * (1 + std::abs(ref))) << "n " << n << " g " << g[i];
      }
    }
  }
}

TEST(SoftmaxKernel, MatchesFormulaAndSumsToOne) {
  const std::vector<void (*)(float*, int64_t)> kernels = {&Softmax};
  std::mt19937 rng(4);
  for (int64_t n : {1, 2, 15, 17, 64, 257, 32000}) {
    std::vector<float> x(n);
    for (auto& v : x) v = std::normal_distribution<float>(0.0f, 8.0f)(rng);
    double m = x[0];
    for (float v : x) m = std::max<double>(m, v);
    double sum = 0;
    for (float v : x) sum += std::exp(v - m);
    for (auto k : kernels) {
      std::vector<float> y = x;
      k(y.data(), n);
      double total = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double ref = std::exp(x[i] - m) / sum;
        ASSERT_NEAR(y[i], ref, 1e-6 * (1e-3 + ref) + 1e-12) << "n " << n << " i " << i;
        total += y[i];
      }
      EXPECT_NEAR(total, 1.0, 1e-5);
    }
  }
}

// The exp sum against double: leftover lanes (n not a multiple of 16 or
// 64), a masked -inf entry, entries far below the shift (exp underflows to
// 0), a 128k-entry vocabulary, and the empty range.
TEST(SumExpKernel, MatchesDoubleSumIncludingTailsAndInfinities) {
  std::vector<float (*)(const float*, int64_t, float)> kernels = {&SumExpScalar, &SumExp};
  if (CpuSupports(Isa::kAvx512)) kernels.push_back(&SumExpAvx512);
  std::mt19937 rng(6);
  for (int64_t n : {0, 1, 15, 16, 17, 63, 64, 65, 129, 512, 128256}) {
    std::vector<float> x(n);
    for (auto& v : x) v = std::normal_distribution<float>(0.0f, 6.0f)(rng);
    if (n > 3) x[1] = -INFINITY, x[2] = -300.0f;
    float shift = -INFINITY;
    for (float v : x) shift = std::max(shift, v);
    if (n == 0) shift = 0.0f;
    double ref = 0;
    for (float v : x) ref += std::exp(static_cast<double>(v) - shift);
    for (auto k : kernels) {
      const float got = k(x.data(), n, shift);
      EXPECT_NEAR(got, ref, 2e-6 * ref + 1e-30) << "n " << n;
      EXPECT_EQ(got, k(x.data(), n, shift)) << "n " << n << ": same bits every call";
    }
  }
}

// GELU's tanh approximation in double (the definition PyTorch's
// gelu(approximate="tanh") uses), including the tails where it saturates.
TEST(GeluTanhMulKernel, MatchesFormula) {
  std::mt19937 rng(7);
  for (int64_t n : {1, 5, 64, 1000}) {
    std::vector<float> g(n), u(n);
    for (auto& v : g) v = std::normal_distribution<float>(0.0f, 3.0f)(rng);
    for (auto& v : u) v = std::normal_distribution<float>(0.0f, 1.0f)(rng);
    if (n > 4) g[0] = -30.0f, g[1] = 30.0f, g[2] = 0.0f, g[3] = -3.0f;
    std::vector<float> out = g;
    GeluTanhMul(out.data(), u.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const double x = g[i];
      const double ref =
          0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))) * u[i];
      ASSERT_NEAR(out[i], ref, 2e-6 * (1 + std::abs(ref))) << "g " << g[i];
    }
  }
  // gelu(-30) is 0 (not NaN), gelu(30) = 30.
  float gate[2] = {-30.0f, 30.0f};
  const float up[2] = {1.0f, 1.0f};
  GeluTanhMul(gate, up, 2);
  EXPECT_EQ(gate[0], 0.0f);
  EXPECT_FLOAT_EQ(gate[1], 30.0f);
}

TEST(SoftCapKernel, BoundsAndMatchesFormula) {
  std::vector<float> x = {-1000.0f, -60.0f, -1.0f, 0.0f, 0.5f, 49.0f, 1e30f};
  const std::vector<float> in = x;
  SoftCap(x.data(), static_cast<int64_t>(x.size()), 50.0f);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(x[i], 50.0 * std::tanh(in[i] / 50.0), 1e-5 * (1 + std::abs(x[i])));
    EXPECT_LE(std::abs(x[i]), 50.0f);
  }
  EXPECT_EQ(x[3], 0.0f);
}

}  // namespace
}  // namespace deepinfer::cpu
