// The engine's side of speculative decoding (docs/speculative.md): at each
// commit, verification outcomes feed the calibration and the metrics, and the
// rows' fresh proposals go through the confidence-based draft-length policy
// into the scheduler, which verifies them in the next step that schedules
// their request. The runner proposes (runner/step_runner.h) and verifies
// (runner/row_sampler.h).
#include <algorithm>

#include "engine/engine_impl.h"
#include "spec/draft_length_policy.h"

namespace deepinfer {

void EngineImpl::CommitSpeculationLocked(const StepResult& result) {
  const int32_t max_draft = config_.scheduler.max_num_speculative_tokens;
  if (spec_accepted_per_position_.empty()) {
    spec_accepted_per_position_.assign(static_cast<size_t>(max_draft), 0);
    spec_draft_length_counts_.assign(static_cast<size_t>(max_draft) + 1, 0);
  }
  int64_t drafts_in_step = 0;
  for (const SampledRow& row : result.rows) {
    if (row.num_drafts <= 0) continue;
    drafts_in_step += row.num_drafts;
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
  if (result.forward_seconds > 0) step_cost_.Observe(result.num_tokens, result.forward_seconds);
  if (result.proposed_tokens > 0) {
    const double per_token = result.draft_seconds / static_cast<double>(result.proposed_tokens);
    drafter_seconds_per_token_ =
        drafter_seconds_per_token_ == 0.0 ? per_token : 0.9 * drafter_seconds_per_token_ + 0.1 * per_token;
  }

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
  const std::vector<int32_t> lengths =
      ChooseDraftLengths(inputs, load, step_cost_, drafter_seconds_per_token_, max_draft,
                         config_.speculative.adaptive ? SpecSchedule::kAdaptive : SpecSchedule::kFixed);
  speculating_ = false;
  for (size_t i = 0; i < proposing.size(); ++i) {
    const SampledRow& row = *proposing[i];
    const auto k = static_cast<size_t>(lengths[i]);
    ++spec_draft_length_counts_[k];
    draft_budget_[row.request_id] = std::min<int32_t>(lengths[i] + 1, max_draft);
    if (k == 0) continue;
    std::vector<int32_t> drafts(row.proposal.tokens.begin(),
                                row.proposal.tokens.begin() + static_cast<std::ptrdiff_t>(k));
    if (!scheduler_->SetDraftTokens(row.request_id, std::move(drafts)).ok()) continue;
    draft_confidence_[row.request_id].assign(
        row.proposal.confidence.begin(), row.proposal.confidence.begin() + static_cast<std::ptrdiff_t>(k));
    speculating_ = true;
  }
}

}  // namespace deepinfer
