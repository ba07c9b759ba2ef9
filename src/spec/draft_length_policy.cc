#include "spec/draft_length_policy.h"

#include <algorithm>

namespace deepinfer {

std::vector<int32_t> ChooseDraftLengths(const std::vector<DraftLengthInput>& inputs, const StepLoad& load,
                                        const StepCostModel& cost, double drafter_seconds_per_token,
                                        int32_t max_draft, SpecSchedule schedule) {
  std::vector<int32_t> lengths(inputs.size(), 0);
  auto cap = [&](const DraftLengthInput& in) {
    return static_cast<int32_t>(
        std::min<size_t>(in.confidence.size(), static_cast<size_t>(std::max(max_draft, 0))));
  };
  if (schedule == SpecSchedule::kFixed) {
    for (size_t r = 0; r < inputs.size(); ++r) lengths[r] = cap(inputs[r]);
    return lengths;
  }
  const double marginal = cost.per_token_seconds() + std::max(drafter_seconds_per_token, 0.0);
  const double rows = static_cast<double>(std::max<int64_t>(load.sampling_rows, 1));
  const double base_tokens = static_cast<double>(std::max<int64_t>(load.tokens, 1));
  for (int round = 0; round < 3; ++round) {
    double expected = rows;
    double drafts = 0;
    for (size_t r = 0; r < inputs.size(); ++r) {
      double prefix = 1.0;
      for (int32_t i = 0; i < lengths[r]; ++i) {
        prefix *= inputs[r].confidence[static_cast<size_t>(i)];
        expected += prefix;
      }
      drafts += lengths[r];
    }
    const double seconds = cost.Predict(base_tokens + drafts) + drafter_seconds_per_token * drafts;
    if (seconds <= 0) return lengths;  // no cost known yet: nothing to trade against
    const double lambda = expected / seconds * marginal;
    for (size_t r = 0; r < inputs.size(); ++r) {
      double prefix = 1.0;
      double gain = 0.0;
      double best_gain = 0.0;
      int32_t best = 0;
      for (int32_t j = 1; j <= cap(inputs[r]); ++j) {
        prefix *= inputs[r].confidence[static_cast<size_t>(j - 1)];
        gain += prefix - lambda;
        if (gain > best_gain) {
          best_gain = gain;
          best = j;
        }
      }
      lengths[r] = best;
    }
  }
  return lengths;
}

}  // namespace deepinfer
