#include "spec/draft_length_policy.h"

#include <gtest/gtest.h>

#include <vector>

namespace deepinfer {
namespace {

// A cost model of exactly seconds = fixed + per_token * tokens.
StepCostModel Linear(double fixed, double per_token) {
  StepCostModel m;
  for (int tokens : {1, 8, 64, 1, 8, 64}) m.Observe(tokens, fixed + per_token * tokens);
  return m;
}

TEST(StepCostModel, RecoversALinearCost) {
  StepCostModel m = Linear(0.010, 0.0005);
  EXPECT_NEAR(m.fixed_seconds(), 0.010, 1e-9);
  EXPECT_NEAR(m.per_token_seconds(), 0.0005, 1e-9);
}

TEST(StepCostModel, ColdStartAssumesAMemoryBoundStep) {
  StepCostModel m;
  m.Observe(1, 0.065);  // one token count only: a = 0.065 / (1 + 1/64)
  EXPECT_NEAR(m.per_token_seconds(), 0.065 / 65.0, 1e-12);
  EXPECT_NEAR(m.fixed_seconds(), 0.065 * 64.0 / 65.0, 1e-12);
}

TEST(DraftLengthPolicy, FixedVerifiesEveryProposedDraftUpToTheCap) {
  const std::vector<DraftLengthInput> in = {{{0.1, 0.1, 0.1}}, {{0.9}}, {{}}};
  EXPECT_EQ(ChooseDraftLengths(in, {3, 3}, Linear(0.01, 0.001), 0, 2, SpecSchedule::kFixed),
            (std::vector<int32_t>{2, 1, 0}));
}

TEST(DraftLengthPolicy, LowLoadDraftsDeepWhereConfidenceIsHigh) {
  // Batch 1, fixed cost 100x a token: lambda = 1 / (0.01 + 0.0001) * 0.0001 ~ 0.0099.
  const std::vector<DraftLengthInput> in = {{{0.9, 0.9, 0.9, 0.9, 0.9}}};
  EXPECT_EQ(ChooseDraftLengths(in, {1, 1}, Linear(0.01, 0.0001), 0, 5, SpecSchedule::kAdaptive),
            (std::vector<int32_t>{5}));
  // Prefix acceptance 0.5, 0.005, ...: only the first pays.
  const std::vector<DraftLengthInput> low = {{{0.5, 0.01, 0.9}}};
  EXPECT_EQ(ChooseDraftLengths(low, {1, 1}, Linear(0.01, 0.0001), 0, 5, SpecSchedule::kAdaptive),
            (std::vector<int32_t>{1}));
}

TEST(DraftLengthPolicy, SpeculationFadesOutWhenTheStepIsComputeBound) {
  // 64 requests, per-token cost dominates: lambda ~ 64 / (0.001 + 64 * 0.001) * 0.001 ~ 0.98.
  std::vector<DraftLengthInput> in(64, DraftLengthInput{{0.8, 0.8, 0.8}});
  const std::vector<int32_t> k =
      ChooseDraftLengths(in, {64, 64}, Linear(0.001, 0.001), 0, 3, SpecSchedule::kAdaptive);
  for (int32_t v : k) EXPECT_EQ(v, 0);
  // A drafter that costs as much as a fixed step also turns it off at batch 1.
  const std::vector<DraftLengthInput> one = {{{0.6, 0.6}}};
  EXPECT_EQ(ChooseDraftLengths(one, {1, 1}, Linear(0.01, 0.0001), 0.01, 2, SpecSchedule::kAdaptive),
            (std::vector<int32_t>{0}));
}

}  // namespace
}  // namespace deepinfer
