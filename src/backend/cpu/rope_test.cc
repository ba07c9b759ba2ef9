// RoPE rotation kernels against the rotation computed in double, both pairings.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/isa.h"
#include "backend/cpu/rope_kernel.h"

namespace deepinfer::cpu {
namespace {

TEST(RopeKernel, MatchesRotationForBothPairings) {
  std::vector<void (*)(float*, int64_t, int64_t, const RopeRotation&)> kernels = {&RopeRotateScalar,
                                                                                  &RopeRotate};
  if (CpuSupports(Isa::kAvx512)) kernels.push_back(&RopeRotateAvx512);
  std::mt19937 rng(9);
  for (bool interleaved : {false, true}) {
    for (auto [head_dim, rope_dim, heads] :
         {std::tuple{64, 64, 3}, {128, 128, 1}, {32, 16, 5}, {40, 38, 2}, {96, 64, 4}, {10, 6, 7}}) {
      const int64_t half = rope_dim / 2;
      std::vector<float> cs(half), sn(half), x(head_dim * heads);
      for (int64_t i = 0; i < half; ++i) {
        const double angle = 37.0 * std::pow(10000.0, -2.0 * i / rope_dim);
        cs[i] = static_cast<float>(std::cos(angle));
        sn[i] = static_cast<float>(std::sin(angle));
      }
      for (auto& v : x) v = std::normal_distribution<float>(0.0f, 1.0f)(rng);
      const RopeRotation r{cs.data(), sn.data(), half, interleaved};
      for (auto k : kernels) {
        std::vector<float> y = x;
        k(y.data(), heads, head_dim, r);
        for (int64_t h = 0; h < heads; ++h) {
          const float* in = x.data() + h * head_dim;
          const float* out = y.data() + h * head_dim;
          std::vector<bool> rotated(head_dim, false);
          for (int64_t i = 0; i < half; ++i) {
            const int64_t a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + half;
            const double ra = static_cast<double>(in[a]) * cs[i] - static_cast<double>(in[b]) * sn[i];
            const double rb = static_cast<double>(in[a]) * sn[i] + static_cast<double>(in[b]) * cs[i];
            ASSERT_NEAR(out[a], ra, 1e-6) << "dim " << head_dim << " pair " << i;
            ASSERT_NEAR(out[b], rb, 1e-6) << "dim " << head_dim << " pair " << i;
            rotated[a] = rotated[b] = true;
          }
          for (int64_t d = 0; d < head_dim; ++d) {
            if (!rotated[d]) ASSERT_EQ(out[d], in[d]) << "dim " << d << " beyond rope_dim must not change";
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace deepinfer::cpu
