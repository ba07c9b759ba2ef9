// The engine's side of speculative decoding (docs/speculative.md): at each
// commit, verification outcomes feed the calibration and the metrics, and the
// rows' fresh proposals go through the confidence-based draft-length policy
// into the scheduler, which verifies them in the next step that schedules
// their request. The runner proposes (runner/step_runner.h) and verifies
// (runner/row_sampler.h).
#include <algorithm>

#include "core/log.h"
#include "engine/engine_impl.h"
#include "spec/draft_length_policy.h"

namespace deepinfer {

void EngineImpl::ObserveVerificationsLocked(const StepResult& result) {
  const int32_t max_draft = config_.scheduler.max_num_speculative_tokens;
  if (spec_accepted_per_position_.empty()) {
    spec_accepted_per_position_.assign(static_cast<size_t>(max_draft), 0);
    typical_confidence_.assign(static_cast<size_t>(max_draft), -1.0);
    spec_draft_length_counts_.assign(static_cast<size_t>(max_draft) + 1, 0);
  }
  for (const SampledRow& row : result.rows) {
    if (row.num_drafts <= 0) continue;
    ++spec_verifications_;
    const auto accepted = static_cast<int32_t>(std::min<size_t>(row.tokens.size() - 1, row.num_drafts));
    const auto found = draft_confidence_.find(row.request_id);
    const std::vector<float> none;
    const std::vector<float>& raw = found != draft_confidence_.end() ? found->second : none;
    for (int32_t d = 0; d < accepted; ++d) ++spec_accepted_per_position_[static_cast<size_t>(d)];
    // Depth d is a trial only when drafts 0..d-1 were accepted.
    for (int32_t d = 0; d <= accepted && d < row.num_drafts; ++d) {
      const float c = static_cast<size_t>(d) < raw.size() ? raw[static_cast<size_t>(d)] : 0.0f;
      calibrator_.Observe(d, c, d < accepted);
    }
  }
}

void EngineImpl::ScheduleDraftsLocked(const StepResult& result) {
  const int32_t max_draft = config_.scheduler.max_num_speculative_tokens;
  int64_t drafts_in_step = 0;
  for (const SampledRow& row : result.rows) drafts_in_step += std::max(row.num_drafts, 0);
  // The fresh proposals of requests that go on.
  std::vector<const SampledRow*> proposing;
  std::vector<DraftLengthInput> inputs;
  for (const SampledRow& row : result.rows) {
    draft_confidence_.erase(row.request_id);
    if (row.proposal.tokens.empty() || scheduler_->FindRequest(row.request_id) == nullptr) continue;
    DraftLengthInput in;
    for (size_t d = 0; d < row.proposal.tokens.size(); ++d) {
      in.confidence.push_back(calibrator_.Calibrated(static_cast<int32_t>(d), row.proposal.confidence[d]));
    }
    proposing.push_back(&row);
    inputs.push_back(std::move(in));
  }
  // The next step's load before drafts: about this step's.
  const StepLoad load{.sampling_rows = static_cast<int64_t>(result.rows.size()),
                      .tokens = std::max<int64_t>(result.num_tokens - drafts_in_step, 1)};
  const DraftSchedule schedule =
      ChooseDraftLengths(inputs, load, step_cost_, drafter_cost_, max_draft,
                         config_.speculative.adaptive ? SpecSchedule::kAdaptive : SpecSchedule::kFixed);
  const std::vector<int32_t>& lengths = schedule.lengths;
  for (const DraftLengthInput& in : inputs) {
    for (size_t d = 0; d < in.confidence.size() && d < typical_confidence_.size(); ++d) {
      typical_confidence_[d] = typical_confidence_[d] < 0
                                   ? in.confidence[d]
                                   : 0.95 * typical_confidence_[d] + 0.05 * in.confidence[d];
    }
  }
  if (!inputs.empty()) draft_stop_below_confidence_ = static_cast<float>(schedule.exchange_rate);
  if (config_.speculative.adaptive)
    UpdateDraftingPauseLocked(inputs.empty() ? DraftSchedule{} : schedule, load);
  // A paused drafter proposes nothing: steps planned ahead reserve no draft slots.
  scheduler_->SetDraftingPaused(drafting_paused_);
  for (size_t i = 0; i < proposing.size(); ++i) {
    const SampledRow& row = *proposing[i];
    const auto k = static_cast<size_t>(lengths[i]);
    ++spec_draft_length_counts_[k];
    if (k == 0) continue;
    std::vector<int32_t> drafts(row.proposal.tokens.begin(),
                                row.proposal.tokens.begin() + static_cast<std::ptrdiff_t>(k));
    if (!scheduler_->SetDraftTokens(row.request_id, std::move(drafts)).ok()) continue;
    draft_confidence_[row.request_id].assign(
        row.proposal.confidence.begin(), row.proposal.confidence.begin() + static_cast<std::ptrdiff_t>(k));
  }
}

// Both cost models learn from decode and verification steps only (every
// token a logit row that is sampled), the steps whose cost they predict: a
// prompt chunk's tokens cost a fraction of a decode token (no logits, no
// sampling, one attention pass per chunk), and mixing them in drags the
// fitted marginal token far below a verified draft's. The drafter's catch-up
// of a prompt is the opposite: a whole prompt's MTP rows taken as the
// fixed seconds of one step, which the smoothing then carries for tens of
// steps (enough to predict a loss and pause a drafter that pays).
// The target's sample is the step's whole cycle less the drafter's part, not
// its forward pass alone: sampling every verified row, the rollback and the
// commit grow with the drafts too, and where the forward is cheap (a small
// model, or many requests per step) they decide whether a draft pays
// (docs/speculative.md, "The cost model").
void EngineImpl::ObserveStepCostLocked(const StepResult& result, double cycle_seconds) {
  int64_t logit_rows = 0;
  for (const SampledRow& row : result.rows) logit_rows += 1 + row.num_drafts;
  const bool decode_step = result.num_tokens == logit_rows;
  if (!decode_step || result.forward_seconds <= 0) return;
  step_cost_.Observe(result.num_tokens,
                     std::max(cycle_seconds - result.draft_seconds, result.forward_seconds));
  if (result.draft_seconds > 0) {
    drafter_cost_.Observe(result.proposed_tokens, result.draft_seconds, result.draft_fixed_seconds);
  }
}

// Pausing: the schedule's predicted speedup (the chosen lengths' tokens per
// second, drafter included, over a step without speculation) over the recent
// steps that proposed (SpeedupTracker: a ratio of decayed sums); below
// kPauseBelow (plus the drafter-share margin below) the drafter is paused --
// its catch-up alone costs more than the drafts save, as under a
// compute-bound load or with drafts that are always rejected -- and steps
// planned ahead reserve no draft slots (Scheduler::SetDraftingPaused). While
// paused there are no proposals, so the same prediction runs on typical ones
// (per depth, the smoothed calibrated confidence of the proposals seen while
// drafting); it resumes once that predicts kResumeSpeedup (plus the margin),
// or after probe_interval_ paused steps to re-measure (the text or the drafts
// may have changed). A probe pauses again by the same rule, and each probe
// that ends in a pause doubles the interval (up to kMaxProbeSteps): under a steady compute-bound
// load every probe drafts for a whole batch and loses. A resume on the
// prediction, or a probe that keeps paying, resets the interval. The MTP
// drafter restarts its context at the first position it sees again.
// kPauseBelow is under 1 so that a drafter that costs next to nothing
// (ngram) is not paused over a draft-less stretch: the pause would save next
// to nothing and lose the next good proposals.
void EngineImpl::UpdateDraftingPauseLocked(const DraftSchedule& schedule, const StepLoad& load) {
  constexpr double kPauseBelow = 0.98;
  constexpr double kResumeSpeedup = 1.05;
  // Both thresholds rise with the drafter's share of the step's predicted
  // seconds: the predictions run high where the drafter is dear (measured
  // at 64 concurrent on stories260K-mtp: share ~0.25, predicted 1.06-1.08
  // while drafting steps ran ~0.92x of plain ones; docs/speculative.md, "A
  // margin for dear drafters"), while a drafter that costs next to nothing
  // (ngram) keeps the thresholds above. The margin grows with the step's
  // requests, (1 - 1 / rows) of it: at batch 1 the predictions did not run
  // high (1.1-1.35 where drafting steps ran ~1.15x of plain ones; session
  // 22), and there the whole margin (a threshold of ~1.2 at a share of
  // ~0.38) paused a drafter that paid in 2-5% of 200-token requests.
  constexpr double kMarginPerDrafterShare = 0.6;
  const double rows = static_cast<double>(std::max<int64_t>(load.sampling_rows, 1));
  const double margin_per_share = kMarginPerDrafterShare * (1 - 1 / rows);
  // The drafter pauses once even the optimistic end of the prediction, kZ
  // standard errors above it (SpeedupTracker::standard_error), is below the
  // threshold, after at least kMinPredictions: a random MTP layer's steady
  // ~0.9 then pauses in 3 steps, while at batch 1 on stories260K-mtp the
  // noisy first predictions of a fresh cost model (one step's ranged
  // 0.7-2.0; the average dipped to 0.78 in 1 of 20 requests) no longer
  // pause a drafter that pays (0 pauses in 180 requests with kZ = 2 or 3;
  // docs/speculative.md, "Session 22"). 2 rather than 3: under load the
  // steps' predictions spread ~0.12, and 3 kept a losing drafter on for ~10
  // more steps. A probe that keeps paying for kProbePaysAfter steps resets
  // the interval.
  constexpr int64_t kMinPredictions = 3;
  constexpr double kZ = 2.0;
  constexpr int64_t kProbePaysAfter = 8;
  ++steps_since_pause_change_;
  if (!drafting_paused_) {
    if (schedule.lengths.empty()) return;  // nothing proposed this step: nothing learned
    predicted_speedup_.Add(schedule);
    const double speedup = predicted_speedup_.speedup();
    const double pause_below = kPauseBelow + margin_per_share * predicted_speedup_.drafter_share();
    if (predicted_speedup_.steps() >= kMinPredictions &&
        speedup + kZ * predicted_speedup_.standard_error() < pause_below) {
      drafting_paused_ = true;
      if (probing_) probe_interval_ = std::min(2 * probe_interval_, kMaxProbeSteps);
      probing_ = false;
      steps_since_pause_change_ = 0;
      DI_LOG_DEBUG("speculation paused: predicted speedup %.3f +- %.3f (below %.3f)", speedup,
                   predicted_speedup_.standard_error(), pause_below);
    } else if (probing_ && steps_since_pause_change_ >= kProbePaysAfter) {
      probing_ = false;  // the probe pays: back to the short interval
      probe_interval_ = kMinProbeSteps;
    }
    return;
  }
  ++spec_paused_steps_;
  const int32_t max_draft = config_.scheduler.max_num_speculative_tokens;
  DraftLengthInput typical;
  for (double c : typical_confidence_) {
    if (c < 0 || static_cast<int32_t>(typical.confidence.size()) == max_draft) break;
    typical.confidence.push_back(c);
  }
  const std::vector<DraftLengthInput> inputs(static_cast<size_t>(rows), typical);
  const DraftSchedule typical_schedule =
      ChooseDraftLengths(inputs, load, step_cost_, drafter_cost_, max_draft, SpecSchedule::kAdaptive);
  const double predicted = typical_schedule.speedup();
  const double resume_at = kResumeSpeedup + margin_per_share * typical_schedule.drafter_share();
  if (predicted >= resume_at || steps_since_pause_change_ >= probe_interval_) {
    drafting_paused_ = false;
    probing_ = predicted < resume_at;
    if (!probing_) probe_interval_ = kMinProbeSteps;
    steps_since_pause_change_ = 0;
    predicted_speedup_.Clear();  // the resumed steps decide (after the minimum steps)
    DI_LOG_DEBUG("speculation resumed: predicted speedup %.3f", predicted);
  }
}

}  // namespace deepinfer
