// Scheduler: requests in, plans out. See scheduler.h for the policy; the
// commit half lives in scheduler_commit.cc.
#include "scheduler/scheduler.h"

#include <algorithm>
#include <string>

#include "core/check.h"

namespace deepinfer {

StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(const SchedulerConfig& config,
                                                       const KvConfig& kv_config) {
  DI_RETURN_IF_ERROR(config.Validate());
  DI_RETURN_IF_ERROR(kv_config.Validate());
  return std::make_unique<Scheduler>(config, kv_config);
}

Scheduler::Scheduler(const SchedulerConfig& config, const KvConfig& kv_config, PrefixCache::HashFn hash)
    : config_(config), kv_(kv_config, std::move(hash)) {
  DI_CHECK(config.Validate().ok());
}

Scheduler::QueueKey Scheduler::KeyOf(const Request& r) const {
  const int64_t rank = config_.policy == SchedulingPolicy::kPriority ? r.priority : 0;
  return {rank, r.arrival_seq, r.id};
}

Request& Scheduler::Get(RequestId id) {
  auto it = requests_.find(id);
  DI_CHECK_MSG(it != requests_.end(), "unknown request");
  return *it->second;
}

const Request* Scheduler::FindRequest(RequestId id) const {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : it->second.get();
}

std::shared_ptr<const Request> Scheduler::ShareRequest(RequestId id) const {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : it->second;
}

Status Scheduler::AddRequest(RequestParams params) {
  const std::string name = "request " + std::to_string(params.id);
  if (requests_.count(params.id)) {
    return InvalidArgument(name + ": id is already in use");
  }
  if (params.prompt_tokens.empty()) {
    return InvalidArgument(name + ": empty prompt");
  }
  if (params.max_tokens < 1) {
    return InvalidArgument(name + ": max_tokens must be >= 1");
  }
  const int64_t total = static_cast<int64_t>(params.prompt_tokens.size()) + params.max_tokens;
  if (total > config_.max_model_len) {
    return InvalidArgument(name + ": prompt (" + std::to_string(params.prompt_tokens.size()) +
                           " tokens) + max_tokens (" + std::to_string(params.max_tokens) +
                           ") exceeds max_model_len (" + std::to_string(config_.max_model_len) + ")");
  }
  // The whole sequence plus one copy-on-write block must fit in the pool, or
  // preemption could never make room for it.
  // (Per-layer KV: pages, with windowed layers at their bound for one-token steps.)
  const int64_t blocks = kv_.MaxUnitsForSequence(total, 1);
  if (blocks > kv_.num_blocks()) {
    return InvalidArgument(name + ": needs " + std::to_string(blocks) + " KV blocks but the pool has " +
                           std::to_string(kv_.num_blocks()));
  }
  Request r;
  r.id = params.id;
  r.priority = params.priority;
  r.prompt_logprobs = params.prompt_logprobs;
  r.arrival_seq = next_arrival_seq_++;
  r.max_tokens = params.max_tokens;
  r.stop_token_ids = std::move(params.stop_token_ids);
  r.num_prompt_tokens = static_cast<int64_t>(params.prompt_tokens.size());
  r.tokens = std::move(params.prompt_tokens);
  waiting_.insert(KeyOf(r));
  const RequestId id = r.id;
  requests_.emplace(id, std::make_shared<Request>(std::move(r)));
  return Status::Ok();
}

Status Scheduler::SetDraftTokens(RequestId id, std::vector<int32_t> drafts) {
  auto it = requests_.find(id);
  if (it == requests_.end()) {
    return NotFound("request " + std::to_string(id) + " is not live");
  }
  it->second->draft_tokens = std::move(drafts);
  return Status::Ok();
}

StatusOr<Request> Scheduler::Abort(RequestId id, FinishReason reason) {
  auto it = requests_.find(id);
  if (it == requests_.end()) {
    return NotFound("request " + std::to_string(id) + " is not live");
  }
  return FinishRequest(*it->second, reason);
}

StepPlan Scheduler::PlanStep() {
  for (const InFlightStep& step : in_flight_) {
    DI_CHECK_MSG(step.launched, "PlanStep called before the previous plan was launched");
  }
  PlanState state;
  state.budget = config_.max_num_batched_tokens;
  std::sort(running_.begin(), running_.end(),
            [this](RequestId a, RequestId b) { return KeyOf(Get(a)) < KeyOf(Get(b)); });
  ScheduleRunning(/*decodes=*/true, &state);
  ScheduleRunning(/*decodes=*/false, &state);
  AdmitWaiting(&state);
  return BuildPlan(&state);
}

bool Scheduler::WaitingForFinalCommit(const Request& r) const {
  // Its in-flight steps already sample its last token; planning more would be wasted.
  return r.NumOutputTokens() + r.num_placeholders >= r.max_tokens || r.NumTokens() >= config_.max_model_len;
}

void Scheduler::ScheduleRunning(bool decodes, PlanState* state) {
  const std::vector<RequestId> order = running_;  // a snapshot: preemption edits running_
  for (RequestId id : order) {
    if (state->budget <= 0) {
      return;
    }
    Request& r = Get(id);
    if (r.state != RequestState::kRunning) {
      continue;  // preempted earlier in this pass
    }
    if (WaitingForFinalCommit(r)) {
      continue;
    }
    // Its length is unknown: the next decode is a pending-length row, except
    // with windowed KV, whose claims cannot shift down (see scheduler.h).
    if (r.verification_in_flight && kv_.per_layer()) {
      continue;
    }
    if ((r.verification_in_flight || r.NumUncomputedTokens() == 1) != decodes) {
      continue;
    }
    if (decodes) {
      ScheduleDecode(r, state);
    } else {
      SchedulePrefillChunk(r, state);
    }
  }
}

void Scheduler::ScheduleDecode(Request& r, PlanState* state) {
  int64_t drafts = 0;
  // Drafts the request may still verify if its in-flight rows sample one token each.
  const int64_t room = std::min<int64_t>(r.max_tokens - r.NumOutputTokens() - r.num_placeholders,
                                         config_.max_model_len - r.NumTokens()) -
                       1;
  if (r.num_placeholders == 0 && config_.max_num_speculative_tokens > 0) {
    drafts = std::min<int64_t>({static_cast<int64_t>(r.draft_tokens.size()),
                                config_.max_num_speculative_tokens, state->budget - 1, room});
  } else if (r.num_placeholders > 0 && config_.max_num_speculative_tokens > 0 && !drafting_paused_) {
    // Planned ahead: the drafts are the in-flight row's proposals, known at
    // its commit; reserve the most it may get. The claim stays within the
    // request's whole length (the bound AddRequest checked against the pool)
    // even while a verification's unaccepted drafts still hold positions.
    const int64_t claim_room = std::min<int64_t>(r.num_prompt_tokens + r.max_tokens, config_.max_model_len) -
                               r.num_computed_tokens - 1;
    drafts = std::min<int64_t>({config_.max_num_speculative_tokens, state->budget - 1, room, claim_room});
  }
  drafts = std::max<int64_t>(drafts, 0);
  const bool pending = r.num_placeholders > 0 && (drafts > 0 || r.verification_in_flight);
  int64_t fit = kv_.MaxAllocatableTokens(r.id, 1 + drafts);  // fewer drafts before preempting anyone
  while (fit == 0) {
    Request* victim = LowestPriorityRunning();
    Preempt(*victim, state);
    if (victim == &r) {
      return;
    }
    fit = kv_.MaxAllocatableTokens(r.id, 1 + drafts);
  }
  DI_CHECK(kv_.Allocate(r.id, fit).ok());
  state->picks.push_back(Pick{r.id, fit, static_cast<int32_t>(fit - 1), pending});
  state->budget -= fit;
}

void Scheduler::SchedulePrefillChunk(Request& r, PlanState* state) {
  int64_t want = std::min(r.NumUncomputedTokens(), state->budget);
  if (r.WantsPromptRows()) want = std::min(want, kPromptLogprobsMaxChunk);
  int64_t fit = kv_.MaxAllocatableTokens(r.id, want);  // a shorter chunk before preempting anyone
  while (fit == 0) {
    Request* victim = LowestPriorityRunning();
    Preempt(*victim, state);
    if (victim == &r) {
      return;
    }
    fit = kv_.MaxAllocatableTokens(r.id, want);
  }
  DI_CHECK(kv_.Allocate(r.id, fit).ok());
  state->picks.push_back(Pick{r.id, fit, 0});
  state->budget -= fit;
}

void Scheduler::AdmitWaiting(PlanState* state) {
  while (state->budget > 0 && NumRunning() < config_.max_num_seqs && !waiting_.empty()) {
    Request& r = Get(std::get<2>(*waiting_.begin()));
    // Preempted with a token still being sampled: recompute once it is known.
    if (r.num_placeholders > 0) {
      return;
    }
    // Prompt logprobs need a logit row at every prompt position, and cached
    // positions have none: such a request recomputes its whole prefix.
    const bool reuse = r.prompt_logprobs < 0;
    PrefixMatch hit = reuse ? kv_.MatchPrefix(r.tokens) : PrefixMatch{};
    const PrefixMatch* start = reuse ? &hit : nullptr;
    int64_t want = std::min(r.NumTokens() - hit.num_tokens, state->budget);
    if (!reuse) want = std::min(want, kPromptLogprobsMaxChunk);
    if (!kv_.CanAllocate(r.id, want, start)) {
      Request* victim = running_.empty() ? nullptr : LowestPriorityRunning();
      if (victim == nullptr) {
        // Nothing running will ever free memory: start with the chunk that fits
        // (AddRequest guaranteed the whole request fits an empty pool).
        want = kv_.MaxAllocatableTokens(r.id, want, start);
        DI_CHECK(want > 0);
      } else if (config_.policy == SchedulingPolicy::kPriority && KeyOf(*victim) > KeyOf(r)) {
        Preempt(*victim, state);  // a lower priority gives way; then look again
        continue;
      } else {
        return;  // FCFS: nobody overtakes the head of the queue
      }
    }
    DI_CHECK(kv_.Allocate(r.id, want, start).ok());
    // A repeat or an extension of this prompt resumes at its end with no replay
    // (window-bounded KV keeps a checkpoint there; a no-op otherwise).
    kv_.AddCheckpoint(r.id, r.num_prompt_tokens - 1);
    kv_.AddCheckpoint(r.id, r.num_prompt_tokens);
    if (r.num_preemptions == 0) {
      r.num_cached_prompt_tokens = std::min(hit.num_tokens, r.num_prompt_tokens);
      stats_.prompt_tokens += r.num_prompt_tokens;
    }
    r.num_computed_tokens = hit.num_tokens;
    r.num_committed_kv_tokens = hit.num_tokens;
    r.state = RequestState::kRunning;
    waiting_.erase(waiting_.begin());
    running_.push_back(r.id);
    state->picks.push_back(Pick{r.id, want, 0});
    state->budget -= want;
  }
}

Request* Scheduler::LowestPriorityRunning() {
  DI_CHECK(!running_.empty());
  auto it = std::max_element(running_.begin(), running_.end(),
                             [this](RequestId a, RequestId b) { return KeyOf(Get(a)) < KeyOf(Get(b)); });
  return &Get(*it);
}

void Scheduler::Preempt(Request& victim, PlanState* state) {
  // If it was already picked for this step, its tokens go back to the budget
  // (its KV claim goes with the rest of its blocks below).
  auto pick = std::find_if(state->picks.begin(), state->picks.end(),
                           [&](const Pick& p) { return p.id == victim.id; });
  if (pick != state->picks.end()) {
    state->budget += pick->num_tokens;
    state->picks.erase(pick);
  }
  // Computed blocks stay in the prefix cache, so the recompute may be cheap.
  kv_.Free(
      victim.id,
      std::span<const int32_t>(victim.tokens)
          .first(static_cast<size_t>(std::min(victim.num_committed_kv_tokens, victim.NumKnownTokens()))));
  victim.num_computed_tokens = 0;
  victim.num_committed_kv_tokens = 0;
  victim.draft_tokens.clear();
  victim.state = RequestState::kPreempted;
  ++victim.num_preemptions;
  ++stats_.num_preemptions;
  running_.erase(std::find(running_.begin(), running_.end(), victim.id));
  waiting_.insert(KeyOf(victim));
  state->preempted.push_back(victim.id);
}

StepPlan Scheduler::BuildPlan(PlanState* state) {
  StepPlan plan;
  plan.step_id = next_step_id_++;
  plan.preempted = std::move(state->preempted);
  InFlightStep record;
  record.step_id = plan.step_id;
  for (const Pick& pick : state->picks) {
    Request& r = Get(pick.id);
    ScheduledSequence s;
    s.request_id = r.id;
    s.start_pos = r.num_computed_tokens;
    s.num_draft_tokens = pick.num_drafts;
    const int64_t base = pick.num_tokens - pick.num_drafts;
    if (pick.pending) {
      // Input and drafts come from the in-flight row's commit (PrepareLaunch).
      s.tokens.assign(static_cast<size_t>(pick.num_tokens), kPlaceholderToken);
      s.samples = true;
    } else {
      for (int64_t pos = s.start_pos; pos < s.start_pos + base; ++pos) {
        // Only a decode input can be unknown yet: the token its previous step samples.
        s.tokens.push_back(pos < r.NumKnownTokens() ? r.tokens[pos] : kPlaceholderToken);
      }
      s.tokens.insert(s.tokens.end(), r.draft_tokens.begin(), r.draft_tokens.begin() + pick.num_drafts);
      s.samples = s.start_pos + base == r.NumTokens();
    }
    if (r.WantsPromptRows()) {
      s.prompt_logprobs = r.prompt_logprobs;
      const int64_t end = std::min(s.start_pos + base, r.num_prompt_tokens - 1);
      s.prompt_targets.assign(r.tokens.begin() + s.start_pos + 1, r.tokens.begin() + end + 1);
    }
    if (kv_.per_layer()) {
      s.layer_block_tables = kv_.LayerBlockTables(r.id);
    } else {
      s.block_table = kv_.BlockTable(r.id);
    }

    r.num_computed_tokens += pick.num_tokens;
    DI_CHECK(kv_.NumTokens(r.id) == r.num_computed_tokens);
    if (s.samples) {
      ++r.num_placeholders;
      r.draft_tokens.clear();
    }
    if (pick.num_drafts > 0 && !pick.pending) {
      r.verification_in_flight = true;
      stats_.spec_draft_tokens += pick.num_drafts;
    }
    record.seqs.push_back(InFlightSeq{r.id, s.start_pos, pick.num_tokens, pick.num_drafts, s.samples,
                                      r.num_preemptions, pick.pending});
    plan.seqs.push_back(std::move(s));
  }
  plan.block_copies = kv_.TakePendingCopies();
  if (!plan.empty()) {
    in_flight_.push_back(std::move(record));
  }
  return plan;
}

}  // namespace deepinfer
