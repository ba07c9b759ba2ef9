#include "spec/draft_length_policy.h"

#include <algorithm>

namespace deepinfer {

void DrafterCost::Observe(int64_t proposed, double seconds, double fixed) {
  fixed = std::clamp(fixed, 0.0, std::max(seconds, 0.0));
  fixed_seconds = fixed_seconds == 0.0 ? fixed : (1 - kSmoothing) * fixed_seconds + kSmoothing * fixed;
  drafts.Observe(proposed, seconds - fixed);
}

DraftSchedule ChooseDraftLengths(const std::vector<DraftLengthInput>& inputs, const StepLoad& load,
                                 const StepCostModel& cost, const DrafterCost& drafter_cost,
                                 int32_t max_draft, SpecSchedule schedule) {
  DraftSchedule out;
  std::vector<int32_t>& lengths = out.lengths;
  lengths.assign(inputs.size(), 0);
  auto cap = [&](const DraftLengthInput& in) {
    return static_cast<int32_t>(
        std::min<size_t>(in.confidence.size(), static_cast<size_t>(std::max(max_draft, 0))));
  };
  if (schedule == SpecSchedule::kFixed) {
    for (size_t r = 0; r < inputs.size(); ++r) lengths[r] = cap(inputs[r]);
    return out;
  }
  // Before any step was observed there is no cost to trade against, but the
  // cold assumption alone (a token costs 1 / kColdTokensPerFixed of the
  // fixed part; the drafter unknown, so free) gives the exchange rate, which
  // does not depend on the unit of time: one step of unit cost stands in.
  // Verifying nothing there cost the first two steps of every request (~2.5%
  // of a 200-token one at batch 1 on stories260K-mtp). Such a schedule
  // predicts no speedup (seconds stay 0): the pause decision waits for real
  // costs.
  const int64_t step_tokens = std::max<int64_t>(load.tokens, 1);
  const auto base_tokens = static_cast<double>(step_tokens);
  const double plain_seconds = cost.Predict(base_tokens);
  const bool cold = plain_seconds <= 0;
  StepCostModel unit_cost;
  if (cold) unit_cost.Observe(step_tokens, 1.0);
  const StepCostModel& target = cold ? unit_cost : cost;
  const DrafterCost unknown_drafter;
  const DrafterCost& drafter = cold ? unknown_drafter : drafter_cost;
  const double marginal = target.per_token_seconds() + drafter.marginal_seconds();
  const double rows = static_cast<double>(std::max<int64_t>(load.sampling_rows, 1));
  // The expected tokens and predicted seconds of the step with `lengths`.
  // The drafter is charged for what it proposes, not for what is verified:
  // its stop rule chains one draft past the last one worth verifying (the
  // first below lambda), so a request verifying j drafts costs about j + 1
  // proposals, and one verifying none still costs one. Charged for the
  // verified drafts only, a large batch looked much cheaper to speculate
  // than it was (docs/speculative.md, "The cost model").
  double drafter_seconds = 0.0;
  auto evaluate = [&](double& expected, double& seconds) {
    expected = rows;
    double drafts = 0, proposed = 0;
    for (size_t r = 0; r < inputs.size(); ++r) {
      double prefix = 1.0;
      for (int32_t i = 0; i < lengths[r]; ++i) {
        prefix *= inputs[r].confidence[static_cast<size_t>(i)];
        expected += prefix;
      }
      drafts += lengths[r];
      proposed += std::min(lengths[r] + 1, cap(inputs[r]));
    }
    drafter_seconds = drafter.Predict(proposed);
    seconds = target.Predict(base_tokens + drafts) + drafter_seconds;
  };
  for (int round = 0; round < 3; ++round) {
    double expected = 0, seconds = 0;
    evaluate(expected, seconds);
    const double lambda = expected / seconds * marginal;
    out.exchange_rate = lambda;
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
  double expected = 0, seconds = 0;
  evaluate(expected, seconds);
  if (!cold && seconds > 0) {
    out.expected_tokens = expected;
    out.seconds = seconds;
    out.drafter_seconds = drafter_seconds;
    out.rows = rows;
    out.plain_seconds = plain_seconds;
  }
  return out;
}

}  // namespace deepinfer
