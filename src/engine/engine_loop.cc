// The engine's step loop (see scheduler.h for the async protocol):
//
//   async:  plan N+1 while N runs | commit N | launch N+1
//   sync:   plan N | launch N | wait | commit N
//
// Each verb takes mu_ for its own scheduler calls only; the step itself runs
// on the executor thread with no lock held.
#include <algorithm>
#include <chrono>
#include <memory>
#include <unordered_map>

#include "core/log.h"
#include "engine/engine_impl.h"

namespace deepinfer {

void EngineImpl::Loop() {
  for (;;) {
    // Nothing in flight: plan from scratch, waiting for work first.
    std::optional<LaunchedStep> step;
    if (!PlanWhenIdle(&step)) return;
    // Steps follow one another until a commit leaves nothing to launch; then
    // the next round re-plans at once (or waits, if no request is left).
    while (step) {
      const auto launched_at = std::chrono::steady_clock::now();
      executor_.Launch(std::move(*step));
      std::optional<StepPlan> next = PlanAhead();
      StepResult result = executor_.Wait();
      step = Commit(result, std::move(next), launched_at);
    }
  }
}

bool EngineImpl::PlanWhenIdle(std::optional<LaunchedStep>* step) {
  MutexLock lock(mu_);
  if (!scheduler_->HasUnfinishedRequests()) executor_.NoteIdleWait();
  if (!WaitForWork(lock)) return false;
  const bool running = scheduler_->NumRunning() > 0;
  *step = PrepareLocked(scheduler_->PlanStep());
  if (*step && running && config_.async_scheduling) ++steps_planned_without_overlap_;
  if (!*step) {
    // Nothing runnable while nothing is in flight: sleep until Submit, Abort
    // or Shutdown changes something (at most 5 ms).
    executor_.NoteIdleWait();
    WaitForChangeLocked(lock, std::chrono::milliseconds(5));
  }
  return true;
}

std::optional<StepPlan> EngineImpl::PlanAhead() {
  if (!config_.async_scheduling) return std::nullopt;
  MutexLock lock(mu_);
  // Requests whose row in the running step samples get pending-length rows:
  // the drafts that step proposes (and, after a verification, the position)
  // are filled in at launch, after the commit (scheduler.h).
  StepPlan plan = scheduler_->PlanStep();
  if (!plan.empty()) ++steps_planned_ahead_;
  return plan;
}

std::optional<LaunchedStep> EngineImpl::Commit(StepResult& result, std::optional<StepPlan> next,
                                               std::chrono::steady_clock::time_point launched_at) {
  {
    MutexLock lock(mu_);
    CommitLocked(result);
  }
  // The drafter proposes while the rows above are committed (and streamed):
  // at batch 1 that hides the commit behind the drafting (docs/engine.md).
  if (result.drafts_pending) MergeDrafts(result, executor_.WaitDrafts());
  MutexLock lock(mu_);
  if (!config_.speculative.method.empty() && !broken_) {
    ScheduleDraftsLocked(result);
    ObserveStepCostLocked(
        result, std::chrono::duration<double>(std::chrono::steady_clock::now() - launched_at).count());
  }
  if (!next) return std::nullopt;
  return PrepareLocked(std::move(*next));
}

bool EngineImpl::WaitForWork(MutexLock& lock) {
  while (!scheduler_->HasUnfinishedRequests() && !exit_when_idle_) work_cv_.wait(lock.native());
  return scheduler_->HasUnfinishedRequests();
}

void EngineImpl::WaitForChangeLocked(MutexLock& lock, std::chrono::milliseconds timeout) {
  const uint64_t epoch = work_epoch_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (work_epoch_ == epoch) {
    if (work_cv_.wait_until(lock.native(), deadline) == std::cv_status::timeout) return;
  }
}

std::optional<LaunchedStep> EngineImpl::PrepareLocked(StepPlan plan) {
  Status prepared = scheduler_->PrepareLaunch(&plan);
  if (!prepared.ok()) {
    // A protocol bug: the scheduler cannot go on consistently.
    DI_LOG_ERROR("engine: %s", prepared.ToString().c_str());
    broken_ = true;
    AbortAllLocked("internal error: " + prepared.message());
    return std::nullopt;
  }
  if (plan.empty()) return std::nullopt;
  LaunchedStep step;
  step.contexts.reserve(plan.seqs.size());
  const auto now = std::chrono::steady_clock::now();
  for (const ScheduledSequence& seq : plan.seqs) {
    auto it = contexts_.find(seq.request_id);
    if (it != contexts_.end() && it->second->first_scheduled == std::chrono::steady_clock::time_point{}) {
      it->second->first_scheduled = now;
    }
    step.contexts.push_back(seq.samples && it != contexts_.end() ? it->second : nullptr);
  }
  step.draft = !drafting_paused_;
  if (config_.speculative.adaptive && draft_stop_below_confidence_ > 0) {
    step.draft_stop_below_confidence = draft_stop_below_confidence_;
    step.draft_calibration = std::make_shared<const AcceptanceCalibrator>(calibrator_);
  }
  step.plan = std::move(plan);
  step.released = std::move(released_);
  released_.clear();
  return step;
}

void EngineImpl::CollectPromptLogprobsLocked(StepResult& result) {
  for (PromptLogprobChunk& chunk : result.prompt_logprobs) {
    auto ctx = contexts_.find(chunk.request_id);
    if (ctx == contexts_.end() || ctx->second->prompt_logprobs_sent) continue;
    // A request's chunks arrive in position order; after a preemption its
    // recompute repeats positions already collected (with equal values).
    std::vector<RankedTokenLogprob>& have = ctx->second->prompt_logprob_entries;
    const auto skip = static_cast<int64_t>(have.size()) - (chunk.first_pos - 1);
    if (skip < 0 || skip >= static_cast<int64_t>(chunk.entries.size())) continue;
    have.insert(have.end(), std::make_move_iterator(chunk.entries.begin() + skip),
                std::make_move_iterator(chunk.entries.end()));
  }
}

void EngineImpl::CommitLocked(StepResult& result) {
  ++steps_total_;
  // No step runs during a commit, so the model's counters are stable here.
  expert_load_ = loaded_.model->ExpertLoad();
  // Requests that cannot continue end before the commit, which then ignores their rows.
  if (!result.status.ok()) {
    DI_LOG_ERROR("engine: step %llu failed: %s", static_cast<unsigned long long>(result.output.step_id),
                 result.status.ToString().c_str());
    // No row was sampled: every request with a row in this step fails.
    for (RequestId id : result.failed_requests) {
      AbortLocked(id, FinishReason::kAbort, result.status.message());
    }
  }
  std::unordered_map<RequestId, const SampledRow*> rows;
  for (const SampledRow& row : result.rows) {
    if (!row.error.empty()) AbortLocked(row.request_id, FinishReason::kAbort, row.error);
    rows[row.request_id] = &row;
  }
  CollectPromptLogprobsLocked(result);
  StatusOr<CommitResult> commit = scheduler_->OnStepSampled(result.output);
  if (!commit.ok()) {
    DI_LOG_ERROR("engine: %s", commit.status().ToString().c_str());
    broken_ = true;
    AbortAllLocked("internal error: " + commit.status().message());
    return;
  }
  std::unordered_map<RequestId, const Request*> finished;
  for (const Request& r : commit->finished) finished[r.id] = &r;
  if (!config_.speculative.method.empty()) ObserveVerificationsLocked(result);

  for (RequestUpdate& u : commit->updates) {
    const Request* r = scheduler_->FindRequest(u.request_id);
    if (r == nullptr) {
      auto f = finished.find(u.request_id);
      if (f != finished.end()) r = f->second;
    }
    auto ctx = contexts_.find(u.request_id);
    OutputItem item;
    item.id = u.request_id;
    item.finish_reason = u.finish_reason;
    if (ctx != contexts_.end()) item.first_scheduled = ctx->second->first_scheduled;
    if (r != nullptr) {
      item.cached_prompt_tokens = r->num_cached_prompt_tokens;
      if (ctx != contexts_.end() && !ctx->second->cached_tokens_counted) {
        ctx->second->cached_tokens_counted = true;
        cached_prompt_tokens_total_ += r->num_cached_prompt_tokens;
      }
    }
    auto row = rows.find(u.request_id);
    if (row != rows.end()) {
      // One per sampled token the commit kept (forced tokens have none).
      const std::vector<TokenLogprob>& lps = row->second->logprobs;
      item.logprobs.assign(
          lps.begin(), lps.begin() + static_cast<std::ptrdiff_t>(std::min(lps.size(), u.new_tokens.size())));
    }
    if (ctx != contexts_.end() && ctx->second->prompt_logprobs >= 0 && !ctx->second->prompt_logprobs_sent &&
        !u.new_tokens.empty()) {
      ctx->second->prompt_logprobs_sent = true;
      item.prompt_logprobs = std::move(ctx->second->prompt_logprob_entries);
    }
    item.tokens = std::move(u.new_tokens);
    if (u.finish_reason != FinishReason::kNone) {
      EraseContextLocked(u.request_id);
      ++requests_finished_total_;
    }
    output_.Post(std::move(item));
  }
}

}  // namespace deepinfer
