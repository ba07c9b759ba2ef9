// StepRunner: executes one launched step on the model — block copies, the
// forward pass, then sampling of every sampling row — and StepExecutor, the
// runner thread that takes one step at a time from the engine loop.
//
// Per sampling row the RowSampler (row_sampler.h) chooses the token;
// constraint masks are filled on the runner's TaskWorker (one persistent
// thread, task_worker.h) while the forward pass runs (their previous tokens
// are known at launch).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/mutex.h"
#include "core/status.h"
#include "core/thread_annotations.h"
#include "model/model.h"
#include "runner/row_sampler.h"
#include "runner/sampling_context.h"
#include "runner/task_worker.h"
#include "scheduler/step_plan.h"
#include "spec/acceptance_calibrator.h"
#include "spec/drafter.h"

namespace deepinfer {

struct LaunchedStep {
  StepPlan plan;
  // Per plan.seqs entry: the request's context for a sampling row, else null.
  std::vector<std::shared_ptr<SamplingContext>> contexts;
  // Requests that ended since the previous launch (the drafter drops their state).
  std::vector<RequestId> released;
  // false: the schedule paused speculation; the drafter gets no hidden rows
  // and proposes nothing (it only drops the released requests).
  bool draft = true;
  // The drafter's stop rule for this step's proposals
  // (DraftInput::stop_below_confidence and calibration; a snapshot, as the
  // engine's calibrator keeps learning while the step runs).
  float draft_stop_below_confidence = 0.0f;
  std::shared_ptr<const AcceptanceCalibrator> draft_calibration;
};

// Prompt logprobs of one chunk: entries[j] is the prompt token at position
// first_pos + j given the tokens before it.
struct PromptLogprobChunk {
  RequestId request_id = 0;
  int64_t first_pos = 0;
  std::vector<RankedTokenLogprob> entries;
};

struct StepResult {
  StepOutput output;  // for Scheduler::OnStepSampled
  std::vector<SampledRow> rows;
  // Chunks with ScheduledSequence::prompt_targets.
  std::vector<PromptLogprobChunk> prompt_logprobs;

  Status status;                           // a failed forward pass: no tokens were sampled
  std::vector<RequestId> failed_requests;  // with status: the requests of the step
  int64_t num_tokens = 0;                  // tokens the forward pass computed
  double forward_seconds = 0.0;            // its wall time (the speculation cost model's sample)
  double draft_seconds = 0.0;              // the drafter's wall time after sampling
  double draft_fixed_seconds = 0.0;        // of which independent of the drafts proposed
  int64_t proposed_tokens = 0;             // drafts it proposed
  // StepRunner::Sample only: the drafter's inputs are ready and its
  // proposals come from ProposeDrafts (rows' `proposal` empty until merged).
  bool drafts_pending = false;
};

// The drafter's part of a step, proposed after its rows were sampled.
struct StepDrafts {
  std::vector<std::pair<size_t, DraftProposal>> proposals;  // (index into StepResult::rows, its drafts)
  double draft_seconds = 0.0;
  double draft_fixed_seconds = 0.0;
  int64_t proposed_tokens = 0;
};

// Moves the proposals into their rows and the drafter's figures into result;
// clears drafts_pending.
void MergeDrafts(StepResult& result, StepDrafts&& drafts);

class StepRunner {
 public:
  // Both must outlive the runner. jump_forward: see RowSampler.
  StepRunner(Model& model, KvCache& kv, bool jump_forward = true);
  // Block copies, the forward pass, then one SampledRow per sampling row
  // with a context (in plan order), and the drafter's proposals in those
  // rows. REQUIRES: step.contexts has one entry per plan.seqs entry;
  // placeholders resolved.
  StepResult Run(LaunchedStep& step);
  // Run in two parts, so that a caller can commit the sampled rows while the
  // drafter proposes (StepExecutor): Sample does all but the proposing and,
  // where the step drafts, copies everything the drafter reads out of the
  // step's contexts (drafts_pending); ProposeDrafts then proposes from that
  // copy alone, so the engine may update its requests meanwhile.
  // REQUIRES for ProposeDrafts: the last Sample left drafts_pending; once.
  StepResult Sample(LaunchedStep& step);
  StepDrafts ProposeDrafts();
  // Speculative decoding: after sampling a step, the drafter sees every
  // sequence of it and proposes up to max_draft_tokens continuations for each
  // sampling row (SampledRow::proposal). Not while steps run.
  void SetDrafter(std::unique_ptr<Drafter> drafter, int32_t max_draft_tokens);

