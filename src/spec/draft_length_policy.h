// Confidence-based verification scheduling: how many of each request's drafts
// the next step verifies (docs/speculative.md).
//
// kAdaptive maximizes the step's expected output tokens per second. A request
// verifying j drafts yields 1 + S_j tokens in expectation, where S_j is the
// sum over i <= j of the prefix acceptance P_i = c_1 * ... * c_i of its
// calibrated conditional confidences; each verified draft costs the step
// the target's per_token seconds plus the drafter's marginal seconds per
// draft. With E the expected tokens and T the predicted seconds of the step
// (the target's whole step plus the drafter's proposals: about one more than
// it verifies per request), a draft is worth verifying when its P_i
// exceeds the step's exchange rate lambda = E / T * marginal: the request
// takes the j maximizing S_j - lambda * j. lambda is also the drafter's stop
// rule for the next step: chaining past a prefix confidence below it buys
// drafts that will not be verified. At low load (T dominated by the
// fixed cost) lambda is small and drafts run deep where confidence is high;
// as the batch grows T becomes per-token bound, lambda approaches 1 and
// speculation fades out by itself. Three rounds re-estimate lambda from the
// chosen lengths.
//
// kFixed verifies every proposed draft up to max_draft (for comparison).
#pragma once

#include <cstdint>
#include <vector>

#include "spec/step_cost_model.h"

namespace deepinfer {

enum class SpecSchedule : uint8_t { kAdaptive, kFixed };

struct DraftLengthInput {
  std::vector<double> confidence;  // calibrated, conditional, per depth (size = drafts proposed)
};

struct StepLoad {
  int64_t sampling_rows = 0;  // requests that will sample in the next step (each yields one token)
  int64_t tokens = 0;         // tokens of the next step before drafts
};

// The drafter's seconds per step: a part that does not depend on the drafts
// (Drafter::last_fixed_seconds, smoothed) and a fit of the rest against the
// drafts proposed, whose slope is the marginal draft.
struct DrafterCost {
  static constexpr double kSmoothing = 0.1;  // weight of the newest fixed-seconds sample

  StepCostModel drafts{/*cold_tokens_per_fixed=*/1.0};
  double fixed_seconds = 0.0;

  void Observe(int64_t proposed, double seconds, double fixed);
  double marginal_seconds() const { return drafts.per_token_seconds(); }
  double Predict(double proposed) const { return fixed_seconds + drafts.Predict(proposed); }
};

struct DraftSchedule {
  std::vector<int32_t> lengths;  // per input: drafts to verify (<= its proposal and max_draft)
  double exchange_rate = 0.0;    // lambda (0 under kFixed)
  // The step's prediction with these lengths (all 0 under kFixed or before
  // any cost is known): its expected tokens and predicted seconds, the
  // drafter's part of those seconds, its sampling rows (at least 1) and its
  // predicted seconds without speculation (no drafts, no drafter).
  double expected_tokens = 0.0;
  double seconds = 0.0;
  double drafter_seconds = 0.0;
  double rows = 0.0;
  double plain_seconds = 0.0;

  // Predicted tokens per second with these lengths, drafter included, over
  // a step without speculation: below 1, speculation costs more than it
  // saves. 1 when nothing is predicted.
  double speedup() const {
    return seconds > 0 && plain_seconds > 0 ? (expected_tokens / seconds) / (rows / plain_seconds) : 1.0;
  }
  // The drafter's part of the predicted seconds (0 when nothing is predicted).
  double drafter_share() const { return seconds > 0 ? drafter_seconds / seconds : 0.0; }
};

// cost: the target's step; drafter_cost: the drafter's.
DraftSchedule ChooseDraftLengths(const std::vector<DraftLengthInput>& inputs, const StepLoad& load,
                                 const StepCostModel& cost, const DrafterCost& drafter_cost,
                                 int32_t max_draft, SpecSchedule schedule);

}  // namespace deepinfer
