// The engine's step loop (see scheduler.h for the async protocol):
//
//   async:  plan N+1 while N runs | commit N | launch N+1
//   sync:   plan N | launch N | wait | commit N
//
// Only the scheduler calls happen under mu_; the step itself runs on the
// executor thread with no lock held.
#include <algorithm>
#include <unordered_map>

#include "core/log.h"
#include "engine/engine_impl.h"

namespace deepinfer {

void EngineImpl::Loop() {
  bool in_flight = false;     // a step runs on the executor
  bool follows_step = false;  // no idle wait since the last launch
  for (;;) {
    std::optional<StepPlan> next;
    std::optional<LaunchedStep> launch;
    if (!in_flight || config_.async_scheduling) {
      MutexLock lock(mu_);
      if (!in_flight) {
        if (!scheduler_->HasUnfinishedRequests()) follows_step = false;  // the executor idles for lack of work
        if (!WaitForWork(lock)) break;
      }
      next = scheduler_->PlanStep();
      if (!in_flight) {
        launch = PrepareLocked(std::move(*next));
        next.reset();
        if (!launch) {
          // Nothing runnable (the scheduler is waiting on nothing in flight):
          // sleep until Submit/Abort/Shutdown changes something.
          const uint64_t epoch = work_epoch_;
          const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
          while (work_epoch_ == epoch) {
            if (work_cv_.wait_until(lock.native(), deadline) == std::cv_status::timeout) break;
          }
          follows_step = false;
          continue;
        }
      }
    }
    if (in_flight) {
      StepResult result = executor_.Wait();
      MutexLock lock(mu_);
      CommitLocked(result);
      in_flight = false;
      if (next) launch = PrepareLocked(std::move(*next));
    }
    if (launch) {
      launch->follows_previous_step = follows_step;
      executor_.Launch(std::move(*launch));
      in_flight = true;
      follows_step = true;
    }
  }
}

bool EngineImpl::WaitForWork(MutexLock& lock) {
  while (!scheduler_->HasUnfinishedRequests() && !exit_when_idle_) work_cv_.wait(lock.native());
  return scheduler_->HasUnfinishedRequests();
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
  for (const ScheduledSequence& seq : plan.seqs) {
    auto it = contexts_.find(seq.request_id);
    step.contexts.push_back(seq.samples && it != contexts_.end() ? it->second : nullptr);
  }
  step.plan = std::move(plan);
  return step;
}

void EngineImpl::CommitLocked(StepResult& result) {
  ++steps_total_;
  idle_seconds_ += result.idle_seconds;
  busy_seconds_ += result.busy_seconds;
  // No step runs during a commit, so the model's counters are stable here.
  expert_load_ = loaded_.model->ExpertLoad();
  // Requests that cannot continue end before the commit, which then ignores their rows.
  if (!result.status.ok()) {
    DI_LOG_ERROR("engine: step %llu failed: %s", static_cast<unsigned long long>(result.output.step_id),
                 result.status.ToString().c_str());
    // No row was sampled: every request with a row in this step fails.
    for (RequestId id : result.failed_requests) AbortLocked(id, FinishReason::kAbort, result.status.message());
  }
  std::unordered_map<RequestId, const SampledRow*> rows;
  for (const SampledRow& row : result.rows) {
    if (!row.error.empty()) AbortLocked(row.request_id, FinishReason::kAbort, row.error);
    rows[row.request_id] = &row;
  }
  StatusOr<CommitResult> commit = scheduler_->OnStepSampled(result.output);
  if (!commit.ok()) {
    DI_LOG_ERROR("engine: %s", commit.status().ToString().c_str());
    broken_ = true;
    AbortAllLocked("internal error: " + commit.status().message());
    return;
  }
  std::unordered_map<RequestId, const Request*> finished;
  for (const Request& r : commit->finished) finished[r.id] = &r;

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
    if (r != nullptr) {
      item.cached_prompt_tokens = r->num_cached_prompt_tokens;
      if (ctx != contexts_.end() && !ctx->second->cached_tokens_counted) {
        ctx->second->cached_tokens_counted = true;
        cached_prompt_tokens_total_ += r->num_cached_prompt_tokens;
      }
    }
    auto row = rows.find(u.request_id);
    if (row != rows.end() && row->second->logprob.has_value() && !u.new_tokens.empty()) {
      item.logprobs.push_back(*row->second->logprob);
    }
    item.tokens = std::move(u.new_tokens);
    if (u.finish_reason != FinishReason::kNone) {
      contexts_.erase(u.request_id);
      ++requests_finished_total_;
    }
    output_.Post(std::move(item));
  }
}

}  // namespace deepinfer
