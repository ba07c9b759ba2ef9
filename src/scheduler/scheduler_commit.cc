// Scheduler, second half: launching a planned step and committing its result.
#include <algorithm>
#include <string>
#include <unordered_map>

#include "core/check.h"
#include "scheduler/scheduler.h"

namespace deepinfer {

Status Scheduler::PrepareLaunch(StepPlan* plan, Placeholders placeholders) {
  auto step = std::find_if(in_flight_.begin(), in_flight_.end(),
                           [&](const InFlightStep& s) { return s.step_id == plan->step_id; });
  if (step == in_flight_.end()) {
    if (plan->empty()) {
      return Status::Ok();  // empty plans are never registered
    }
    return Internal("PrepareLaunch: step " + std::to_string(plan->step_id) + " is not a planned step");
  }
  if (step->launched) {
    return Internal("PrepareLaunch: step " + std::to_string(plan->step_id) + " already launched");
  }

  // Check every placeholder first so that an error leaves the plan untouched.
  for (const ScheduledSequence& s : plan->seqs) {
    auto it = requests_.find(s.request_id);
    if (placeholders != Placeholders::kResolve || it == requests_.end()) {
      continue;
    }
    auto rec = std::find_if(step->seqs.begin(), step->seqs.end(),
                            [&](const InFlightSeq& e) { return e.id == s.request_id; });
    if (rec != step->seqs.end() && rec->pending) {
      if (it->second->num_preemptions == rec->epoch && HasEarlierRow(s.request_id, *step)) {
        return Internal("step " + std::to_string(plan->step_id) +
                        " launched before the previous row of request " + std::to_string(s.request_id) +
                        " was committed");
      }
      continue;  // its positions are resolved below
    }
    for (size_t j = 0; j < s.tokens.size(); ++j) {
      const int64_t pos = s.start_pos + static_cast<int64_t>(j);
      if (s.tokens[j] == kPlaceholderToken && pos >= it->second->NumKnownTokens()) {
        return Internal("step " + std::to_string(plan->step_id) + " launched before the token of request " +
                        std::to_string(s.request_id) + " at position " + std::to_string(pos) +
                        " was committed");
      }
    }
  }

  std::vector<ScheduledSequence> kept;
  std::vector<InFlightSeq> kept_record;
  for (ScheduledSequence& s : plan->seqs) {
    auto rec = std::find_if(step->seqs.begin(), step->seqs.end(),
                            [&](const InFlightSeq& e) { return e.id == s.request_id; });
    DI_CHECK_MSG(rec != step->seqs.end(), "plan row not in the planned step");
    auto it = requests_.find(s.request_id);
    if (it == requests_.end()) {
      continue;  // finished or aborted since planning: drop the row
    }
    Request& r = *it->second;
    if (r.num_preemptions != rec->epoch) {  // its KV is gone; the row would write into freed blocks
      if (rec->samples) {
        --r.num_placeholders;
      }
      continue;
    }
    if (rec->pending && !ResolvePendingRow(*step, r, &*rec, &s)) {
      continue;
    }
    if (s.samples && !rec->samples) {
      s.samples = false;  // voided by forced tokens committed after planning (jump-forward)
    }
    for (size_t j = 0; j < s.tokens.size() && placeholders == Placeholders::kResolve; ++j) {
      if (s.tokens[j] == kPlaceholderToken) {
        s.tokens[j] = r.tokens[s.start_pos + static_cast<int64_t>(j)];
      }
    }
    kept_record.push_back(*rec);
    kept.push_back(std::move(s));
  }
  plan->seqs = std::move(kept);
  step->seqs = std::move(kept_record);
  step->launched = true;
  if (plan->empty()) {
    in_flight_.erase(step);  // nothing left to run or commit
  }
  return Status::Ok();
}

bool Scheduler::HasEarlierRow(RequestId id, const InFlightStep& step) const {
  for (const InFlightStep& earlier : in_flight_) {
    if (&earlier == &step) {
      return false;
    }
    for (const InFlightSeq& e : earlier.seqs) {
      if (e.id == id) {
        return true;
      }
    }
  }
  return false;
}

bool Scheduler::ResolvePendingRow(const InFlightStep& step, Request& r, InFlightSeq* rec,
                                  ScheduledSequence* s) {
  // The reservation is the end of the claim (no later plan exists); what
  // precedes it is computed or belongs to earlier steps.
  const int64_t base = r.num_computed_tokens - rec->num_tokens;
  // The request's rows in steps before this one (still in flight: kLeaveForRunner).
  bool earlier = false, previous_verifies = false;
  for (const InFlightStep& e : in_flight_) {
    if (&e == &step) break;
    for (const InFlightSeq& q : e.seqs) {
      if (q.id != r.id) continue;
      earlier = true;
      previous_verifies |= q.num_drafts > 0;
    }
  }
  // Forced tokens leave more than the input to compute: a chunk, next plan.
  // With the previous row in flight (kLeaveForRunner) verifying drafts, the
  // position is unknown.
  if ((!earlier && r.NumKnownTokens() != base + 1) || (earlier && previous_verifies)) {
    kv_.Rollback(r.id, rec->num_tokens);
    r.num_computed_tokens -= rec->num_tokens;
    --r.num_placeholders;
    return false;
  }
  int64_t drafts = 0;
  if (!earlier) {
    // As ScheduleDecode for a request with nothing in flight (this row aside).
    const int64_t room =
        std::min<int64_t>(r.max_tokens - r.NumOutputTokens(), config_.max_model_len - r.NumKnownTokens()) - 1;
    drafts = std::max<int64_t>(
        0, std::min<int64_t>({static_cast<int64_t>(r.draft_tokens.size()), rec->num_drafts, room}));
  }
  const int64_t unused = rec->num_drafts - drafts;
  kv_.Rollback(r.id, unused);
  r.num_computed_tokens -= unused;
  s->start_pos = base;
  s->tokens.assign(1, earlier ? kPlaceholderToken : r.tokens[static_cast<size_t>(base)]);
  if (!earlier) {
    s->tokens.insert(s->tokens.end(), r.draft_tokens.begin(), r.draft_tokens.begin() + drafts);
    r.draft_tokens.clear();
  }
  s->num_draft_tokens = static_cast<int32_t>(drafts);
  if (kv_.per_layer()) {
    s->layer_block_tables = kv_.LayerBlockTables(r.id);
  } else {
    s->block_table = kv_.BlockTable(r.id);
  }
  rec->start_pos = base;
  rec->num_tokens = 1 + drafts;
  rec->num_drafts = static_cast<int32_t>(drafts);
  rec->pending = false;
  if (drafts > 0) {
    r.verification_in_flight = true;
    stats_.spec_draft_tokens += drafts;
  }
  return true;
}

StatusOr<CommitResult> Scheduler::OnStepSampled(const StepOutput& output) {
  if (in_flight_.empty() || in_flight_.front().step_id != output.step_id || !in_flight_.front().launched) {
    return Internal("commit of step " + std::to_string(output.step_id) + " out of order (next to commit: " +
                    (in_flight_.empty() ? std::string("none") : std::to_string(in_flight_.front().step_id)) +
                    ")");
  }
  const InFlightStep& step = in_flight_.front();
  std::unordered_map<RequestId, const SequenceOutput*> by_id;
  for (const SequenceOutput& o : output.seqs) {
    by_id[o.request_id] = &o;
  }

  // Validate everything before changing anything.
  for (const InFlightSeq& e : step.seqs) {
    if (!requests_.count(e.id)) {
      continue;
    }
    auto it = by_id.find(e.id);
    const size_t total = it == by_id.end() ? 0 : it->second->tokens.size();
    const int32_t forced = it == by_id.end() ? 0 : it->second->num_forced;
    const std::string where = "step " + std::to_string(step.step_id) + ", request " + std::to_string(e.id);
    if (forced < 0 || static_cast<size_t>(forced) > total) {
      return Internal(where + ": bad forced token count " + std::to_string(forced));
    }
    const size_t n = total - static_cast<size_t>(forced);
    if (e.samples && (n < 1 || n > static_cast<size_t>(e.num_drafts) + 1)) {
      return Internal(where + ": expected 1.." + std::to_string(e.num_drafts + 1) + " sampled tokens, got " +
                      std::to_string(n));
    }
    if (!e.samples && total != 0) {
      return Internal(where + ": a mid-prompt chunk cannot sample");
    }
  }

  CommitResult result;
  for (const InFlightSeq& e : step.seqs) {
    auto rit = requests_.find(e.id);
    if (rit == requests_.end()) {
      continue;  // finished or aborted after this step was launched
    }
    Request& r = *rit->second;
    std::span<const int32_t> accepted;
    std::span<const int32_t> forced;
    if (e.samples) {
      const SequenceOutput& out = *by_id.at(e.id);
      accepted =
          std::span<const int32_t>(out.tokens).first(out.tokens.size() - static_cast<size_t>(out.num_forced));
      forced = std::span<const int32_t>(out.tokens).subspan(accepted.size());
      // (A request preempted since planning takes them too: they are known
      // tokens, which its recompute covers like its sampled ones.)
      if (!forced.empty() && !CanExtendWithForcedTokens(r.id)) {
        forced = {};  // jump-forward is an optimization: sampling under the mask reaches the same bytes
      }
    }

    if (r.num_preemptions == e.epoch) {  // still holds the KV this step wrote
      const int64_t rejected = e.samples ? e.num_drafts + 1 - static_cast<int64_t>(accepted.size()) : 0;
      if (rejected > 0) {
        kv_.Rollback(r.id, rejected);
        r.num_computed_tokens -= rejected;
      }
      r.num_committed_kv_tokens = e.start_pos + e.num_tokens - rejected;
    }
    if (e.samples) {
      --r.num_placeholders;
      r.verification_in_flight = false;
      r.draft_tokens.clear();  // they continued the previous last token
      if (e.num_drafts > 0) {
        stats_.spec_accepted_tokens += static_cast<int64_t>(accepted.size()) - 1;
      }
    }

    RequestUpdate update;
    update.request_id = r.id;
    for (int32_t token : accepted) {
      update.new_tokens.push_back(token);
      update.finish_reason = AppendToken(r, token);
      if (update.finish_reason != FinishReason::kNone) {
        break;  // later accepted drafts are dropped
      }
    }
    if (update.finish_reason == FinishReason::kNone && !forced.empty()) {
      // The sampling rows planned after this step would sample a position
      // the forced tokens now fill: they only compute their input's KV.
      VoidLaterSamplingRows(r);
      for (int32_t token : forced) {
        update.new_tokens.push_back(token);
        update.finish_reason = AppendToken(r, token);
        if (update.finish_reason != FinishReason::kNone) {
          break;
        }
      }
    }
    if (update.finish_reason == FinishReason::kNone) {
      if (r.state == RequestState::kRunning) {
        kv_.CacheFullBlocks(
            r.id, std::span<const int32_t>(r.tokens).first(static_cast<size_t>(r.num_committed_kv_tokens)));
      }
    } else {
      if (HasRowInLaunchedStep(r.id)) {
        result.discarded.push_back(r.id);
      }
      result.finished.push_back(FinishRequest(r, update.finish_reason));
    }
    if (!update.new_tokens.empty() || update.finish_reason != FinishReason::kNone) {
      result.updates.push_back(std::move(update));
    }
  }
  in_flight_.pop_front();
  return result;
}

FinishReason Scheduler::AppendToken(Request& r, int32_t token) {
  r.tokens.push_back(token);
  ++stats_.generation_tokens;
  if (std::find(r.stop_token_ids.begin(), r.stop_token_ids.end(), token) != r.stop_token_ids.end()) {
    return FinishReason::kStop;
  }
  if (r.NumOutputTokens() >= r.max_tokens || r.NumKnownTokens() >= config_.max_model_len) {
    return FinishReason::kLength;
  }
  return FinishReason::kNone;
}

bool Scheduler::CanExtendWithForcedTokens(RequestId id) const {
  // Later rows of the request must still be editable (not launched) and plain
  // decodes: a row verifying drafts continues a token the forced ones replace.
  for (size_t i = 1; i < in_flight_.size(); ++i) {
    for (const InFlightSeq& e : in_flight_[i].seqs) {
      // (A pending-length row is dropped at launch instead: scheduler.h.)
      if (e.id == id && (in_flight_[i].launched || (e.num_drafts > 0 && !e.pending))) {
        return false;
      }
    }
  }
  return true;
}

void Scheduler::VoidLaterSamplingRows(Request& r) {
  for (size_t i = 1; i < in_flight_.size(); ++i) {
    for (InFlightSeq& e : in_flight_[i].seqs) {
      if (e.id == r.id && e.samples && !e.pending) {
        e.samples = false;  // PrepareLaunch turns the plan's row into a non-sampling chunk
        --r.num_placeholders;
      }
    }
  }
  r.draft_tokens.clear();  // they continued the sampled token, not the forced ones
}

bool Scheduler::HasRowInLaunchedStep(RequestId id) const {
  // The front step is the one being committed; look at the ones after it.
  for (size_t i = 1; i < in_flight_.size(); ++i) {
    const InFlightStep& step = in_flight_[i];
    if (!step.launched) {
      continue;  // PrepareLaunch will drop the row
    }
    for (const InFlightSeq& e : step.seqs) {
      if (e.id == id) {
        return true;
      }
    }
  }
  return false;
}

Request Scheduler::FinishRequest(Request& r, FinishReason reason) {
  if (kv_.HasSequence(r.id)) {
    // Keep what was computed cached, including the partly filled last block.
    const auto computed = static_cast<size_t>(std::min(r.num_committed_kv_tokens, r.NumKnownTokens()));
    kv_.Free(r.id, std::span<const int32_t>(r.tokens).first(computed));
  }
  if (r.state == RequestState::kRunning) {
    running_.erase(std::find(running_.begin(), running_.end(), r.id));
  } else {
    waiting_.erase(KeyOf(r));
  }
  // A copy, not a move: a step still running may read the shared request's
  // tokens (ShareRequest); it keeps the shared object alive, unchanged.
  Request done = r;
  requests_.erase(done.id);
  done.state = RequestState::kFinished;
  done.finish_reason = reason;
  done.num_placeholders = 0;  // rows still in flight are ignored from now on
  done.draft_tokens.clear();
  return done;
}

void Scheduler::CheckInvariants() const {
  std::unordered_map<RequestId, int32_t> sampling_rows;
  std::unordered_map<RequestId, int64_t> draft_slots;  // drafts verified or reserved in flight
  for (const InFlightStep& step : in_flight_) {
    for (const InFlightSeq& e : step.seqs) {
      sampling_rows[e.id] += e.samples ? 1 : 0;
      draft_slots[e.id] += e.num_drafts;
      DI_CHECK_MSG(!e.pending || (!step.launched && e.samples && e.num_tokens == 1 + e.num_drafts),
                   "a launched pending-length row");
    }
  }
  int32_t running = 0;
  for (const auto& [id, shared] : requests_) {
    const Request& r = *shared;
    DI_CHECK(r.id == id);
    DI_CHECK(r.NumKnownTokens() >= r.num_prompt_tokens);
    DI_CHECK_MSG(r.num_placeholders == sampling_rows[id], "placeholders != sampling rows in flight");
    if (r.state == RequestState::kRunning) {
      ++running;
      DI_CHECK(std::find(running_.begin(), running_.end(), id) != running_.end());
      DI_CHECK_MSG(kv_.HasSequence(id) && kv_.NumTokens(id) == r.num_computed_tokens,
                   "KV claim differs from computed tokens");
      DI_CHECK(r.num_committed_kv_tokens <= r.num_computed_tokens);
      // Each in-flight draft slot may hold a position past the known and placeholder tokens.
      DI_CHECK(r.num_computed_tokens < r.NumTokens() + draft_slots[id]);
    } else {
      DI_CHECK(r.state == RequestState::kWaiting || r.state == RequestState::kPreempted);
      DI_CHECK(waiting_.count(KeyOf(r)) == 1);
      DI_CHECK(!kv_.HasSequence(id));
      DI_CHECK(r.num_computed_tokens == 0);
    }
  }
  DI_CHECK(running == NumRunning());
  DI_CHECK(static_cast<size_t>(running) + waiting_.size() == requests_.size());
  DI_CHECK(running <= config_.max_num_seqs);
  DI_CHECK_MSG(kv_.num_sequences() == running, "KV holds sequences of requests that are not running");
  kv_.CheckInvariants();
}

}  // namespace deepinfer
