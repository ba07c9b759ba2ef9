// Jump-forward: committed rows that carry forced tokens (tokens a constraint
// allows as the only continuation). The scheduler appends them, voids the
// sampling rows planned after them, and computes their KV as a chunk.
#include <gtest/gtest.h>

#include <numeric>

#include "scheduler/scheduler.h"
#include "scheduler/scheduler_test_util.h"

namespace deepinfer {
namespace {

using testing::FakeModel;
using testing::Kv;
using testing::NextToken;
using testing::Range;

constexpr int32_t kVocab = 1000;

// The rule both the reference and the loop apply: after a sampled token t
// with t % 3 == 0, the tokens t+1 and t+2 are forced.
std::vector<int32_t> ForcedAfter(int32_t t) {
  if (t % 3 != 0) return {};
  return {(t + 1) % kVocab, (t + 2) % kVocab};
}

// A plain token list run: sample, then append what is forced, until max_tokens.
std::vector<int32_t> ReferenceWithForcing(std::vector<int32_t> tokens, int32_t max_tokens) {
  std::vector<int32_t> out;
  while (static_cast<int32_t>(out.size()) < max_tokens) {
    const int32_t t = NextToken(tokens, kVocab);
    tokens.push_back(t);
    out.push_back(t);
    for (int32_t f : ForcedAfter(t)) {
      if (static_cast<int32_t>(out.size()) >= max_tokens) break;
      tokens.push_back(f);
      out.push_back(f);
    }
  }
  return out;
}

// Adds the forced tokens to every sampled row of a step's output.
StepOutput WithForcing(StepOutput out) {
  for (SequenceOutput& s : out.seqs) {
    if (s.tokens.empty()) continue;
    const std::vector<int32_t> forced = ForcedAfter(s.tokens.back());
    s.tokens.insert(s.tokens.end(), forced.begin(), forced.end());
    s.num_forced = static_cast<int32_t>(forced.size());
  }
  return out;
}

TEST(SchedulerJumpForwardTest, ForcedTokensVoidThePlannedRowAndBecomeAChunk) {
  Scheduler sched(SchedulerConfig{}, Kv(32));
  FakeModel model(32, 4, kVocab);
  ASSERT_TRUE(sched.AddRequest({.id = 1, .prompt_tokens = Range(0, 5), .max_tokens = 8}).ok());
  StepPlan step0 = sched.PlanStep();
  ASSERT_TRUE(sched.PrepareLaunch(&step0).ok());
  StepPlan step1 = sched.PlanStep();  // planned while step 0 runs: samples position 6
  ASSERT_TRUE(step1.seqs.at(0).samples);

  StepOutput out0 = model.Execute(step0);
  out0.seqs.at(0).tokens.insert(out0.seqs[0].tokens.end(), {900, 901, 902});
  out0.seqs[0].num_forced = 3;
  const int32_t sampled = out0.seqs[0].tokens[0];
  auto commit0 = sched.OnStepSampled(out0);
  ASSERT_TRUE(commit0.ok());
  EXPECT_EQ(commit0->updates.at(0).new_tokens, (std::vector<int32_t>{sampled, 900, 901, 902}));
  EXPECT_EQ(sched.FindRequest(1)->num_placeholders, 0);  // step 1's sample was voided
  sched.CheckInvariants();

  ASSERT_TRUE(sched.PrepareLaunch(&step1).ok());
  EXPECT_FALSE(step1.seqs.at(0).samples);  // it only writes the sampled token's KV
  EXPECT_EQ(step1.seqs[0].tokens, (std::vector<int32_t>{sampled}));
  StepPlan step2 = sched.PlanStep();
  ASSERT_EQ(step2.seqs.size(), 1u);
  EXPECT_EQ(step2.seqs[0].start_pos, 6);
  EXPECT_EQ(step2.seqs[0].tokens, (std::vector<int32_t>{900, 901, 902}));
  EXPECT_TRUE(step2.seqs[0].samples);
  auto commit1 = sched.OnStepSampled(model.Execute(step1));
  ASSERT_TRUE(commit1.ok());
  EXPECT_TRUE(commit1->updates.empty());
  ASSERT_TRUE(sched.PrepareLaunch(&step2).ok());
  auto commit2 = sched.OnStepSampled(model.Execute(step2));
  ASSERT_TRUE(commit2.ok());
  // The model saw prompt, sampled token and the forced ones in its KV.
  std::vector<int32_t> context = Range(0, 5);
  context.insert(context.end(), {sampled, 900, 901, 902});
  EXPECT_EQ(commit2->updates.at(0).new_tokens, (std::vector<int32_t>{NextToken(context, kVocab)}));
  sched.CheckInvariants();
}

TEST(SchedulerJumpForwardTest, ForcedTokensAreDroppedWhenALaterRowWasLaunched) {
  Scheduler sched(SchedulerConfig{}, Kv(32));
  FakeModel model(32, 4, kVocab);
  ASSERT_TRUE(sched.AddRequest({.id = 1, .prompt_tokens = Range(0, 5), .max_tokens = 8}).ok());
  StepPlan step0 = sched.PlanStep();
  ASSERT_TRUE(sched.PrepareLaunch(&step0).ok());
  StepPlan step1 = sched.PlanStep();
  ASSERT_TRUE(sched.PrepareLaunch(&step1, Scheduler::Placeholders::kLeaveForRunner).ok());
  StepOutput out0 = model.Execute(step0);
  const int32_t sampled = out0.seqs.at(0).tokens[0];
  out0.seqs[0].tokens.push_back(900);
  out0.seqs[0].num_forced = 1;
  auto commit0 = sched.OnStepSampled(out0);
  ASSERT_TRUE(commit0.ok());
  EXPECT_EQ(commit0->updates.at(0).new_tokens, (std::vector<int32_t>{sampled}));
  ASSERT_TRUE(sched.OnStepSampled(model.Execute(step1)).ok());
  sched.CheckInvariants();
}

TEST(SchedulerJumpForwardTest, ForcedCountLargerThanTheRowIsRejected) {
  Scheduler sched(SchedulerConfig{}, Kv(32));
  FakeModel model(32, 4, kVocab);
  ASSERT_TRUE(sched.AddRequest({.id = 1, .prompt_tokens = Range(0, 5), .max_tokens = 8}).ok());
  StepPlan step0 = sched.PlanStep();
  ASSERT_TRUE(sched.PrepareLaunch(&step0).ok());
  StepOutput out0 = model.Execute(step0);
  out0.seqs.at(0).num_forced = 1;  // the only token cannot be forced: nothing was sampled
  EXPECT_EQ(sched.OnStepSampled(out0).status().code(), StatusCode::kInternal);
  out0.seqs[0].num_forced = 2;
  EXPECT_EQ(sched.OnStepSampled(out0).status().code(), StatusCode::kInternal);
  out0.seqs[0].num_forced = 0;
  ASSERT_TRUE(sched.OnStepSampled(out0).ok());
}

// Many requests, small KV pool (preemptions), async planning: every request's
// output equals the plain run with the same forcing rule, truncated at max_tokens.
TEST(SchedulerJumpForwardTest, AsyncLoopMatchesThePlainRunWithForcing) {
  for (int32_t num_blocks : {64, 12}) {
    SchedulerConfig config;
    config.max_num_batched_tokens = 16;
    Scheduler sched(config, Kv(num_blocks));
    FakeModel model(num_blocks, 4, kVocab);
    std::map<RequestId, std::vector<int32_t>> prompts, outputs;
    for (RequestId id = 1; id <= 6; ++id) {
      prompts[id] = Range(static_cast<int32_t>(id * 10), static_cast<int32_t>(3 + id));
      ASSERT_TRUE(sched.AddRequest({.id = id, .prompt_tokens = prompts[id], .max_tokens = 12}).ok());
    }
    std::optional<StepPlan> running;
    for (int guard = 0; guard < 1000 && (sched.HasUnfinishedRequests() || running); ++guard) {
      StepPlan next = sched.PlanStep();  // while `running` executes
      if (running) {
        auto commit = sched.OnStepSampled(WithForcing(model.Execute(*running)));
        ASSERT_TRUE(commit.ok()) << commit.status().ToString();
        for (const RequestUpdate& u : commit->updates) {
          outputs[u.request_id].insert(outputs[u.request_id].end(), u.new_tokens.begin(), u.new_tokens.end());
        }
        for (const Request& r : commit->finished) {
          // Preemption recomputes but never re-emits: what was streamed is the output.
          EXPECT_EQ(outputs[r.id], std::vector<int32_t>(r.OutputTokens().begin(), r.OutputTokens().end()));
        }
        running.reset();
      }
      sched.CheckInvariants();
      ASSERT_TRUE(sched.PrepareLaunch(&next).ok());
      if (!next.empty()) running = std::move(next);
    }
    ASSERT_FALSE(sched.HasUnfinishedRequests());
    if (num_blocks == 12) EXPECT_GT(sched.stats().num_preemptions, 0);  // the small pool really preempts
    int forcings = 0;
    for (const auto& [id, out] : outputs) {
      for (size_t i = 0; i + 1 < out.size(); ++i) forcings += out[i] % 3 == 0;
    }
    EXPECT_GT(forcings, 3);  // the rule fired
    for (const auto& [id, prompt] : prompts) {
      EXPECT_EQ(outputs[id], ReferenceWithForcing(prompt, 12))
          << "request " << id << ", " << num_blocks << " blocks";
    }
  }
}

}  // namespace
}  // namespace deepinfer
