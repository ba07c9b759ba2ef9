// EngineImpl: the Engine behind engine.h.
//
// Threads:
//   loop thread    — owns the step protocol: plan, launch, commit (Loop());
//   executor       — runs each launched step (StepExecutor, runner/step_runner.h);
//   output thread  — detokenizes and calls the callbacks (OutputProcessor).
// The Scheduler and the per-request contexts are guarded by mu_; Submit and
// Abort take it briefly from the caller's thread, so their effects on the
// scheduler are ordered with the loop's plans and commits. The loop never
// holds mu_ while a step runs.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <thread>
#include <unordered_map>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "core/mutex.h"
#include "core/thread_annotations.h"
#include "engine/engine.h"
#include "engine/output_processor.h"
#include "runner/sampling_context.h"
#include "runner/step_runner.h"
#include "scheduler/scheduler.h"
#include "spec/acceptance_calibrator.h"
#include "spec/draft_length_policy.h"
#include "spec/speedup_tracker.h"
#include "spec/step_cost_model.h"

namespace deepinfer {

class EngineImpl final : public Engine {
 public:
  // drafter: null unless speculative.method names one.
  EngineImpl(LoadedModel model, const EngineConfig& config, int32_t num_blocks,
             std::unique_ptr<Drafter> drafter);
  ~EngineImpl() override;

  StatusOr<RequestId> Submit(GenerationRequest request, EventCallback on_event) override EXCLUDES(mu_);
  void Abort(RequestId id) override EXCLUDES(mu_);
  EngineMetrics Metrics() const override EXCLUDES(mu_);
  void Shutdown(bool drain) override EXCLUDES(mu_, shutdown_mu_);

  const ModelConfig& model_config() const override { return loaded_.model->config(); }
  const Tokenizer& tokenizer() const override;
  const EngineConfig& config() const override { return config_; }

 private:
  Status ValidateRequest(const GenerationRequest& request) const;
  // The loop thread: plan -> launch -> (plan ahead) -> wait -> commit, see engine_loop.cc.
  void Loop() EXCLUDES(mu_);
  // With nothing in flight: waits for work, then plans and prepares a step
  // into *step (left empty when nothing is runnable, after a short wait for a
  // change). False when the loop should exit (Shutdown, no request left).
  bool PlanWhenIdle(std::optional<LaunchedStep>* step) EXCLUDES(mu_);
  // Async scheduling: the plan of the next step, made while the current one
  // runs (its placeholders resolve at commit). Sync: none.
  std::optional<StepPlan> PlanAhead() EXCLUDES(mu_);
  // Commits a finished step, then prepares the plan made ahead (if any). The
  // step to launch next, or none: the loop then re-plans from idle. The
  // sampled rows are committed first; a step whose drafter still proposes
  // (drafts_pending) is then waited for, and its proposals committed.
  // `launched_at`: when the step was handed to the executor (its cycle, up to
  // the end of its commit, is what the speculation cost models learn).
  std::optional<LaunchedStep> Commit(StepResult& result, std::optional<StepPlan> next,
                                     std::chrono::steady_clock::time_point launched_at) EXCLUDES(mu_);
  // Waits until there is work; false when the loop should exit.
  bool WaitForWork(MutexLock& lock) REQUIRES(mu_);
  // Waits until Submit/Abort/Shutdown bumps work_epoch_, at most `timeout`.
  void WaitForChangeLocked(MutexLock& lock, std::chrono::milliseconds timeout) REQUIRES(mu_);
  // PrepareLaunch + contexts. An empty result needs no launch.
  std::optional<LaunchedStep> PrepareLocked(StepPlan plan) REQUIRES(mu_);
  // Prompt-logprob chunks of the step -> their requests' contexts.
  void CollectPromptLogprobsLocked(StepResult& result) REQUIRES(mu_);
  // The sampled rows (speculation's proposals: ScheduleDraftsLocked).
  void CommitLocked(StepResult& result) REQUIRES(mu_);
  // Ends a live request and posts its final event; false if it was not live.
  bool AbortLocked(RequestId id, FinishReason reason, const std::string& error = "") REQUIRES(mu_);
  void AbortAllLocked(const std::string& error) REQUIRES(mu_);

  LoadedModel loaded_;
  EngineConfig config_;
  std::vector<int32_t> end_of_generation_ids_;
  std::unique_ptr<KvCache> kv_;
  StepRunner runner_;

