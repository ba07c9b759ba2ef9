// StepExecutor's idle accounting and its two-part steps (runner/step_runner.h),
// on stories260K for a real StepRunner. Lives with the engine tests: the runner tests load no model.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "checkpoint/checkpoint.h"
#include "runner/step_runner.h"
#include "scheduler/request.h"
#include "spec/ngram_drafter.h"

namespace deepinfer {
namespace {

// A step without sequences runs no forward pass: the step takes no time to
// speak of, so the gaps between steps are what the test controls.
TEST(StepExecutorTest, CountsIdleTimeOnlyBetweenStepsWithoutAnIdleWait) {
  LoadOptions options;
  options.num_threads = 1;
  auto model = LoadModel(std::string(DI_SHARED_DIR) + "/models/gguf/stories260K.gguf", options);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  KvCache kv(model->model->config(), 4, 16);
  StepRunner runner(*model->model, kv);
  StepExecutor executor(runner);
  const auto gap = std::chrono::milliseconds(20);

  executor.Launch(LaunchedStep{});
  executor.Wait();
  EXPECT_EQ(executor.idle_seconds(), 0.0);  // the first step follows no step

  std::this_thread::sleep_for(gap);  // the engine had work but launched late
  executor.Launch(LaunchedStep{});
  executor.Wait();
  const double idle = executor.idle_seconds();
  EXPECT_GE(idle, 0.02);

  executor.NoteIdleWait();  // the engine waits for lack of work
  std::this_thread::sleep_for(gap);
  executor.Launch(LaunchedStep{});
  executor.Wait();
  EXPECT_EQ(executor.idle_seconds(), idle);
  EXPECT_GE(executor.busy_seconds(), 0.0);
}

// A step whose drafter proposes comes back in two parts: Wait gives the
// sampled rows (drafts pending, no proposals yet), WaitDrafts the proposals,
// and merged they are exactly what StepRunner::Run gives for the same step;
// the step's busy time is counted once its drafts are in.
TEST(StepExecutorTest, DraftsFollowTheSampledRows) {
  LoadOptions options;
  options.num_threads = 1;
  auto model = LoadModel(std::string(DI_SHARED_DIR) + "/models/gguf/stories260K.gguf", options);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  // Every token of the vocabulary once, in order: whatever token the model
  // samples occurred before, and a 1-gram prompt lookup proposes what followed it.
  std::vector<int32_t> prompt(static_cast<size_t>(model->model->config().vocab_size));
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>(i);
  constexpr int64_t kBlocks = 40;  // 16-slot blocks: 640 positions
  std::vector<BlockId> table(kBlocks);
  for (int64_t b = 0; b < kBlocks; ++b) table[static_cast<size_t>(b)] = static_cast<BlockId>(b);
  const auto make_step = [&] {
    auto request = std::make_shared<Request>();
    request->id = 7;
    request->tokens = prompt;
    request->num_prompt_tokens = static_cast<int64_t>(prompt.size());
    auto ctx = std::make_shared<SamplingContext>();
    ctx->id = 7;
    ctx->params.temperature = 0.0;
    ctx->request = request;
    ctx->output_budget = 16;
    LaunchedStep step;
    ScheduledSequence seq;
    seq.request_id = 7;
    seq.tokens = prompt;
    seq.samples = true;
    seq.block_table = table;
    step.plan.seqs.push_back(seq);
    step.contexts.push_back(ctx);
    return step;
  };
  const auto make_runner = [&](KvCache& kv) {
    auto runner = std::make_unique<StepRunner>(*model->model, kv);
    runner->SetDrafter(std::make_unique<NgramDrafter>(NgramDrafter::Options{.min_ngram = 1}), 4);
    return runner;
  };
  KvCache kv_direct(model->model->config(), kBlocks, 16), kv_executor(model->model->config(), kBlocks, 16);
  auto direct_runner = make_runner(kv_direct);
  LaunchedStep direct_step = make_step();
  const StepResult direct = direct_runner->Run(direct_step);
  ASSERT_EQ(direct.rows.size(), 1u);
  ASSERT_FALSE(direct.rows[0].proposal.tokens.empty()) << "the sampled token occurred before: ngram proposes";
  EXPECT_FALSE(direct.drafts_pending);

  auto runner = make_runner(kv_executor);
  StepExecutor executor(*runner);
  executor.Launch(make_step());
  StepResult sampled = executor.Wait();
  ASSERT_TRUE(sampled.drafts_pending);
  ASSERT_EQ(sampled.rows.size(), 1u);
  EXPECT_TRUE(sampled.rows[0].proposal.tokens.empty());
  EXPECT_EQ(sampled.rows[0].tokens, direct.rows[0].tokens);
  MergeDrafts(sampled, executor.WaitDrafts());
  EXPECT_FALSE(sampled.drafts_pending);
  EXPECT_EQ(sampled.rows[0].proposal.tokens, direct.rows[0].proposal.tokens);
  EXPECT_EQ(sampled.rows[0].proposal.confidence, direct.rows[0].proposal.confidence);
  EXPECT_EQ(sampled.proposed_tokens, direct.proposed_tokens);
  EXPECT_GT(sampled.draft_seconds, 0.0);
  EXPECT_GE(executor.busy_seconds(), sampled.forward_seconds + sampled.draft_seconds);
}

}  // namespace
}  // namespace deepinfer
