#include "sampling/sampler.h"

#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "sampling/philox.h"

namespace deepinfer {
namespace {

// Random123's published known-answer vectors (kat_vectors, philox4x32 10).
TEST(PhiloxTest, KnownAnswers) {
  EXPECT_EQ(Philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (PhiloxCounter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(Philox4x32_10({~0u, ~0u, ~0u, ~0u}, {~0u, ~0u}),
            (PhiloxCounter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(Philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (PhiloxCounter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(PhiloxTest, UniformIsInRangeAndBalanced) {
  double sum = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    double u = UniformAt(42, i);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  // Mean of n uniforms: sd = sqrt(1/12/n) ~ 0.0009; 5 sd.
  EXPECT_NEAR(sum / n, 0.5, 0.0046);
  EXPECT_NE(UniformAt(42, 7), UniformAt(43, 7));
  EXPECT_NE(UniformAt(42, 7, 0), UniformAt(42, 7, 1));
  EXPECT_EQ(UniformAt(42, 7, 1), UniformAt(42, 7, 1));
}

TEST(SamplerTest, ArgMaxPrefersLowestIdOnTiesAndSkipsNaN) {
  std::vector<float> l = {1.f, 3.f, NAN, 3.f, -2.f};
  EXPECT_EQ(ArgMax(l.data(), l.size()), 1);
  std::vector<float> nan_first = {NAN, -1.f};
  EXPECT_EQ(ArgMax(nan_first.data(), 2), 1);
}

// Against the definition, one logit at a time, on rows of NaN, +-inf, ties
// and lengths around the 16-lane blocks.
TEST(SamplerTest, ArgMaxMatchesALinearScan) {
  const auto reference = [](const std::vector<float>& l) {
    int32_t best = 0;
    bool found = false;
    for (size_t i = 0; i < l.size(); ++i) {
      if (std::isnan(l[i])) continue;
      if (!found || l[i] > l[static_cast<size_t>(best)]) best = static_cast<int32_t>(i);
      found = true;
    }
    return best;
  };
  std::mt19937 rng(5);
  for (int trial = 0; trial < 20000; ++trial) {
    std::vector<float> l(std::uniform_int_distribution<size_t>(0, 70)(rng));
    for (float& x : l) {
      const int kind = std::uniform_int_distribution<int>(0, 9)(rng);
      x = kind == 0   ? NAN
          : kind == 1 ? -INFINITY
          : kind == 2 ? INFINITY
                      : static_cast<float>(std::uniform_int_distribution<int>(-4, 4)(rng));
    }
    ASSERT_EQ(ArgMax(l.data(), static_cast<int64_t>(l.size())), reference(l)) << "trial " << trial;
  }
  const std::vector<float> all_nan(40, NAN);
  EXPECT_EQ(ArgMax(all_nan.data(), 40), 0);
}

TEST(SamplerTest, GreedyAndTopK1AreArgMax) {
  std::vector<float> l = {0.1f, 2.f, 1.9f, -3.f};
  SamplingParams greedy;
  greedy.temperature = 0;
  SamplingParams k1;
  k1.top_k = 1;
  for (uint64_t pos = 0; pos < 50; ++pos) {
    EXPECT_EQ(SampleToken(l.data(), l.size(), greedy, pos), 1);
    EXPECT_EQ(SampleToken(l.data(), l.size(), k1, pos), 1);
  }
}

// Frequencies of SampleToken over many positions, for one logits row.
std::vector<double> Frequencies(const std::vector<float>& logits, const SamplingParams& p, int draws) {
  std::vector<double> f(logits.size(), 0);
  for (int i = 0; i < draws; ++i) f[SampleToken(logits.data(), logits.size(), p, i)] += 1.0 / draws;
  return f;
}

std::vector<float> LogitsOf(const std::vector<double>& probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
  return l;
}

// Binomial tolerance: 5 standard deviations of a frequency estimate.
double Tol(double p, int n) { return 5 * std::sqrt(p * (1 - p) / n) + 1e-9; }

TEST(SamplerTest, MatchesSoftmaxDistribution) {
  const int n = 40000;
  SamplingParams p;
  p.seed = 1234;
  auto f = Frequencies(LogitsOf({0.1, 0.2, 0.3, 0.4}), p, n);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(f[i], 0.1 * (i + 1), Tol(0.1 * (i + 1), n)) << i;
}

TEST(SamplerTest, TemperatureFlattens) {
  // With T = 2, p_i ∝ sqrt(q_i): q = {0.2, 0.8} -> {1/3, 2/3}.
  const int n = 40000;
  SamplingParams p;
  p.temperature = 2.0;
  auto f = Frequencies(LogitsOf({0.2, 0.8}), p, n);
  EXPECT_NEAR(f[0], 1.0 / 3, Tol(1.0 / 3, n));
}

TEST(SamplerTest, TopKTopPMinPTruncateAndRenormalize) {
  const int n = 40000;
  auto logits = LogitsOf({0.1, 0.4, 0.2, 0.3});  // sorted: ids 1, 3, 2, 0
  SamplingParams k2;
  k2.top_k = 2;  // keeps ids 1 and 3: 0.4/0.7 and 0.3/0.7
  auto f = Frequencies(logits, k2, n);
  EXPECT_EQ(f[0], 0);
  EXPECT_EQ(f[2], 0);
  EXPECT_NEAR(f[1], 4.0 / 7, Tol(4.0 / 7, n));

  SamplingParams top_p;
  top_p.top_p = 0.75;  // cumulative 0.4, 0.7, 0.9 -> keeps ids 1, 3, 2
  f = Frequencies(logits, top_p, n);
  EXPECT_EQ(f[0], 0);
  EXPECT_NEAR(f[2], 2.0 / 9, Tol(2.0 / 9, n));

  SamplingParams min_p;
  min_p.min_p = 0.6;  // threshold 0.24 -> keeps ids 1 (0.4) and 3 (0.3)
  f = Frequencies(logits, min_p, n);
  EXPECT_EQ(f[0] + f[2], 0);
  EXPECT_NEAR(f[3], 3.0 / 7, Tol(3.0 / 7, n));
}

TEST(SamplerTest, SameSeedAndPositionGiveSameToken) {
  std::vector<float> l(1000);
  for (int i = 0; i < 1000; ++i) l[i] = std::sin(i * 0.37f) * 3;
  SamplingParams p;
  p.seed = 99;
  p.top_p = 0.95;
  int differ = 0;
  for (uint64_t pos = 0; pos < 100; ++pos) {
    int32_t a = SampleToken(l.data(), l.size(), p, pos);
    EXPECT_EQ(a, SampleToken(l.data(), l.size(), p, pos));
    SamplingParams other = p;
    other.seed = 100;
    differ += a != SampleToken(l.data(), l.size(), other, pos);
  }
  EXPECT_GT(differ, 50);  // a different seed gives a different stream
}

TEST(SamplerTest, ValidateNamesTheBadField) {
  SamplingParams p;
  p.top_p = 0;
  EXPECT_NE(p.Validate().message().find("top_p"), std::string::npos);
  p = SamplingParams();
  p.temperature = -1;
  EXPECT_NE(p.Validate().message().find("temperature"), std::string::npos);
  EXPECT_TRUE(SamplingParams().Validate().ok());
}

}  // namespace
}  // namespace deepinfer
