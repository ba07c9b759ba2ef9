// Speculation under async scheduling: a decode planned while the request's
// verification (or plain decode) is in flight is a pending-length row that
// PrepareLaunch resolves once that step is committed (scheduler.h). Positions
// and KV counts below are hand-computed from the prompt length and the
// accepted drafts; CheckInvariants runs after every scheduler call.
#include <gtest/gtest.h>

#include "scheduler/scheduler.h"
#include "scheduler/scheduler_test_util.h"

namespace deepinfer {
namespace {

using testing::Kv;
using testing::Range;

constexpr int32_t kSpec = 3;  // max_num_speculative_tokens
constexpr int32_t kPrompt = 5;

// Step 0 prefills the 5-token prompt (positions 0..4); step 1, planned while
// step 0 runs, is R's pending decode; after commit 0 (token t5 at position 5)
// it verifies drafts d1..d3 at positions 5..8: claim 9. Step 2 is planned
// while step 1 runs.
class PendingRowTest : public ::testing::Test {
 protected:
  explicit PendingRowTest(SchedulingPolicy policy = SchedulingPolicy::kFcfs, int32_t blocks = 16)
      : sched_(
            SchedulerConfig{
                .max_num_batched_tokens = 64, .policy = policy, .max_num_speculative_tokens = kSpec},
            Kv(blocks)) {}

  void Check() { sched_.CheckInvariants(); }

  StepOutput Output(const StepPlan& plan, RequestId id, std::vector<int32_t> tokens, int32_t forced = 0) {
    StepOutput out;
    out.step_id = plan.step_id;
    out.seqs.push_back(SequenceOutput{id, std::move(tokens), forced});
    return out;
  }

  // Returns step 1 launched with R's three drafts.
  StepPlan StartVerification(int32_t max_tokens = 20, std::vector<int32_t> stop = {}) {
    EXPECT_TRUE(sched_
                    .AddRequest({.id = 1,
                                 .prompt_tokens = Range(0, kPrompt),
                                 .max_tokens = max_tokens,
                                 .stop_token_ids = std::move(stop),
                                 .priority = 1})
                    .ok());
    StepPlan step0 = sched_.PlanStep();
    Check();
    EXPECT_TRUE(sched_.PrepareLaunch(&step0).ok());
    StepPlan step1 = sched_.PlanStep();  // while step 0 runs
    Check();
    EXPECT_EQ(step1.seqs.size(), 1u);
    EXPECT_EQ(step1.seqs[0].tokens.size(), 1u + kSpec);  // the reservation: 1 + K
    EXPECT_EQ(sched_.kv().NumTokens(1), kPrompt + 1 + kSpec);
    EXPECT_TRUE(sched_.OnStepSampled(Output(step0, 1, {105})).ok());
    Check();
    EXPECT_TRUE(sched_.SetDraftTokens(1, {106, 107, 108}).ok());
    EXPECT_TRUE(sched_.PrepareLaunch(&step1).ok());
    Check();
    EXPECT_EQ(step1.seqs[0].start_pos, 5);
    EXPECT_EQ(step1.seqs[0].tokens, (std::vector<int32_t>{105, 106, 107, 108}));
    EXPECT_EQ(step1.seqs[0].num_draft_tokens, 3);
    EXPECT_EQ(sched_.kv().NumTokens(1), 9);
    EXPECT_TRUE(sched_.FindRequest(1)->verification_in_flight);
    return step1;
  }

  // Plans step 2 while step 1 verifies: R's row reserves 1 + K after claim 9.
  StepPlan PlanWhileVerifying() {
    StepPlan step2 = sched_.PlanStep();
    Check();
    EXPECT_EQ(step2.seqs.size(), 1u);
    EXPECT_EQ(step2.seqs.at(0).request_id, 1);
    EXPECT_TRUE(step2.seqs.at(0).samples);
    EXPECT_EQ(sched_.kv().NumTokens(1), 9 + 1 + kSpec);
    EXPECT_EQ(sched_.FindRequest(1)->num_placeholders, 2);
    return step2;
  }

