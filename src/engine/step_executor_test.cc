// StepExecutor's idle accounting (runner/step_runner.h), on stories260K for a
// real StepRunner. Lives with the engine tests: the runner tests load no model.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "checkpoint/checkpoint.h"
#include "runner/step_runner.h"

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

}  // namespace
}  // namespace deepinfer
