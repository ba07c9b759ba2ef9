// Scheduler policy tests in synchronous mode (one step at a time).
#include "scheduler/scheduler.h"

#include <gtest/gtest.h>

#include <numeric>

#include "scheduler/scheduler_test_util.h"

namespace deepinfer {
namespace {

using testing::FakeModel;
using testing::Kv;
using testing::LoopMode;
using testing::Range;
using testing::ReferenceOutput;
using testing::TestEngine;

constexpr int32_t kVocab = 1000;  // large: the fake model rarely hits a stop token by chance

struct Fixture {
  Fixture(SchedulerConfig config, KvConfig kv_config)
      : sched(config, kv_config),
        model(kv_config.num_blocks, kv_config.block_size, kVocab),
        engine(&sched, &model, LoopMode::kSync) {}

  void Add(RequestId id, std::vector<int32_t> prompt, int32_t max_tokens, int32_t priority = 0) {
    prompts[id] = prompt;
    Status s = sched.AddRequest(
        {.id = id, .prompt_tokens = std::move(prompt), .max_tokens = max_tokens, .priority = priority});
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  void ExpectReferenceOutputs() {
    for (auto& [id, r] : engine.finished()) {
      EXPECT_EQ(std::vector<int32_t>(r.OutputTokens().begin(), r.OutputTokens().end()),
                ReferenceOutput(prompts[id], r.max_tokens, {}, sched.config().max_model_len, kVocab))
          << "request " << id;
    }
  }
  void ExpectPoolFullyFree() {
    EXPECT_EQ(sched.kv().pool().num_referenced(), 0);
    EXPECT_EQ(sched.kv().NumAvailableBlocks(), sched.kv().num_blocks());
    EXPECT_EQ(sched.kv().UsageRatio(), 0.0);
  }

  Scheduler sched;
  FakeModel model;
  TestEngine engine;
  std::map<RequestId, std::vector<int32_t>> prompts;
};

TEST(SchedulerTest, RejectsInvalidRequestsWithoutQueueingThem) {
  Scheduler sched(SchedulerConfig{.max_model_len = 32}, Kv(8));
  EXPECT_EQ(sched.AddRequest({.id = 1, .prompt_tokens = {}, .max_tokens = 4}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(sched.AddRequest({.id = 1, .prompt_tokens = {1}, .max_tokens = 0}).code(),
            StatusCode::kInvalidArgument);
  Status too_long = sched.AddRequest({.id = 1, .prompt_tokens = Range(0, 30), .max_tokens = 3});
  EXPECT_EQ(too_long.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(too_long.message().find("max_model_len"), std::string::npos);
  // 28 tokens = 7 blocks + 1 for a copy-on-write: fits the 8-block pool; 32 tokens would need 9.
  EXPECT_TRUE(sched.AddRequest({.id = 1, .prompt_tokens = Range(0, 20), .max_tokens = 8}).ok());
  EXPECT_EQ(sched.AddRequest({.id = 2, .prompt_tokens = Range(0, 20), .max_tokens = 12}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(sched.AddRequest({.id = 1, .prompt_tokens = {1}, .max_tokens = 1}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(sched.NumWaiting(), 1);
  EXPECT_FALSE(Scheduler::Create(SchedulerConfig{.max_num_seqs = 0}, Kv(8)).ok());
  EXPECT_FALSE(Scheduler::Create(SchedulerConfig{}, Kv(0)).ok());
}

TEST(SchedulerTest, ChunkedPrefillRespectsTheTokenBudget) {
  Fixture f(SchedulerConfig{.max_num_batched_tokens = 8}, Kv(16));
  f.Add(1, Range(100, 20), 3);
  std::vector<std::pair<int64_t, size_t>> chunks;
  std::vector<bool> samples;
  for (int i = 0; i < 3; ++i) {
    StepPlan plan = f.sched.PlanStep();
    ASSERT_EQ(plan.seqs.size(), 1u);
    chunks.emplace_back(plan.seqs[0].start_pos, plan.seqs[0].tokens.size());
    samples.push_back(plan.seqs[0].samples);
    ASSERT_TRUE(f.sched.PrepareLaunch(&plan).ok());
    ASSERT_TRUE(f.sched.OnStepSampled(f.model.Execute(plan)).ok());
  }
  EXPECT_EQ(chunks, (std::vector<std::pair<int64_t, size_t>>{{0, 8}, {8, 8}, {16, 4}}));
  EXPECT_EQ(samples, (std::vector<bool>{false, false, true}));
  f.engine.RunUntilIdle();
  f.ExpectReferenceOutputs();
  f.ExpectPoolFullyFree();
}

TEST(SchedulerTest, DecodesFirstThenPrefillChunksThenAdmissions) {
  Fixture f(SchedulerConfig{.max_num_batched_tokens = 6}, Kv(32));
  f.Add(1, Range(0, 3), 10);  // prefilled in step 0, decoding from then on
  ASSERT_NO_FATAL_FAILURE(f.engine.Iterate());
  f.Add(2, Range(50, 9), 10);
  ASSERT_NO_FATAL_FAILURE(f.engine.Iterate());  // 1 decodes (1 token), 2 gets a 5-token chunk
  f.Add(3, Range(80, 4), 10);
  StepPlan plan = f.sched.PlanStep();
  ASSERT_EQ(plan.seqs.size(), 3u);
  EXPECT_EQ(plan.seqs[0].request_id, 1);  // decode
  EXPECT_EQ(plan.seqs[0].tokens.size(), 1u);
  EXPECT_EQ(plan.seqs[1].request_id, 2);  // next chunk of the partial prefill
  EXPECT_EQ(plan.seqs[1].start_pos, 5);
  EXPECT_EQ(plan.seqs[1].tokens.size(), 4u);
  EXPECT_EQ(plan.seqs[2].request_id, 3);  // admission gets what is left of the budget
  EXPECT_EQ(plan.seqs[2].tokens.size(), 1u);
  EXPECT_EQ(plan.NumTokens(), 6);
  ASSERT_TRUE(f.sched.PrepareLaunch(&plan).ok());
  ASSERT_TRUE(f.sched.OnStepSampled(f.model.Execute(plan)).ok());
  f.engine.RunUntilIdle();
  f.ExpectReferenceOutputs();
  f.ExpectPoolFullyFree();
}

TEST(SchedulerTest, SecondIdenticalPromptComputesOnlyItsLastToken) {
  for (int32_t prompt_len : {32, 37}) {  // block-aligned and not
    Fixture f(SchedulerConfig{}, Kv(64, 16));
    f.Add(1, Range(7, prompt_len), 4);
    f.engine.RunUntilIdle();
    f.Add(2, Range(7, prompt_len), 4);
    StepPlan plan = f.sched.PlanStep();
    ASSERT_EQ(plan.seqs.size(), 1u);
    EXPECT_EQ(plan.seqs[0].start_pos, prompt_len - 1);
    EXPECT_EQ(plan.seqs[0].tokens.size(), 1u);
    EXPECT_EQ(plan.block_copies.size(), 1u);  // the last token goes into a private copy of a cached block
    EXPECT_EQ(f.sched.FindRequest(2)->num_cached_prompt_tokens, prompt_len - 1);
    ASSERT_TRUE(f.sched.PrepareLaunch(&plan).ok());
    ASSERT_TRUE(f.sched.OnStepSampled(f.model.Execute(plan)).ok());
    f.engine.RunUntilIdle();
    f.ExpectReferenceOutputs();
    EXPECT_GT(f.sched.kv().prefix_cache().stats().HitRatio(), 0.45);
    f.ExpectPoolFullyFree();
  }
}

TEST(SchedulerTest, SharedSystemPromptIsComputedOnce) {
  Fixture f(SchedulerConfig{}, Kv(64, 4));
  std::vector<int32_t> system = Range(500, 12);
  auto a = system, b = system;
  for (int32_t t : Range(1, 5)) a.push_back(t);
  for (int32_t t : Range(40, 7)) b.push_back(t);
  f.Add(1, a, 3);
  ASSERT_NO_FATAL_FAILURE(f.engine.Iterate());  // request 1's prompt is computed and cached
  f.Add(2, b, 3);
  StepPlan plan = f.sched.PlanStep();
  ASSERT_EQ(plan.seqs.size(), 2u);
  EXPECT_EQ(plan.seqs[1].request_id, 2);
  EXPECT_EQ(plan.seqs[1].start_pos, 12);
  EXPECT_EQ(plan.seqs[1].tokens.size(), 7u);
  EXPECT_EQ(plan.seqs[1].block_table[0], plan.seqs[0].block_table[0]);  // shared, not copied
  ASSERT_TRUE(f.sched.PrepareLaunch(&plan).ok());
  ASSERT_TRUE(f.sched.OnStepSampled(f.model.Execute(plan)).ok());
  f.engine.RunUntilIdle();
  f.ExpectReferenceOutputs();
  f.ExpectPoolFullyFree();
}

TEST(SchedulerTest, AdmissionWaitsForMemoryWithoutPreempting) {
  // 10 blocks of 4. Request 1 takes 6 blocks at once; request 2 needs 5 for its prompt.
  Fixture f(SchedulerConfig{}, Kv(10));
  f.Add(1, Range(0, 24), 4);
  f.Add(2, Range(100, 20), 4);
  ASSERT_NO_FATAL_FAILURE(f.engine.Iterate());
  EXPECT_EQ(f.sched.NumRunning(), 1);
  EXPECT_EQ(f.sched.NumWaiting(), 1);  // blocked by memory
  f.engine.RunUntilIdle();
  EXPECT_EQ(f.sched.stats().num_preemptions, 0);
  EXPECT_EQ(f.engine.finished().size(), 2u);
  f.ExpectReferenceOutputs();
  f.ExpectPoolFullyFree();
}

TEST(SchedulerTest, PreemptionByRecomputeRestoresTheRequestAndAllItsTokens) {
  // 8 blocks of 4 = 32 slots; two requests growing to 27 tokens each cannot coexist.
  Fixture f(SchedulerConfig{}, Kv(8, 4, /*prefix_cache=*/false));
  f.Add(1, Range(0, 7), 20);
  f.Add(2, Range(300, 7), 20);
  bool saw_preemption = false;
  while (!f.engine.Idle()) {
    StepPlan plan = f.sched.PlanStep();
    for (RequestId id : plan.preempted) {
      EXPECT_EQ(id, 2);  // the later arrival gives way
      saw_preemption = true;
      const Request* r = f.sched.FindRequest(2);
      EXPECT_EQ(r->state, RequestState::kPreempted);
      EXPECT_FALSE(f.sched.kv().HasSequence(2));
      EXPECT_GT(r->NumOutputTokens(), 0);  // keeps its outputs for the recompute
    }
    ASSERT_TRUE(f.sched.PrepareLaunch(&plan).ok());
    if (!plan.empty()) {
      ASSERT_TRUE(f.sched.OnStepSampled(f.model.Execute(plan)).ok());
    }
    f.sched.CheckInvariants();
  }
  EXPECT_TRUE(saw_preemption);
  EXPECT_GT(f.sched.stats().num_preemptions, 0);
  f.ExpectPoolFullyFree();
}

TEST(SchedulerTest, PreemptedRequestFinishesWithTheReferenceOutput) {
  Fixture f(SchedulerConfig{}, Kv(8));
  for (RequestId id = 1; id <= 4; ++id) f.Add(id, Range(static_cast<int32_t>(id) * 100, 5), 20);
  f.engine.RunUntilIdle();
  EXPECT_GT(f.sched.stats().num_preemptions, 0);
  ASSERT_EQ(f.engine.finished().size(), 4u);
  f.ExpectReferenceOutputs();
  f.ExpectPoolFullyFree();
}

TEST(SchedulerTest, PriorityPolicyServesLowerValuesFirst) {
  Fixture f(SchedulerConfig{.max_num_seqs = 1, .policy = SchedulingPolicy::kPriority}, Kv(32));
  f.Add(1, Range(0, 4), 2, /*priority=*/5);
  f.Add(2, Range(10, 4), 2, /*priority=*/1);
  f.Add(3, Range(20, 4), 2, /*priority=*/5);
  std::vector<RequestId> order;
  while (!f.engine.Idle()) {
    ASSERT_NO_FATAL_FAILURE(f.engine.Iterate());
    for (auto& [id, r] : f.engine.finished()) {
      if (std::find(order.begin(), order.end(), id) == order.end()) order.push_back(id);
    }
  }
  EXPECT_EQ(order, (std::vector<RequestId>{2, 1, 3}));  // by priority, then arrival
}

TEST(SchedulerTest, HigherPriorityArrivalPreemptsALowerPriorityRequest) {
  Fixture f(SchedulerConfig{.policy = SchedulingPolicy::kPriority}, Kv(8));
  f.Add(1, Range(0, 20), 8, /*priority=*/9);
  ASSERT_NO_FATAL_FAILURE(f.engine.Iterate());
  f.Add(2, Range(100, 20), 8, /*priority=*/0);
  StepPlan plan = f.sched.PlanStep();
  EXPECT_EQ(plan.preempted, (std::vector<RequestId>{1}));
  ASSERT_EQ(plan.seqs.size(), 1u);
  EXPECT_EQ(plan.seqs[0].request_id, 2);
  ASSERT_TRUE(f.sched.PrepareLaunch(&plan).ok());
  ASSERT_TRUE(f.sched.OnStepSampled(f.model.Execute(plan)).ok());
  f.engine.RunUntilIdle();
  EXPECT_EQ(f.engine.finished().size(), 2u);
  f.ExpectReferenceOutputs();
  f.ExpectPoolFullyFree();
}

TEST(SchedulerTest, FcfsFinishesInArrivalOrderWithoutStarvation) {
  Fixture f(SchedulerConfig{.max_num_seqs = 1}, Kv(16));
  for (RequestId id = 1; id <= 5; ++id) f.Add(id, Range(static_cast<int32_t>(id), 6), 3, /*priority=*/-id);
  std::vector<RequestId> order;
  while (!f.engine.Idle()) {
    ASSERT_NO_FATAL_FAILURE(f.engine.Iterate());
    for (auto& [id, r] : f.engine.finished()) {
      if (std::find(order.begin(), order.end(), id) == order.end()) order.push_back(id);
    }
  }
  EXPECT_EQ(order, (std::vector<RequestId>{1, 2, 3, 4, 5}));  // priority is ignored under FCFS
}

TEST(SchedulerTest, StopTokensAndLengthLimitsFinishRequests) {
  Fixture f(SchedulerConfig{.max_model_len = 12}, Kv(16));
  auto prompt = Range(3, 5);
  auto reference = ReferenceOutput(prompt, 6, {}, 12, kVocab);
  // Stop on the third token the model will produce.
  ASSERT_TRUE(
      f.sched
          .AddRequest({.id = 1, .prompt_tokens = prompt, .max_tokens = 6, .stop_token_ids = {reference[2]}})
          .ok());
  f.Add(2, prompt, 3);        // length by max_tokens
  f.Add(3, Range(40, 5), 7);  // length, also reaching max_model_len (5 + 7 = 12)
  f.engine.RunUntilIdle();
  auto& done = f.engine.finished();
  EXPECT_EQ(done.at(1).finish_reason, FinishReason::kStop);
  EXPECT_EQ(done.at(1).NumOutputTokens(), 3);
  EXPECT_EQ(done.at(2).finish_reason, FinishReason::kLength);
  EXPECT_EQ(done.at(2).NumOutputTokens(), 3);
  EXPECT_EQ(done.at(3).finish_reason, FinishReason::kLength);
  EXPECT_EQ(done.at(3).NumKnownTokens(), 12);
  EXPECT_STREQ(FinishReasonName(done.at(1).finish_reason), "stop");
  f.ExpectPoolFullyFree();
}

TEST(SchedulerTest, AbortFreesTheRequestImmediately) {
  Fixture f(SchedulerConfig{}, Kv(16));
  f.Add(1, Range(0, 9), 10);
  f.Add(2, Range(50, 9), 10);
  ASSERT_NO_FATAL_FAILURE(f.engine.Iterate());
  ASSERT_NO_FATAL_FAILURE(f.engine.Abort(1));
  EXPECT_EQ(f.engine.finished().at(1).finish_reason, FinishReason::kAbort);
  EXPECT_EQ(f.sched.Abort(1).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(f.sched.NumRunning(), 1);
  f.sched.CheckInvariants();
  auto stopped = f.sched.Abort(2, FinishReason::kStop);  // e.g. a stop string was detokenized
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ(stopped->finish_reason, FinishReason::kStop);
  EXPECT_EQ(f.sched.NumRunning(), 0);
  f.Add(3, Range(70, 9), 10);
  f.engine.RunUntilIdle();
  f.ExpectPoolFullyFree();
}

TEST(SchedulerTest, SpeculativeDraftsAreVerifiedAndRejectedOnesRolledBack) {
  Fixture f(SchedulerConfig{.max_num_batched_tokens = 64, .max_num_speculative_tokens = 3}, Kv(64));
  int64_t proposals = 0;
  // Drafter: the true continuation, with the third draft wrong every other time.
  f.engine.after_commit = [&](Scheduler& s) {
    for (RequestId id : {1, 2, 3}) {
      const Request* r = s.FindRequest(id);
      if (r == nullptr || r->state != RequestState::kRunning || r->NumUncomputedTokens() != 1) continue;
      std::vector<int32_t> context = r->tokens, drafts;
      for (int i = 0; i < 3; ++i) {
        int32_t t = testing::NextToken(context, kVocab);
        if (i == 2 && ++proposals % 2 == 0) t = (t + 1) % kVocab;
        drafts.push_back(t);
        context.push_back(t);
      }
      ASSERT_TRUE(s.SetDraftTokens(id, drafts).ok());
    }
  };
  for (RequestId id = 1; id <= 3; ++id) f.Add(id, Range(static_cast<int32_t>(id) * 10, 6), 17);
  f.engine.RunUntilIdle();
  f.ExpectReferenceOutputs();
  const SchedulerStats& st = f.sched.stats();
  EXPECT_GT(st.spec_draft_tokens, 0);
  EXPECT_GT(st.spec_accepted_tokens, 0);
  EXPECT_LT(st.spec_accepted_tokens, st.spec_draft_tokens);
  EXPECT_LT(f.engine.iterations(), 12);  // without drafts: 17 steps (one token per step)
  f.ExpectPoolFullyFree();
}

}  // namespace
}  // namespace deepinfer