  mutable Mutex mu_;
  std::condition_variable work_cv_;
  // The pointer is set once in the constructor; the scheduler itself is guarded.
  std::unique_ptr<Scheduler> scheduler_ PT_GUARDED_BY(mu_);
  std::unordered_map<RequestId, std::shared_ptr<SamplingContext>> contexts_ GUARDED_BY(mu_);  // live requests
  // Requests ended since the last launch: the next step tells the drafter.
  std::vector<RequestId> released_ GUARDED_BY(mu_);
  void EraseContextLocked(RequestId id) REQUIRES(mu_);
  RequestId next_id_ GUARDED_BY(mu_) = 1;
  bool accepting_ GUARDED_BY(mu_) = true;
  bool exit_when_idle_ GUARDED_BY(mu_) = false;
  bool broken_ GUARDED_BY(mu_) = false;      // a commit failed: the scheduler state is unusable
  uint64_t work_epoch_ GUARDED_BY(mu_) = 0;  // bumped by Submit/Abort/Shutdown: wakes an idle loop
  int64_t steps_total_ GUARDED_BY(mu_) = 0;
  // Async scheduling: steps planned while the previous one ran, and steps
  // planned with nothing in flight although a request was running (the
  // overlap was lost; EngineMetrics).
  int64_t steps_planned_ahead_ GUARDED_BY(mu_) = 0;
  int64_t steps_planned_without_overlap_ GUARDED_BY(mu_) = 0;
  int64_t requests_finished_total_ GUARDED_BY(mu_) = 0;
  int64_t cached_prompt_tokens_total_ GUARDED_BY(mu_) = 0;
  // Model::ExpertLoad() after the last commit.
  std::vector<std::vector<int64_t>> expert_load_ GUARDED_BY(mu_);

  // Speculative decoding (engine_speculation.cc).
  // Verification results into calibration and metrics (with the sampled
  // rows, before their tokens are posted).
  void ObserveVerificationsLocked(const StepResult& result) REQUIRES(mu_);
  // Proposals through the draft-length policy into the scheduler (once the
  // drafter has proposed: after ObserveVerificationsLocked of the same step).
  void ScheduleDraftsLocked(const StepResult& result) REQUIRES(mu_);
  // The step's cost, for the draft-length policy: `cycle_seconds` from its
  // launch to the end of its commit (runner and engine work alike).
  void ObserveStepCostLocked(const StepResult& result, double cycle_seconds) REQUIRES(mu_);
  void UpdateDraftingPauseLocked(const DraftSchedule& schedule, const StepLoad& load) REQUIRES(mu_);
  AcceptanceCalibrator calibrator_ GUARDED_BY(mu_);
  StepCostModel step_cost_ GUARDED_BY(mu_);
  DrafterCost drafter_cost_ GUARDED_BY(mu_);  // from the runner's timing
  // Adaptive schedule: the last step's exchange rate, the drafter's stop rule
  // for the next proposals (it does not chain drafts that will not be verified).
  float draft_stop_below_confidence_ GUARDED_BY(mu_) = 0.0f;
  // Adaptive schedule: the drafter is paused (no hidden rows, no catch-up, no
  // proposals) while speculation is predicted not to pay; see
  // UpdateDraftingPauseLocked.
  bool drafting_paused_ GUARDED_BY(mu_) = false;
  // The chosen schedules' predicted speedup and drafter share over the
  // recent steps that proposed (a step's weight halves in ~14 steps).
  SpeedupTracker predicted_speedup_ GUARDED_BY(mu_){/*decay=*/0.95};
  // Per depth, the smoothed calibrated confidence of the proposals (< 0: none
  // seen yet): while paused, the proposals speculation would see.
  std::vector<double> typical_confidence_ GUARDED_BY(mu_);
  int64_t steps_since_pause_change_ GUARDED_BY(mu_) = 0;
  // Paused steps before the next probe (kMinProbeSteps, doubled by each
  // probe that ends in a pause up to kMaxProbeSteps), and whether the drafter
  // runs as one.
  static constexpr int64_t kMinProbeSteps = 256, kMaxProbeSteps = 4096;
  int64_t probe_interval_ GUARDED_BY(mu_) = kMinProbeSteps;
  bool probing_ GUARDED_BY(mu_) = false;
  int64_t spec_paused_steps_ GUARDED_BY(mu_) = 0;
  // Raw confidences of the drafts last handed to the scheduler, per request.
  std::unordered_map<RequestId, std::vector<float>> draft_confidence_ GUARDED_BY(mu_);
  int64_t spec_verifications_ GUARDED_BY(mu_) = 0;
  std::vector<int64_t> spec_accepted_per_position_ GUARDED_BY(mu_);
  std::vector<int64_t> spec_draft_length_counts_ GUARDED_BY(mu_);

  Mutex shutdown_mu_;  // one Shutdown at a time
  // Declared last: started after everything above exists, stopped first.
  OutputProcessor output_;
  StepExecutor executor_;
  std::thread loop_thread_;
};

}  // namespace deepinfer
