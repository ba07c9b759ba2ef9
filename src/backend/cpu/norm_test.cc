// RMSNorm kernels against a double-precision evaluation of the formula.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/isa.h"
#include "backend/cpu/norm_kernel.h"

namespace deepinfer::cpu {
namespace {

using Kernel = void (*)(const float*, const float*, int64_t, double, float*);

TEST(RmsNormKernel, MatchesFormulaOnOddSizes) {
  std::mt19937 rng(1);
  std::vector<Kernel> kernels = {&RmsNormScalar, &RmsNorm};
  if (CpuSupports(Isa::kAvx512)) kernels.push_back(&RmsNormAvx512);
  for (int64_t n : {1, 3, 15, 16, 17, 31, 64, 100, 768, 2049, 5632}) {
    std::vector<float> x(n), w(n), out(n);
    std::normal_distribution<float> d(0.0f, n % 2 ? 30.0f : 0.5f);
    for (auto& v : x) v = d(rng);
    for (auto& v : w) v = std::normal_distribution<float>(1.0f, 0.2f)(rng);
    double ss = 0;
    for (float v : x) ss += static_cast<double>(v) * v;
    const double inv = 1.0 / std::sqrt(ss / n + 1e-6);
    for (Kernel k : kernels) {
      k(x.data(), w.data(), n, 1e-6, out.data());
      for (int64_t i = 0; i < n; ++i) {
        const double ref = x[i] * inv * w[i];
        ASSERT_NEAR(out[i], ref, 1e-6 * (1 + std::abs(ref))) << "n " << n << " i " << i;
      }
      // In place gives the same bits.
      std::vector<float> y = x;
      k(y.data(), w.data(), n, 1e-6, y.data());
      ASSERT_EQ(y, out) << "n " << n;
    }
  }
}

TEST(RmsNormKernel, ZeroRowStaysZeroAndFinite) {
  std::vector<float> x(37, 0.0f), w(37, 1.0f), out(37, 1.0f);
  RmsNorm(x.data(), w.data(), 37, 1e-5, out.data());
  for (float v : out) EXPECT_EQ(v, 0.0f);
}

}  // namespace
}  // namespace deepinfer::cpu
