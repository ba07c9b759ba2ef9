// Scheduler: continuous batching over a paged KV cache.
//
// Two questions are answered separately each step:
//   capacity  — does a request's next chunk fit in KV memory? (KvManager;
//               when a running request cannot get a block, preempt by
//               recompute the lowest-priority / latest-arrived running one);
//   content   — what goes into this step? Running decodes first, then the
//               next chunk of partly prefilled requests, then admission of
//               waiting requests (FCFS, or by priority then arrival), all under
//               max_num_batched_tokens tokens and max_num_seqs running requests.
// A prompt whose prefix is cached schedules only the uncached tokens (at least
// the last one, so that logits exist).
//
// The engine loop (async, overlapped):
//
//   plan[0] = PlanStep(); PrepareLaunch(&plan[0]); launch(plan[0])
//   for N = 0, 1, ...:
//     plan[N+1] = PlanStep()          // while step N executes: placeholders for N's tokens
//     out = wait(step N);  OnStepSampled(out)   // commit N: fills tokens, finishes, rollbacks
//     PrepareLaunch(&plan[N+1])       // resolve placeholders, drop finished requests' slots
//     launch(plan[N+1])
//
// A runner that can take the previous step's sampled tokens on device may
// launch N+1 before committing N (Placeholders::kLeaveForRunner):
//     plan[N+1] = PlanStep(); PrepareLaunch(&plan[N+1], kLeaveForRunner); launch(plan[N+1])
//     out = wait(step N); OnStepSampled(out)
//
// Synchronous mode is the same calls without the overlap. Rules: commit steps
// in order; launch (PrepareLaunch) every planned step before planning the next;
// an empty plan (StepPlan::empty()) is not registered and needs no launch or
// commit. A request that finishes at step N may still have a slot in step N+1
// if N+1 was launched early: its row is ignored at commit (CommitResult lists
// it in `discarded`); its KV is freed at once, which is safe because steps run
// in order and only positions beyond its computed prefix are written late.
//
// Jump-forward: a committed row may carry forced tokens after its sampled
// ones (SequenceOutput::num_forced). They are appended as known tokens; rows
// of the request in steps planned but not launched yet stop sampling (they
// still compute their input's KV) and the next plan computes the forced
// tokens as a chunk that samples at its end. They are dropped (the request
// just continues) when a later row of the request was already launched.
//
// Speculative decoding hook: SetDraftTokens gives a request k proposals; the
// next decode verifies up to max_num_speculative_tokens of them (1 + k tokens
// of budget, logits for all rows) and OnStepSampled accepts 1..1+k tokens,
// rolling back the KV of the rejected ones.
//
// Speculation under async scheduling: a decode planned while the request's
// previous sampling row is in flight is a *pending-length* row. Its drafts
// come from that row's commit (SetDraftTokens) and, if that row verifies
// drafts, so does its position (p + a + 1 for a accepted of the k drafts
// verified from position p). PlanStep reserves budget and KV for the worst
// case, 1 + K tokens (K = the most drafts it may get: max_num_speculative_tokens
// capped by the request's room; 0 while SetDraftingPaused); the commit's
// rollback of rejected drafts just shifts the reserved, unwritten positions
// down. PrepareLaunch, once the previous row is committed, resolves the row:
// its position, its input token, the drafts it got (at most K), and gives the
// unused reservation back. It drops the row (freeing the reservation; the
// request continues at the next plan) when forced tokens were committed in
// between, and — kLeaveForRunner, the previous row still in flight — when
// that row verifies drafts (position unknown); otherwise kLeaveForRunner
// launches it as a plain decode. With per-layer (windowed) KV a request
// verifying drafts still sits out the next plan: a claim there must not be
// rolled back past its start (kv_manager.h).
//
// Thread-safety: none. All calls come from the engine's scheduler thread; the
// plan is a value the runner may use on other threads.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "kv/kv_manager.h"
#include "scheduler/request.h"
#include "scheduler/scheduler_config.h"
#include "scheduler/step_plan.h"

namespace deepinfer {

// Tokens a request received at a commit (for streaming) and whether it ended.
struct RequestUpdate {
  RequestId request_id = 0;
  std::vector<int32_t> new_tokens;
  FinishReason finish_reason = FinishReason::kNone;
};

struct CommitResult {
  std::vector<RequestUpdate> updates;
  std::vector<Request> finished;     // finished at this commit, moved out of the scheduler
  std::vector<RequestId> discarded;  // finished requests that still have a row in a later launched step
};

struct SchedulerStats {
  int64_t prompt_tokens = 0;      // prompt tokens of admitted requests (first admission)
  int64_t generation_tokens = 0;  // output tokens committed
  int64_t num_preemptions = 0;
  int64_t spec_draft_tokens = 0;     // drafts scheduled for verification
  int64_t spec_accepted_tokens = 0;  // of which accepted
};

class Scheduler {
 public:
  // InvalidArgument when either config is invalid.
  static StatusOr<std::unique_ptr<Scheduler>> Create(const SchedulerConfig& config,
                                                     const KvConfig& kv_config);
  // REQUIRES: both configs valid. `hash` lets tests force prefix-hash collisions.
  Scheduler(const SchedulerConfig& config, const KvConfig& kv_config,
            PrefixCache::HashFn hash = DefaultBlockHash);

  // Queues a request. InvalidArgument (nothing queued) for a duplicate id, an
  // empty prompt, max_tokens < 1, prompt + max_tokens > max_model_len, or a
  // request that could not fit in the whole KV pool.
  Status AddRequest(RequestParams params);

  // Ends a live request now and frees its KV: kAbort for a client disconnect,
  // kStop when the detokenizer found a stop string. NotFound if the id is not live.
  StatusOr<Request> Abort(RequestId id, FinishReason reason = FinishReason::kAbort);

