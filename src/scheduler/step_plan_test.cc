#include "scheduler/step_plan.h"

#include <gtest/gtest.h>

namespace deepinfer {
namespace {

TEST(StepPlanTest, NumTokensCountsEverySequence) {
  StepPlan plan;
  plan.seqs.push_back(
      {.request_id = 1, .start_pos = 0, .tokens = {5, 6, 7}, .samples = false, .block_table = {0}});
  plan.seqs.push_back(
      {.request_id = 2, .start_pos = 9, .tokens = {8}, .samples = true, .block_table = {1, 2}});
  plan.seqs.push_back({.request_id = 3,
                       .start_pos = 4,
                       .tokens = {1, 2, 3},
                       .num_draft_tokens = 2,
                       .samples = true,
                       .block_table = {3, 4}});
  EXPECT_EQ(plan.NumTokens(), 7);
  EXPECT_FALSE(plan.empty());
  EXPECT_TRUE(StepPlan{}.empty());
}

}  // namespace
}  // namespace deepinfer
