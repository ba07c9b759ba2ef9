#include "scheduler/step_plan.h"

#include <gtest/gtest.h>

namespace deepinfer {
namespace {

TEST(StepPlanTest, NumTokensCountsEverySequencesTokens) {
  StepPlan plan;
  EXPECT_TRUE(plan.empty());
  plan.block_copies.push_back({});
  EXPECT_FALSE(plan.empty());  // a copy alone is work
  plan.seqs.push_back(
      {.request_id = 7, .start_pos = 2, .tokens = {4, 4}, .samples = true, .block_table = {1}});
  plan.seqs.push_back({.request_id = 8, .start_pos = 0, .tokens = {9, 9, 9, 9}, .block_table = {2}});
  EXPECT_EQ(plan.NumTokens(), 6);
}

}  // namespace
}  // namespace deepinfer