  // Proposals to verify at the request's next decode (replaces earlier ones).
  // NotFound if the id is not live.
  Status SetDraftTokens(RequestId id, std::vector<int32_t> drafts);

  // The engine's drafter is paused (no proposals will come): decodes planned
  // ahead reserve no draft slots. Takes effect at the next PlanStep.
  void SetDraftingPaused(bool paused) { drafting_paused_ = paused; }

  // Plans the next step. Never fails: when nothing fits, preempts or returns
  // an empty plan. REQUIRES: every earlier plan was launched (PrepareLaunch).
  StepPlan PlanStep();

  // How PrepareLaunch treats placeholders.
  enum class Placeholders {
    kResolve,         // fill them in; the steps that sample them must be committed
    kLeaveForRunner,  // launch before the previous step is committed: the runner
                      // replaces each with the last token the previous launched
                      // step sampled for that request (on device)
  };

  // Readies a planned step for launch: drops sequences of requests that ended
  // since planning and (kResolve) fills placeholders with the tokens now
  // known — Internal error if one is not known yet. If nothing is left, the
  // plan becomes empty and needs no launch or commit.
  Status PrepareLaunch(StepPlan* plan, Placeholders placeholders = Placeholders::kResolve);

  // Commits a launched step: appends sampled tokens, applies stop conditions,
  // rolls back rejected drafts, caches newly completed KV blocks, finishes
  // requests. Internal error (nothing changed) for an out-of-order step or
  // an output that contradicts the plan.
  StatusOr<CommitResult> OnStepSampled(const StepOutput& output);

  const Request* FindRequest(RequestId id) const;
  // The live request itself, for the runner's thread (runner/sampling_context.h).
  // Contract: a request's `tokens` change only in OnStepSampled (appends),
  // which the engine never calls while a step runs, and never in place once
  // the request finished (FinishRequest copies it out); so a step may read
  // them while it runs. Null for an unknown id.
  std::shared_ptr<const Request> ShareRequest(RequestId id) const;
  int32_t NumRunning() const { return static_cast<int32_t>(running_.size()); }
  int32_t NumWaiting() const { return static_cast<int32_t>(waiting_.size()); }
  bool HasUnfinishedRequests() const { return !requests_.empty(); }
  int32_t NumStepsInFlight() const { return static_cast<int32_t>(in_flight_.size()); }
  const KvManager& kv() const { return kv_; }
  const SchedulerStats& stats() const { return stats_; }
  const SchedulerConfig& config() const { return config_; }

  // DI_CHECK-fails on inconsistent bookkeeping (request states vs queues, KV
  // claims vs computed tokens, placeholders vs in-flight steps), then runs
  // KvManager::CheckInvariants. For tests.
  void CheckInvariants() const;

 private:
  // Order of service: (priority or 0, arrival); smaller first.
  using QueueKey = std::tuple<int64_t, uint64_t, RequestId>;

  struct Pick {  // a request chosen for this step, before the plan is built
    RequestId id = 0;
    int64_t num_tokens = 0;
    int32_t num_drafts = 0;
    bool pending = false;  // a pending-length decode (see the header comment)
  };
  struct InFlightSeq {
    RequestId id = 0;
    int64_t start_pos = 0;
    int64_t num_tokens = 0;
    int32_t num_drafts = 0;
    bool samples = false;
    int32_t epoch = 0;  // the request's num_preemptions when planned
    // Pending-length decode, not launched yet: num_tokens = 1 + num_drafts is
    // the reservation at the end of the request's claim; start_pos is a guess.
    bool pending = false;
  };
  struct InFlightStep {
    uint64_t step_id = 0;
    bool launched = false;
    std::vector<InFlightSeq> seqs;
  };
  struct PlanState {  // scratch of one PlanStep call
    int64_t budget = 0;
    std::vector<Pick> picks;
    std::vector<RequestId> preempted;
  };

  QueueKey KeyOf(const Request& r) const;
  Request& Get(RequestId id);

  // scheduler.cc — planning
  void ScheduleRunning(bool decodes, PlanState* state);
  void ScheduleDecode(Request& r, PlanState* state);
  void SchedulePrefillChunk(Request& r, PlanState* state);
  void AdmitWaiting(PlanState* state);
  bool WaitingForFinalCommit(const Request& r) const;
  Request* LowestPriorityRunning();
  void Preempt(Request& victim, PlanState* state);
  StepPlan BuildPlan(PlanState* state);

  // scheduler_commit.cc — commit and finishing
  FinishReason AppendToken(Request& r, int32_t token);
  Request FinishRequest(Request& r, FinishReason reason);
  bool HasRowInLaunchedStep(RequestId id) const;
  bool HasEarlierRow(RequestId id, const InFlightStep& step) const;
  // Resolves (true) or drops (false, the reservation freed) a pending-length row at launch.
  bool ResolvePendingRow(const InFlightStep& step, Request& r, InFlightSeq* rec, ScheduledSequence* s);
  bool CanExtendWithForcedTokens(RequestId id) const;
  void VoidLaterSamplingRows(Request& r);

  SchedulerConfig config_;
  KvManager kv_;
  // Live (not finished). Shared: the runner reads a request's tokens (ShareRequest).
  std::unordered_map<RequestId, std::shared_ptr<Request>> requests_;
  std::vector<RequestId> running_;
  std::set<QueueKey> waiting_;  // kWaiting and kPreempted, in service order
  std::deque<InFlightStep> in_flight_;
  uint64_t next_arrival_seq_ = 0;
  uint64_t next_step_id_ = 0;
  bool drafting_paused_ = false;
  SchedulerStats stats_;
};

}  // namespace deepinfer
