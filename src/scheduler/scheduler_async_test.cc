// The async (overlapped) scheduling protocol: plan N+1 while N executes,
// placeholders for N's tokens, commit N, discard the slots of finished requests.
#include <gtest/gtest.h>

#include <numeric>

#include "scheduler/scheduler.h"
#include "scheduler/scheduler_test_util.h"

namespace deepinfer {
namespace {

using testing::FakeModel;
using testing::Kv;
using testing::LoopMode;
using testing::Range;
using testing::ReferenceOutput;
using testing::TestEngine;

constexpr int32_t kVocab = 1000;

TEST(SchedulerAsyncTest, PlaceholderIsFilledAtLaunchOnceTheStepIsCommitted) {
  Scheduler sched(SchedulerConfig{}, Kv(16));
  FakeModel model(16, 4, kVocab);
  ASSERT_TRUE(sched.AddRequest({.id = 1, .prompt_tokens = Range(0, 5), .max_tokens = 4}).ok());
  StepPlan step0 = sched.PlanStep();
  ASSERT_TRUE(sched.PrepareLaunch(&step0).ok());

  StepPlan step1 = sched.PlanStep();  // planned while step 0 "executes"
  ASSERT_EQ(step1.seqs.size(), 1u);
  EXPECT_EQ(step1.seqs[0].start_pos, 5);
  EXPECT_EQ(step1.seqs[0].tokens, (std::vector<int32_t>{kPlaceholderToken}));
  EXPECT_EQ(sched.FindRequest(1)->num_placeholders, 2);  // the tokens steps 0 and 1 will sample
  EXPECT_EQ(sched.NumStepsInFlight(), 2);
  // Launching step 1 before step 0 is committed cannot resolve the placeholder.
  EXPECT_EQ(sched.PrepareLaunch(&step1).code(), StatusCode::kInternal);
  EXPECT_EQ(step1.seqs[0].tokens, (std::vector<int32_t>{kPlaceholderToken}));  // untouched

  StepOutput out0 = model.Execute(step0);
  auto commit = sched.OnStepSampled(out0);
  ASSERT_TRUE(commit.ok());
  ASSERT_EQ(commit->updates.size(), 1u);
  const int32_t first = commit->updates[0].new_tokens.at(0);
  ASSERT_TRUE(sched.PrepareLaunch(&step1).ok());
  EXPECT_EQ(step1.seqs[0].tokens, (std::vector<int32_t>{first}));
  ASSERT_TRUE(sched.OnStepSampled(model.Execute(step1)).ok());
  sched.CheckInvariants();
}

TEST(SchedulerAsyncTest, StepsCommitInOrder) {
  Scheduler sched(SchedulerConfig{}, Kv(16));
  FakeModel model(16, 4, kVocab);
  ASSERT_TRUE(sched.AddRequest({.id = 1, .prompt_tokens = Range(0, 5), .max_tokens = 4}).ok());
  StepPlan step0 = sched.PlanStep();
  ASSERT_TRUE(sched.PrepareLaunch(&step0).ok());
  StepPlan step1 = sched.PlanStep();
  ASSERT_TRUE(sched.PrepareLaunch(&step1, Scheduler::Placeholders::kLeaveForRunner).ok());
  StepOutput out0 = model.Execute(step0);
  StepOutput out1 = model.Execute(step1);
  EXPECT_EQ(sched.OnStepSampled(out1).status().code(), StatusCode::kInternal);
  StepOutput wrong = out0;
  wrong.seqs[0].tokens.push_back(3);  // two tokens without drafts
  EXPECT_EQ(sched.OnStepSampled(wrong).status().code(), StatusCode::kInternal);
  ASSERT_TRUE(sched.OnStepSampled(out0).ok());
  ASSERT_TRUE(sched.OnStepSampled(out1).ok());
  sched.CheckInvariants();
}

TEST(SchedulerAsyncTest, PlanningBeforeLaunchingThePreviousPlanIsABug) {
  Scheduler sched(SchedulerConfig{}, Kv(16));
  ASSERT_TRUE(sched.AddRequest({.id = 1, .prompt_tokens = Range(0, 5), .max_tokens = 4}).ok());
  StepPlan step0 = sched.PlanStep();
  EXPECT_DEATH(sched.PlanStep(), "launched");
}

// Request 1 stops on its first token; request 2 keeps going. Step 1 was planned
// (and, in the second variant, launched) before step 0 revealed the stop.
void RunStopDuringOverlap(Scheduler::Placeholders launch_mode) {
  Scheduler sched(SchedulerConfig{}, Kv(16));
  FakeModel model(16, 4, kVocab);
  const auto p1 = Range(0, 6), p2 = Range(40, 6);
  const int32_t stop = ReferenceOutput(p1, 1, {}, 1000, kVocab)[0];
  ASSERT_TRUE(
      sched.AddRequest({.id = 1, .prompt_tokens = p1, .max_tokens = 8, .stop_token_ids = {stop}}).ok());
  ASSERT_TRUE(sched.AddRequest({.id = 2, .prompt_tokens = p2, .max_tokens = 3}).ok());
  StepPlan step0 = sched.PlanStep();
  ASSERT_TRUE(sched.PrepareLaunch(&step0).ok());
  StepPlan step1 = sched.PlanStep();
  ASSERT_EQ(step1.seqs.size(), 2u);
  const bool early = launch_mode == Scheduler::Placeholders::kLeaveForRunner;
  if (early) {
    ASSERT_TRUE(sched.PrepareLaunch(&step1, launch_mode).ok());
  }

  auto commit0 = sched.OnStepSampled(model.Execute(step0));
  ASSERT_TRUE(commit0.ok());
  ASSERT_EQ(commit0->finished.size(), 1u);
  EXPECT_EQ(commit0->finished[0].id, 1);
  EXPECT_EQ(commit0->finished[0].finish_reason, FinishReason::kStop);
  EXPECT_FALSE(sched.kv().HasSequence(1));  // its KV is released at once
  sched.CheckInvariants();
  if (early) {
    EXPECT_EQ(commit0->discarded, (std::vector<RequestId>{1}));  // its row in step 1 is void
  } else {
    EXPECT_TRUE(commit0->discarded.empty());
    ASSERT_TRUE(sched.PrepareLaunch(&step1).ok());
    ASSERT_EQ(step1.seqs.size(), 1u);  // the finished request's slot was dropped
    EXPECT_EQ(step1.seqs[0].request_id, 2);
  }
  auto commit1 = sched.OnStepSampled(model.Execute(step1));
  ASSERT_TRUE(commit1.ok());
  for (const RequestUpdate& u : commit1->updates) EXPECT_NE(u.request_id, 1);
  sched.CheckInvariants();

  TestEngine engine(&sched, &model, LoopMode::kSync);
  engine.RunUntilIdle();
  const Request& r2 = engine.finished().at(2);
  EXPECT_EQ(std::vector<int32_t>(r2.OutputTokens().begin(), r2.OutputTokens().end()),
            ReferenceOutput(p2, 3, {}, 1000, kVocab));
  EXPECT_EQ(sched.kv().pool().num_referenced(), 0);
}

TEST(SchedulerAsyncTest, FinishedRequestsSlotIsDroppedBeforeLaunch) {
  RunStopDuringOverlap(Scheduler::Placeholders::kResolve);
}

TEST(SchedulerAsyncTest, FinishedRequestsSlotIsDiscardedAfterEarlyLaunch) {
  RunStopDuringOverlap(Scheduler::Placeholders::kLeaveForRunner);
}

TEST(SchedulerAsyncTest, AbortBetweenPlanAndLaunchDropsTheRow) {
  Scheduler sched(SchedulerConfig{}, Kv(16));
  FakeModel model(16, 4, kVocab);
  ASSERT_TRUE(sched.AddRequest({.id = 1, .prompt_tokens = Range(0, 6), .max_tokens = 8}).ok());
  ASSERT_TRUE(sched.AddRequest({.id = 2, .prompt_tokens = Range(50, 6), .max_tokens = 8}).ok());
  StepPlan step0 = sched.PlanStep();
  ASSERT_TRUE(sched.Abort(1).ok());  // e.g. the client disconnected
  ASSERT_TRUE(sched.PrepareLaunch(&step0).ok());
  ASSERT_EQ(step0.seqs.size(), 1u);
  EXPECT_EQ(step0.seqs[0].request_id, 2);
  ASSERT_TRUE(sched.OnStepSampled(model.Execute(step0)).ok());
  ASSERT_TRUE(sched.Abort(2).ok());
  StepPlan empty = sched.PlanStep();
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(sched.NumStepsInFlight(), 0);
  EXPECT_EQ(sched.kv().pool().num_referenced(), 0);
  sched.CheckInvariants();
}

// The loop modes must not change what any request generates.
class SchedulerLoopModeTest : public ::testing::TestWithParam<LoopMode> {};

TEST_P(SchedulerLoopModeTest, OutputsEqualSingleRequestReference) {
  // A small pool forces preemption while steps are in flight.
  Scheduler sched(SchedulerConfig{.max_num_seqs = 8, .max_num_batched_tokens = 24}, Kv(24));
  FakeModel model(24, 4, kVocab);
  TestEngine engine(&sched, &model, GetParam());
  std::map<RequestId, std::vector<int32_t>> prompts;
  for (RequestId id = 1; id <= 12; ++id) {
    std::vector<int32_t> prompt = Range(900, static_cast<int32_t>(id % 3) * 4);  // shared prefixes
    for (int32_t t : Range(static_cast<int32_t>(id) * 37, 3 + static_cast<int32_t>(id % 5))) {
      prompt.push_back(t);
    }
    prompts[id] = prompt;
    ASSERT_TRUE(
        sched.AddRequest({.id = id, .prompt_tokens = prompt, .max_tokens = 10 + static_cast<int32_t>(id)})
            .ok());
    if (id % 4 == 0) {  // staggered arrivals
      ASSERT_NO_FATAL_FAILURE(engine.Iterate());
    }
  }
  engine.RunUntilIdle();
  ASSERT_EQ(engine.finished().size(), 12u);
  for (auto& [id, r] : engine.finished()) {
    EXPECT_EQ(std::vector<int32_t>(r.OutputTokens().begin(), r.OutputTokens().end()),
              ReferenceOutput(prompts[id], r.max_tokens, {}, sched.config().max_model_len, kVocab))
        << "request " << id;
  }
  EXPECT_GT(sched.stats().num_preemptions, 0);
  EXPECT_EQ(sched.kv().pool().num_referenced(), 0);
  EXPECT_EQ(sched.kv().NumAvailableBlocks(), 24);
}

INSTANTIATE_TEST_SUITE_P(Modes, SchedulerLoopModeTest,
                         ::testing::Values(LoopMode::kSync, LoopMode::kAsync, LoopMode::kAsyncEarlyLaunch));

}  // namespace
}  // namespace deepinfer
