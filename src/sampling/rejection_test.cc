#include "sampling/rejection.h"

#include <gtest/gtest.h>

#include <vector>

#include "sampling/sampler.h"

namespace deepinfer {
namespace {

// The output distribution of one rejection-sampling step, integrated over a
// fine grid of both uniforms: sum over drafts d ~ q of keep(d) at d plus
// (1 - keep(d)) times the residual draw. Must equal p whatever q is.
std::vector<double> OutputDistribution(const std::vector<float>& p, const std::vector<float>& q) {
  constexpr int kGrid = 200000;
  const auto vocab = static_cast<int64_t>(p.size());
  std::vector<double> residual(p.size(), 0.0);
  for (int g = 0; g < kGrid; ++g) {
    const int32_t t = SampleResidual(p.data(), q.data(), vocab, (g + 0.5) / kGrid);
    residual[static_cast<size_t>(t)] += 1.0 / kGrid;
  }
  std::vector<double> out(p.size(), 0.0);
  for (size_t d = 0; d < q.size(); ++d) {
    if (q[d] == 0.0f) continue;
    int kept = 0;
    for (int g = 0; g < kGrid; ++g) kept += KeepDraft(p[d], q[d], (g + 0.5) / kGrid) ? 1 : 0;
    const double keep = static_cast<double>(kept) / kGrid;
    out[d] += q[d] * keep;
    for (size_t x = 0; x < p.size(); ++x) out[x] += q[d] * (1.0 - keep) * residual[x];
  }
  return out;
}

TEST(RejectionSampling, OutputIsDistributedAsTheTarget) {
  const std::vector<std::pair<std::vector<float>, std::vector<float>>> cases = {
      {{0.5f, 0.3f, 0.2f, 0.0f}, {0.1f, 0.1f, 0.4f, 0.4f}},  // q puts mass where p has none
      {{0.7f, 0.1f, 0.1f, 0.1f}, {0.7f, 0.1f, 0.1f, 0.1f}},  // q == p: nothing is rejected
      {{0.0f, 0.0f, 1.0f, 0.0f}, {0.25f, 0.25f, 0.25f, 0.25f}},
      {{0.25f, 0.25f, 0.25f, 0.25f}, {0.0f, 1.0f, 0.0f, 0.0f}},  // a one-hot (greedy) draft
  };
  for (const auto& [p, q] : cases) {
    const std::vector<double> out = OutputDistribution(p, q);
    for (size_t x = 0; x < p.size(); ++x) EXPECT_NEAR(out[x], p[x], 1e-4) << "token " << x;
  }
}

TEST(RejectionSampling, KeepsExactlyWithProbabilityMinOfOneAndTheRatio) {
  EXPECT_TRUE(KeepDraft(0.2f, 0.4f, 0.49));
  EXPECT_FALSE(KeepDraft(0.2f, 0.4f, 0.51));
  EXPECT_TRUE(KeepDraft(0.6f, 0.3f, 0.999));  // p > q: always kept
  EXPECT_FALSE(KeepDraft(0.0f, 0.3f, 0.0));   // the target never draws it
  EXPECT_FALSE(KeepDraft(0.0f, 0.0f, 0.5));
}

TEST(RejectionSampling, ResidualNeverDrawsATokenWhereTheDraftHadAtLeastTheTargetsMass) {
  const std::vector<float> p = {0.4f, 0.4f, 0.2f}, q = {0.5f, 0.1f, 0.4f};
  for (int g = 0; g < 1000; ++g) EXPECT_EQ(SampleResidual(p.data(), q.data(), 3, g / 1000.0), 1);
}

TEST(SamplingProbabilities, MatchesTheFiltersSampleTokenApplies) {
  // logits 2, 1, 0, -1 at T = 1: softmax 0.6439, 0.2369, 0.0871, 0.0321.
  const std::vector<float> logits = {0.0f, 2.0f, -1.0f, 1.0f};
  std::vector<float> probs(4);
  SamplingParams params;
  SamplingProbabilities(logits.data(), 4, params, probs.data());
  EXPECT_NEAR(probs[1], 0.6439, 1e-4);
  EXPECT_NEAR(probs[3], 0.2369, 1e-4);
  EXPECT_NEAR(probs[0], 0.0871, 1e-4);
  EXPECT_NEAR(probs[2], 0.0321, 1e-4);
  params.top_k = 2;  // renormalized over ids 1 and 3
  SamplingProbabilities(logits.data(), 4, params, probs.data());
  EXPECT_NEAR(probs[1], 0.7311, 1e-4);
  EXPECT_NEAR(probs[3], 0.2689, 1e-4);
  EXPECT_EQ(probs[0], 0.0f);
  params.top_k = 0;
  params.top_p = 0.85;  // 0.6439 + 0.2369 reaches 0.85
  SamplingProbabilities(logits.data(), 4, params, probs.data());
  EXPECT_NEAR(probs[1] + probs[3], 1.0, 1e-6);
  params.top_p = 1.0;
  params.temperature = 0.0;  // greedy: one-hot
  SamplingProbabilities(logits.data(), 4, params, probs.data());
  EXPECT_EQ(probs[1], 1.0f);
  // SampleToken's draws follow the same distribution: over many positions
  // the frequencies match (T = 1, no filters).
  params = SamplingParams{};
  params.seed = 3;
  SamplingProbabilities(logits.data(), 4, params, probs.data());
  std::vector<int> counts(4, 0);
  constexpr int kDraws = 40000;
  for (int pos = 0; pos < kDraws; ++pos) ++counts[SampleToken(logits.data(), 4, params, pos)];
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(counts[i] / double{kDraws}, probs[i], 0.01) << i;
}

}  // namespace
}  // namespace deepinfer
