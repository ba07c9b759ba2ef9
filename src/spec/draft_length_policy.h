// Confidence-based verification scheduling: how many of each request's drafts
// the next step verifies (docs/speculative.md).
//
// kAdaptive maximizes the step's expected output tokens per second. A request
// verifying j drafts yields 1 + S_j tokens in expectation, where S_j is the
// sum over i <= j of the prefix acceptance P_i = c_1 * ... * c_i of its
// calibrated conditional confidences; each verified draft costs the step
// per_token + drafter seconds. With E the expected tokens and T the predicted
// seconds of the step, a draft is worth verifying when its P_i exceeds the
// step's exchange rate lambda = E / T * (per_token + drafter): the request
// takes the j maximizing S_j - lambda * j. At low load (T dominated by the
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

// Per input, the number of drafts to verify (<= its proposal and max_draft).
std::vector<int32_t> ChooseDraftLengths(const std::vector<DraftLengthInput>& inputs, const StepLoad& load,
                                        const StepCostModel& cost, double drafter_seconds_per_token,
                                        int32_t max_draft, SpecSchedule schedule);

}  // namespace deepinfer