  Scheduler sched_;
};

TEST_F(PendingRowTest, AllDraftsRejectedShiftsTheRowDown) {
  StepPlan step1 = StartVerification();
  StepPlan step2 = PlanWhileVerifying();
  // a = 0: only the correction 200 at position 6; positions 7..8 roll back.
  ASSERT_TRUE(sched_.OnStepSampled(Output(step1, 1, {200})).ok());
  Check();
  EXPECT_EQ(sched_.kv().NumTokens(1), 13 - 3);
  EXPECT_EQ(sched_.FindRequest(1)->num_committed_kv_tokens, 6);
  ASSERT_TRUE(sched_.SetDraftTokens(1, {201, 202}).ok());
  ASSERT_TRUE(sched_.PrepareLaunch(&step2).ok());
  Check();
  ASSERT_EQ(step2.seqs.size(), 1u);
  const ScheduledSequence& s = step2.seqs[0];
  EXPECT_EQ(s.start_pos, 6);  // p + a + 1 with p = 5
  EXPECT_EQ(s.tokens, (std::vector<int32_t>{200, 201, 202}));
  EXPECT_EQ(s.num_draft_tokens, 2);
  EXPECT_EQ(sched_.kv().NumTokens(1), 9);  // 6 + 3: the unused reserved slot is back
  EXPECT_EQ(s.block_table, sched_.kv().BlockTable(1));
  EXPECT_EQ(s.block_table.size(), 3u);
  // Commit 2 validates against the resolved row: 1..3 tokens.
  StepOutput too_many = Output(step2, 1, {201, 202, 203, 204});
  EXPECT_EQ(sched_.OnStepSampled(too_many).status().code(), StatusCode::kInternal);
  ASSERT_TRUE(sched_.OnStepSampled(Output(step2, 1, {201, 300})).ok());  // a = 1
  Check();
  EXPECT_EQ(sched_.kv().NumTokens(1), 8);
  EXPECT_EQ(sched_.FindRequest(1)->tokens, (std::vector<int32_t>{0, 1, 2, 3, 4, 105, 200, 201, 300}));
  EXPECT_EQ(sched_.stats().spec_draft_tokens, 5);
  EXPECT_EQ(sched_.stats().spec_accepted_tokens, 1);
}

TEST_F(PendingRowTest, AllDraftsAcceptedAndMoreDraftsThanReserved) {
  StepPlan step1 = StartVerification();
  StepPlan step2 = PlanWhileVerifying();
  ASSERT_TRUE(sched_.OnStepSampled(Output(step1, 1, {106, 107, 108, 209})).ok());  // a = 3, bonus 209
  Check();
  EXPECT_EQ(sched_.kv().NumTokens(1), 13);                           // nothing rejected
  ASSERT_TRUE(sched_.SetDraftTokens(1, {210, 211, 212, 213}).ok());  // one more than K
  ASSERT_TRUE(sched_.PrepareLaunch(&step2).ok());
  Check();
  const ScheduledSequence& s = step2.seqs.at(0);
  EXPECT_EQ(s.start_pos, 9);  // 5 + 3 + 1
  EXPECT_EQ(s.tokens, (std::vector<int32_t>{209, 210, 211, 212}));
  EXPECT_EQ(s.num_draft_tokens, kSpec);
  EXPECT_EQ(sched_.kv().NumTokens(1), 13);
  EXPECT_EQ(s.block_table.size(), 4u);
}

TEST_F(PendingRowTest, NoDraftsAtCommitGivesAPlainDecode) {
  StepPlan step1 = StartVerification();
  StepPlan step2 = PlanWhileVerifying();
  ASSERT_TRUE(sched_.OnStepSampled(Output(step1, 1, {106, 207})).ok());  // a = 1
  Check();
  EXPECT_EQ(sched_.kv().NumTokens(1), 11);
  ASSERT_TRUE(sched_.PrepareLaunch(&step2).ok());
  Check();
  const ScheduledSequence& s = step2.seqs.at(0);
  EXPECT_EQ(s.start_pos, 7);
  EXPECT_EQ(s.tokens, (std::vector<int32_t>{207}));
  EXPECT_EQ(s.num_draft_tokens, 0);
  EXPECT_EQ(sched_.kv().NumTokens(1), 8);
  EXPECT_FALSE(sched_.FindRequest(1)->verification_in_flight);
}

TEST_F(PendingRowTest, FinishAtTheCommitDropsTheRow) {
  StepPlan step1 = StartVerification(20, {107});
  StepPlan step2 = PlanWhileVerifying();
  auto commit = sched_.OnStepSampled(Output(step1, 1, {106, 107, 300}));  // stops at 107
  ASSERT_TRUE(commit.ok());
  Check();
  ASSERT_EQ(commit->finished.size(), 1u);
  EXPECT_TRUE(commit->discarded.empty());  // step 2 is not launched
  ASSERT_TRUE(sched_.PrepareLaunch(&step2).ok());
  Check();
  EXPECT_TRUE(step2.empty());
  EXPECT_EQ(sched_.NumStepsInFlight(), 0);
  EXPECT_EQ(sched_.kv().pool().num_referenced(), 0);
}

TEST_F(PendingRowTest, AbortBeforeLaunchDropsTheRow) {
  StepPlan step1 = StartVerification();
  StepPlan step2 = PlanWhileVerifying();
  ASSERT_TRUE(sched_.OnStepSampled(Output(step1, 1, {200})).ok());
  Check();
  ASSERT_TRUE(sched_.Abort(1).ok());
  Check();
  ASSERT_TRUE(sched_.PrepareLaunch(&step2).ok());
  Check();
  EXPECT_TRUE(step2.empty());
  EXPECT_EQ(sched_.kv().pool().num_referenced(), 0);
}

TEST_F(PendingRowTest, ForcedTokensDropTheRowAndTheNextPlanComputesThem) {
  StepPlan step1 = StartVerification();
  StepPlan step2 = PlanWhileVerifying();
  // a = 1 (106), correction 207 at position 7, then forced 400, 401 at 8, 9.
  auto commit = sched_.OnStepSampled(Output(step1, 1, {106, 207, 400, 401}, /*forced=*/2));
  ASSERT_TRUE(commit.ok());
  Check();
  EXPECT_EQ(commit->updates.at(0).new_tokens, (std::vector<int32_t>{106, 207, 400, 401}));
  EXPECT_EQ(sched_.kv().NumTokens(1), 13 - 2);
  ASSERT_TRUE(sched_.PrepareLaunch(&step2).ok());
  Check();
  EXPECT_TRUE(step2.empty());
  EXPECT_EQ(sched_.kv().NumTokens(1), 7);  // the reservation is gone
  EXPECT_EQ(sched_.FindRequest(1)->num_computed_tokens, 7);
  EXPECT_EQ(sched_.FindRequest(1)->num_placeholders, 0);
  StepPlan step3 = sched_.PlanStep();
  Check();
  ASSERT_EQ(step3.seqs.size(), 1u);
  EXPECT_EQ(step3.seqs[0].start_pos, 7);
  EXPECT_EQ(step3.seqs[0].tokens, (std::vector<int32_t>{207, 400, 401}));
  EXPECT_TRUE(step3.seqs[0].samples);
}

TEST_F(PendingRowTest, EarlyLaunchCannotResolveAndSitsOut) {
  StepPlan step1 = StartVerification();
  StepPlan step2 = PlanWhileVerifying();
  // Launching before commit 1 would not know the position.
  EXPECT_EQ(sched_.PrepareLaunch(&step2).code(), StatusCode::kInternal);
  ASSERT_TRUE(sched_.PrepareLaunch(&step2, Scheduler::Placeholders::kLeaveForRunner).ok());
  Check();
  EXPECT_TRUE(step2.empty());
  EXPECT_EQ(sched_.kv().NumTokens(1), 9);
  EXPECT_EQ(sched_.FindRequest(1)->num_placeholders, 1);
  ASSERT_TRUE(sched_.OnStepSampled(Output(step1, 1, {200})).ok());
  Check();
  EXPECT_EQ(sched_.kv().NumTokens(1), 6);
}

TEST_F(PendingRowTest, DraftingPausedReservesNoDraftSlots) {
  StepPlan step1 = StartVerification();
  sched_.SetDraftingPaused(true);
  StepPlan step2 = sched_.PlanStep();
  Check();
  ASSERT_EQ(step2.seqs.size(), 1u);
  EXPECT_EQ(sched_.kv().NumTokens(1), 10);                                    // only the input's slot
  ASSERT_TRUE(sched_.OnStepSampled(Output(step1, 1, {106, 107, 208})).ok());  // a = 2
  Check();
  EXPECT_EQ(sched_.kv().NumTokens(1), 9);
  ASSERT_TRUE(sched_.SetDraftTokens(1, {209}).ok());  // stale for a paused drafter: none fit
  ASSERT_TRUE(sched_.PrepareLaunch(&step2).ok());
  Check();
  EXPECT_EQ(step2.seqs.at(0).start_pos, 8);
  EXPECT_EQ(step2.seqs.at(0).tokens, (std::vector<int32_t>{208}));
  EXPECT_EQ(sched_.kv().NumTokens(1), 9);
}

TEST_F(PendingRowTest, ReservationIsCappedByTheRequestsRoom) {
  // max_tokens 6: the claim may not pass prompt + max_tokens = 11 positions,
  // 9 are claimed: the row reserves 1 draft slot.
  StepPlan step1 = StartVerification(/*max_tokens=*/6);
  StepPlan step2 = sched_.PlanStep();
  Check();
  ASSERT_EQ(step2.seqs.size(), 1u);
  // room = 6 - 1 output - 1 placeholder - 1 = 3; claim room = 11 - 9 - 1 = 1.
  EXPECT_EQ(sched_.kv().NumTokens(1), 9 + 2);
  ASSERT_TRUE(sched_.OnStepSampled(Output(step1, 1, {200})).ok());  // a = 0: 2 outputs
  Check();
  ASSERT_TRUE(sched_.SetDraftTokens(1, {201, 202, 203}).ok());
  ASSERT_TRUE(sched_.PrepareLaunch(&step2).ok());
  Check();
  EXPECT_EQ(step2.seqs.at(0).start_pos, 6);
  EXPECT_EQ(step2.seqs.at(0).tokens, (std::vector<int32_t>{200, 201}));
  EXPECT_EQ(sched_.kv().NumTokens(1), 8);
}

class PendingRowPreemptionTest : public PendingRowTest {
 protected:
  PendingRowPreemptionTest() : PendingRowTest(SchedulingPolicy::kPriority, /*blocks=*/8) {}
};

TEST_F(PendingRowPreemptionTest, PreemptedAfterItsRowWasPickedLeavesNoRow) {
  StepPlan step1 = StartVerification();
  // A higher-priority 20-token prompt needs 5 of the 8 blocks; R holds 3 and
  // its reservation would take a 4th: R is preempted while planning step 2.
  ASSERT_TRUE(
      sched_.AddRequest({.id = 2, .prompt_tokens = Range(500, 20), .max_tokens = 4, .priority = 0}).ok());
  StepPlan step2 = sched_.PlanStep();
  Check();
  EXPECT_EQ(step2.preempted, (std::vector<RequestId>{1}));
  ASSERT_EQ(step2.seqs.size(), 1u);
  EXPECT_EQ(step2.seqs[0].request_id, 2);
  EXPECT_FALSE(sched_.kv().HasSequence(1));
  // The verification's result still counts (known tokens to recompute).
  ASSERT_TRUE(sched_.OnStepSampled(Output(step1, 1, {106, 207})).ok());
  Check();
  ASSERT_TRUE(sched_.PrepareLaunch(&step2).ok());
  Check();
  ASSERT_EQ(step2.seqs.size(), 1u);
  const Request* r = sched_.FindRequest(1);
  EXPECT_EQ(r->state, RequestState::kPreempted);
  EXPECT_EQ(r->tokens, (std::vector<int32_t>{0, 1, 2, 3, 4, 105, 106, 207}));
  EXPECT_EQ(r->num_placeholders, 0);
  EXPECT_EQ(r->num_computed_tokens, 0);
}

// Window-bounded KV: a row after a plain decode (known start) still reserves
// draft slots, but a request verifying drafts sits out the plan made
// meanwhile (a windowed claim cannot roll back past its start).
TEST(PendingRowWindowedKvTest, VerifyingRequestSitsOutAndAKnownStartStillGetsDrafts) {
  Scheduler sched(
      SchedulerConfig{.max_num_batched_tokens = 64, .max_num_speculative_tokens = kSpec},
      KvConfig{.num_blocks = 64, .block_size = 4, .enable_prefix_cache = false, .layer_windows = {0, 4}});
  ASSERT_TRUE(sched.AddRequest({.id = 1, .prompt_tokens = Range(0, kPrompt), .max_tokens = 20}).ok());
  StepPlan step0 = sched.PlanStep();
  ASSERT_TRUE(sched.PrepareLaunch(&step0).ok());
  StepPlan step1 = sched.PlanStep();
  sched.CheckInvariants();
  EXPECT_EQ(sched.kv().NumTokens(1), kPrompt + 1 + kSpec);
  StepOutput out0{.step_id = step0.step_id, .seqs = {SequenceOutput{.request_id = 1, .tokens = {105}}}};
  ASSERT_TRUE(sched.OnStepSampled(out0).ok());
  ASSERT_TRUE(sched.SetDraftTokens(1, {106, 107, 108}).ok());
  ASSERT_TRUE(sched.PrepareLaunch(&step1).ok());
  sched.CheckInvariants();
  ASSERT_EQ(step1.seqs.size(), 1u);
  EXPECT_EQ(step1.seqs[0].start_pos, 5);
  EXPECT_EQ(step1.seqs[0].tokens, (std::vector<int32_t>{105, 106, 107, 108}));
  EXPECT_EQ(step1.seqs[0].layer_block_tables.size(), 2u);
  StepPlan step2 = sched.PlanStep();  // while step 1 verifies
  sched.CheckInvariants();
  EXPECT_TRUE(step2.empty());
  EXPECT_EQ(sched.kv().NumTokens(1), 9);
  StepOutput out1{.step_id = step1.step_id, .seqs = {SequenceOutput{.request_id = 1, .tokens = {200}}}};
  ASSERT_TRUE(sched.OnStepSampled(out1).ok());
  sched.CheckInvariants();
  EXPECT_EQ(sched.kv().NumTokens(1), 6);
  StepPlan step3 = sched.PlanStep();
  sched.CheckInvariants();
  ASSERT_EQ(step3.seqs.size(), 1u);
  EXPECT_EQ(step3.seqs[0].start_pos, 6);
  EXPECT_EQ(step3.seqs[0].tokens, (std::vector<int32_t>{200}));
}

}  // namespace
}  // namespace deepinfer
