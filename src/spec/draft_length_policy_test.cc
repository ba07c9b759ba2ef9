#include "spec/draft_length_policy.h"

#include <gtest/gtest.h>

#include <vector>

namespace deepinfer {
namespace {

// A cost model of exactly seconds = fixed + per_token * tokens: token counts
// 1, 8, 64 until the forgetting-weighted sums settle, so that the prior's
// pull on the slope is under 0.2% of it.
StepCostModel Linear(double fixed, double per_token) {
  StepCostModel m;
  for (int round = 0; round < 64; ++round) {
    for (int tokens : {1, 8, 64}) m.Observe(tokens, fixed + per_token * tokens);
  }
  return m;
}

const DrafterCost kFreeDrafter;  // never observed: drafts cost nothing

// A drafter of exactly fixed + per_draft * drafts seconds per step (draft
// counts spread wide, so the fit's prior has no visible pull).
DrafterCost Drafter(double fixed, double per_draft) {
  DrafterCost d;
  for (int drafts : {1, 30, 60, 1, 30, 60, 1, 30, 60, 1, 30, 60})
    d.Observe(drafts, fixed + per_draft * drafts, fixed);
  return d;
}

TEST(StepCostModel, RecoversALinearCost) {
  StepCostModel m = Linear(0.010, 0.0005);
  // Token counts 1, 8, 64: the spread is large, the prior's pull tiny.
  EXPECT_NEAR(m.fixed_seconds(), 0.010, 1e-4);
  EXPECT_NEAR(m.per_token_seconds(), 0.0005, 5e-6);
}

TEST(StepCostModel, AFewStepsDoNotMakeAFit) {
  // Two steps, the second stalled: a fit would say 0 fixed + 1.4 ms per
  // token. Until kMinSteps, the cold assumption holds instead.
  StepCostModel m;
  m.Observe(64, 0.001);
  m.Observe(128, 0.180);
  const double w = StepCostModel::kForget;  // the first step's weight by now
  const double mean_seconds = (w * 0.001 + 0.180) / (w + 1), mean_tokens = (w * 64 + 128) / (w + 1);
  EXPECT_NEAR(m.per_token_seconds(), mean_seconds / (StepCostModel::kColdTokensPerFixed + mean_tokens),
              1e-12);
}

TEST(StepCostModel, AStalledStepIsClippedOnceWarm) {
  StepCostModel m;
  for (int i = 0; i < 20; ++i) m.Observe(1, 0.0002);
  const double before = m.Predict(5);
  m.Observe(5, 0.0053);  // 25x its prediction: taken as 3x
  StepCostModel clipped;
  for (int i = 0; i < 20; ++i) clipped.Observe(1, 0.0002);
  clipped.Observe(5, 3 * before);
  EXPECT_DOUBLE_EQ(m.per_token_seconds(), clipped.per_token_seconds());
  EXPECT_LT(m.per_token_seconds(), 0.0002);
}

TEST(StepCostModel, ColdStartAssumesTheColdRatio) {
  StepCostModel m;
  m.Observe(1, 0.065);  // one token count only: a = 0.065 / (1 + 1 / cold)
  const double cold = StepCostModel::kColdTokensPerFixed;
  EXPECT_NEAR(m.per_token_seconds(), 0.065 / (cold + 1), 1e-12);
  EXPECT_NEAR(m.fixed_seconds(), 0.065 * cold / (cold + 1), 1e-12);
}

TEST(DraftLengthPolicy, FixedVerifiesEveryProposedDraftUpToTheCap) {
  const std::vector<DraftLengthInput> in = {{{0.1, 0.1, 0.1}}, {{0.9}}, {{}}};
  EXPECT_EQ(
      ChooseDraftLengths(in, {3, 3}, Linear(0.01, 0.001), kFreeDrafter, 2, SpecSchedule::kFixed).lengths,
      (std::vector<int32_t>{2, 1, 0}));
}

TEST(DraftLengthPolicy, LowLoadDraftsDeepWhereConfidenceIsHigh) {
  // Batch 1, fixed cost 100x a token: lambda = 1 / (0.01 + 0.0001) * 0.0001 ~ 0.0099.
  const std::vector<DraftLengthInput> in = {{{0.9, 0.9, 0.9, 0.9, 0.9}}};
  EXPECT_EQ(
      ChooseDraftLengths(in, {1, 1}, Linear(0.01, 0.0001), kFreeDrafter, 5, SpecSchedule::kAdaptive).lengths,
      (std::vector<int32_t>{5}));
  // Prefix acceptance 0.5, 0.005, ...: only the first pays.
  const std::vector<DraftLengthInput> low = {{{0.5, 0.01, 0.9}}};
  EXPECT_EQ(
      ChooseDraftLengths(low, {1, 1}, Linear(0.01, 0.0001), kFreeDrafter, 5, SpecSchedule::kAdaptive).lengths,
      (std::vector<int32_t>{1}));
}

TEST(DraftLengthPolicy, BeforeAnyObservedStepTheColdRatioChooses) {
  // No step observed: a unit-cost step with the cold ratio stands in (fixed
  // 8/9, a token 1/9; the drafter free). By hand, from lengths 0: lambda =
  // 1 * (1/9) / 1 = 0.111 -> 4 drafts (prefixes 0.9, 0.81, 0.729, 0.146);
  // then E = 3.585 over 13/9 -> lambda 0.276 -> 3; then E = 3.439 over 12/9
  // -> lambda 0.2866 -> 3.
  const std::vector<DraftLengthInput> in = {{{0.9, 0.9, 0.9, 0.2, 0.2}}};
  const DraftSchedule s =
      ChooseDraftLengths(in, {1, 1}, StepCostModel{}, kFreeDrafter, 5, SpecSchedule::kAdaptive);
  EXPECT_EQ(s.lengths, (std::vector<int32_t>{3}));
  EXPECT_NEAR(s.exchange_rate, (1 + 0.9 + 0.81 + 0.729) / 12, 1e-9);
  // It predicts nothing: the pause decision waits for observed costs.
  EXPECT_EQ(s.speedup(), 1.0);
  EXPECT_EQ(s.seconds, 0.0);
}

TEST(DraftLengthPolicy, SpeculationFadesOutWhenTheStepIsComputeBound) {
  // 64 requests, per-token cost dominates: lambda ~ 64 / (0.001 + 64 * 0.001) * 0.001 ~ 0.98.
  std::vector<DraftLengthInput> in(64, DraftLengthInput{{0.8, 0.8, 0.8}});
  const std::vector<int32_t> k =
      ChooseDraftLengths(in, {64, 64}, Linear(0.001, 0.001), kFreeDrafter, 3, SpecSchedule::kAdaptive)
          .lengths;
  for (int32_t v : k) EXPECT_EQ(v, 0);
  // A drafter that costs as much as a fixed step turns it off at batch 1 too:
  // its first proposal alone doubles the step, so the predicted speedup is a
  // clear loss (below the engine's 0.8 pause threshold) whatever is verified.
  // By hand: verifying none, T = 0.0101 + 0.01 (one proposal), lambda =
  // 1 / 0.0201 * 0.0101 = 0.502 < 0.6, so one draft is verified (the drafter
  // runs anyway); then T = 0.0102 + 0.02 (two proposals), E = 1.6, lambda =
  // 0.535: still one. Speedup = (1.6 / 0.0302) / (1 / 0.0101) = 0.535.
  const std::vector<DraftLengthInput> one = {{{0.6, 0.6}}};
  const DraftSchedule s =
      ChooseDraftLengths(one, {1, 1}, Linear(0.01, 0.0001), Drafter(0, 0.01), 2, SpecSchedule::kAdaptive);
  EXPECT_EQ(s.lengths, (std::vector<int32_t>{1}));
  EXPECT_NEAR(s.speedup(), (1.6 / 0.0302) / (1 / 0.0101), 2e-3);  // the fits' priors pull ~0.1%
  EXPECT_LT(s.speedup(), 0.8);
}

TEST(DraftLengthPolicy, TheDrafterIsChargedForWhatItProposes) {
  // Its stop rule chains one draft past the last one verified, and a request
  // verifying none still costs one proposal. 2 requests, fixed 0.01 s, per
  // token 0.001 s, drafts 0.002 s each, confidences too low to verify
  // (lambda ~ 2 / 0.016 * 0.003 = 0.375 > 0.3): T = 0.012 + 2 * 0.002.
  const std::vector<DraftLengthInput> in(2, DraftLengthInput{{0.3, 0.3, 0.3}});
  const DraftSchedule s =
      ChooseDraftLengths(in, {2, 2}, Linear(0.01, 0.001), Drafter(0, 0.002), 3, SpecSchedule::kAdaptive);
  EXPECT_EQ(s.lengths, (std::vector<int32_t>{0, 0}));
  EXPECT_NEAR(s.speedup(), (2 / 0.016) / (2 / 0.012), 2e-3);
  // The drafter's part of those 0.016 s: its two proposals, 0.004 s.
  EXPECT_NEAR(s.drafter_share(), 0.004 / 0.016, 2e-3);
  // A drafter that costs nothing has no share; a fixed schedule reports none.
  EXPECT_EQ(ChooseDraftLengths(in, {2, 2}, Linear(0.01, 0.001), kFreeDrafter, 3, SpecSchedule::kAdaptive)
                .drafter_share(),
            0.0);
  EXPECT_EQ(ChooseDraftLengths(in, {2, 2}, Linear(0.01, 0.001), Drafter(0, 0.002), 3, SpecSchedule::kFixed)
                .drafter_share(),
            0.0);
}

TEST(StepCostModel, ADrafterModelStartsWithOneDraftPerFixedCost) {
  StepCostModel m(/*cold_tokens_per_fixed=*/1.0);
  m.Observe(5, 0.006);  // one count only: a + 5a = 0.006
  EXPECT_NEAR(m.per_token_seconds(), 0.001, 1e-12);
  EXPECT_NEAR(m.fixed_seconds(), 0.001, 1e-12);
}

TEST(DrafterCost, TheMarginalDraftExcludesTheFixedPart) {
  // Catch-up work that grows with the drafts (as accepted tokens do) does not
  // leak into the marginal: only seconds - fixed is fitted.
  DrafterCost d;
  for (int i = 0; i < 60; ++i) {
    const int drafts = 1 + i % 5;
    d.Observe(drafts, 0.001 * drafts + 0.0005 * drafts, 0.0005 * drafts);
  }
  // Timed together the slope would be 0.0015. Draft counts 1..5 under
  // forgetting leave the cold prior (0.003 / 4 per draft) a few percent of pull.
  EXPECT_NEAR(d.marginal_seconds(), 0.001, 0.00005);
  EXPECT_GT(d.fixed_seconds, 0.0005);
  EXPECT_LT(d.fixed_seconds, 0.0025);
  EXPECT_NEAR(d.Predict(2), d.fixed_seconds + d.drafts.fixed_seconds() + 2 * d.marginal_seconds(), 1e-12);
}

TEST(DraftLengthPolicy, TheExchangeRateIsTheDrafterStopRule) {
  // Batch 1: fixed 0.01 s, per token 0.0001 s, drafts 0.001 s each on a
  // 0.002 s catch-up. Hand computation of the three rounds:
  //   round 0 (no drafts): E = 1, T = 0.01 + 0.0001 + 0.002 = 0.0121,
  //     marginal 0.0011, lambda = 0.0909: prefixes 0.9, 0.81, 0.729 all pay.
  //   round 1 (3 drafts): E = 1 + 2.439 = 3.439, T = 0.0104 + 0.005 = 0.0154,
  //     lambda = 0.2456: still all three.
  //   round 2: the same, lambda = 0.2456.
  const std::vector<DraftLengthInput> in = {{{0.9, 0.9, 0.9}}};
  const DraftSchedule s =
      ChooseDraftLengths(in, {1, 1}, Linear(0.01, 0.0001), Drafter(0.002, 0.001), 5, SpecSchedule::kAdaptive);
  EXPECT_EQ(s.lengths, (std::vector<int32_t>{3}));
  EXPECT_NEAR(s.exchange_rate, 3.439 / 0.0154 * 0.0011, 1e-4);
  // Fixed verifies everything and has no exchange rate.
  EXPECT_EQ(
      ChooseDraftLengths(in, {1, 1}, Linear(0.01, 0.0001), Drafter(0.002, 0.001), 5, SpecSchedule::kFixed)
          .exchange_rate,
      0.0);
}

}  // namespace
}  // namespace deepinfer
