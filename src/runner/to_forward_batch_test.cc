#include "runner/to_forward_batch.h"

#include <gtest/gtest.h>

namespace deepinfer {
namespace {

TEST(ToForwardBatchTest, KeepsOrderAndChoosesLogitRows) {
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
  ForwardBatch batch = ToForwardBatch(plan);
  ASSERT_EQ(batch.seqs.size(), 3u);
  EXPECT_EQ(batch.seqs[0].logits, SequenceChunk::Logits::kNone);
  EXPECT_EQ(batch.seqs[1].logits, SequenceChunk::Logits::kLast);
  EXPECT_EQ(batch.seqs[2].logits, SequenceChunk::Logits::kAll);
  EXPECT_EQ(batch.seqs[1].start_pos, 9);
  EXPECT_EQ(batch.seqs[1].block_table, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(batch.NumTokens(), 7);
  EXPECT_EQ(batch.NumLogitRows(), 1 + 3);
}

TEST(ToForwardBatchTest, PromptLogprobChunksComputeEveryRow) {
  StepPlan plan;
  ScheduledSequence mid{.request_id = 1, .start_pos = 0, .tokens = {5, 6, 7}, .samples = false};
  mid.prompt_logprobs = 2;
  mid.prompt_targets = {6, 7, 8};  // the next chunk's first token too
  ScheduledSequence last{.request_id = 1, .start_pos = 3, .tokens = {8, 9}, .samples = true};
  last.prompt_logprobs = 2;
  last.prompt_targets = {9};  // the last row samples
  plan.seqs = {mid, last};
  ForwardBatch batch = ToForwardBatch(plan);
  EXPECT_EQ(batch.seqs[0].logits, SequenceChunk::Logits::kAll);
  EXPECT_EQ(batch.seqs[1].logits, SequenceChunk::Logits::kAll);
  EXPECT_EQ(batch.NumLogitRows(), 5);
}

TEST(ToForwardBatchDeathTest, UnresolvedPlaceholderIsABug) {
  StepPlan plan;
  plan.seqs.push_back(
      {.request_id = 1, .start_pos = 3, .tokens = {kPlaceholderToken}, .samples = true, .block_table = {0}});
  EXPECT_DEATH(ToForwardBatch(plan), "placeholder");
}

}  // namespace
}  // namespace deepinfer