 private:
  void CopyBlocks(const std::vector<BlockCopy>& copies);
  // Prepares the drafter's inputs of the step (pending_); row_of_seq[i]: the
  // index in result.rows of plan.seqs[i]'s row, or -1.
  void PrepareDrafts(const LaunchedStep& step, const std::vector<int64_t>& row_of_seq,
                     const StepResult& result);

  Model& model_;
  KvCache& kv_;
  const int64_t vocab_;
  RowSampler sampler_;
  std::vector<float> logits_;         // f32 [rows, vocab]
  TaskWorker mask_worker_;            // fills constraint masks during the forward pass
  std::unique_ptr<Drafter> drafter_;  // null: no speculation
  int32_t max_draft_tokens_ = 0;
  std::vector<float> hidden_;          // f32 [tokens, hidden]: the drafter's view of the forward pass
  std::vector<int32_t> draft_tokens_;  // DraftInput::tokens and ::sequence of one step, back to back
  // The drafter's inputs between Sample and ProposeDrafts: per input, the
  // result.rows index (-1: none) and the context rejection drafts go to; the
  // calibration snapshot they point at.
  struct PendingDrafts {
    std::vector<DraftInput> inputs;
    std::vector<int64_t> input_row;
    std::vector<std::shared_ptr<SamplingContext>> contexts;
    std::shared_ptr<const AcceptanceCalibrator> calibration;
  };
  std::optional<PendingDrafts> pending_;
};

// A thread running one step at a time: Launch hands a step over, Wait takes
// its sampled result and, where that says drafts_pending, WaitDrafts the
// drafter's proposals, which the thread makes after Wait could return (the
// engine commits the step meanwhile). Calls alternate Launch, Wait
// [, WaitDrafts], Launch, ... from one thread.
//
// Idle accounting: busy time is the time spent in steps; idle time is the gap
// between the end of one step and the start of the next, counted only when
// the engine had work all along. The loop says when it is about to wait for
// lack of work (NoteIdleWait); the gap before the next launch then is not
// idle time of the executor but of the clients.
class StepExecutor {
 public:
  explicit StepExecutor(StepRunner& runner);
  ~StepExecutor();  // joins the thread
  void Launch(LaunchedStep step) EXCLUDES(mu_);
  StepResult Wait() EXCLUDES(mu_);
  // REQUIRES: the result Wait returned has drafts_pending.
  StepDrafts WaitDrafts() EXCLUDES(mu_);
  // The caller waits for lack of work before its next Launch.
  void NoteIdleWait() EXCLUDES(mu_);

  // Totals over every finished step (a step with drafts finishes when they
  // are published); from any thread.
  double busy_seconds() const EXCLUDES(mu_);
  double idle_seconds() const EXCLUDES(mu_);

 private:
  void Loop() EXCLUDES(mu_);
  // Publishes the step's last part (its result, or its drafts) with the
  // step's busy and idle time. `start`: when the step began.
  void Finish(std::chrono::steady_clock::time_point start, bool follows_step,
              std::optional<StepResult> result, std::optional<StepDrafts> drafts) EXCLUDES(mu_);

  StepRunner& runner_;
  mutable Mutex mu_;
  std::condition_variable cv_;
  std::optional<LaunchedStep> pending_ GUARDED_BY(mu_);
  bool pending_follows_step_ GUARDED_BY(mu_) = false;  // no idle wait between the previous step and pending_
  bool idle_wait_since_launch_ GUARDED_BY(mu_) = true;
  std::optional<StepResult> done_ GUARDED_BY(mu_);
  std::optional<StepDrafts> drafts_ GUARDED_BY(mu_);
  bool quit_ GUARDED_BY(mu_) = false;
  double busy_seconds_ GUARDED_BY(mu_) = 0.0;
  double idle_seconds_ GUARDED_BY(mu_) = 0.0;
  std::chrono::steady_clock::time_point last_end_{};  // executor thread only
  std::thread thread_;
};

}  // namespace deepinfer
