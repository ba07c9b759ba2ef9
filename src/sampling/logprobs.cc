#include "sampling/logprobs.h"

#include <algorithm>
#include <cmath>

namespace deepinfer {

LogprobResult ComputeLogprobs(const float* logits, int64_t vocab, int32_t token, int32_t top_k) {
  auto value = [&](int64_t i) { return std::isnan(logits[i]) ? -INFINITY : static_cast<double>(logits[i]); };
  double max = -INFINITY;
  for (int64_t i = 0; i < vocab; ++i) max = std::max(max, value(i));
  double sum = 0.0;
  if (std::isfinite(max)) {
    for (int64_t i = 0; i < vocab; ++i) sum += std::exp(value(i) - max);
  }
  // log_softmax(x)_i = x_i - max - log(sum exp(x - max)).
  const double log_norm = std::isfinite(max) ? max + std::log(sum) : 0.0;
  auto logprob = [&](int64_t i) { return static_cast<float>(value(i) - log_norm); };

  LogprobResult result;
  result.logprob = logprob(token);
  const int64_t k = std::min<int64_t>(top_k, vocab);
  if (k > 0) {
    std::vector<int32_t> ids(static_cast<size_t>(vocab));
    for (int64_t i = 0; i < vocab; ++i) ids[static_cast<size_t>(i)] = static_cast<int32_t>(i);
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
      const double va = value(a), vb = value(b);
      return va > vb || (va == vb && a < b);
    });
    for (int64_t i = 0; i < k; ++i) {
      result.top.emplace_back(ids[static_cast<size_t>(i)], logprob(ids[static_cast<size_t>(i)]));
    }
  }
  return result;
}

std::vector<RankedTokenLogprob> ComputeTokenLogprobs(const float* rows, int64_t vocab,
                                                     const std::vector<int32_t>& targets, int32_t top_k) {
  std::vector<RankedTokenLogprob> out;
  out.reserve(targets.size());
  for (size_t j = 0; j < targets.size(); ++j) {
    const float* row = rows + j * static_cast<size_t>(vocab);
    LogprobResult r = ComputeLogprobs(row, vocab, targets[j], top_k);
    RankedTokenLogprob e;
    e.token = targets[j];
    e.logprob = r.logprob;
    e.top = std::move(r.top);
    // Ranked by logit, which orders like the logprob (NaN counts as -inf).
    const float mine = std::isnan(row[targets[j]]) ? -INFINITY : row[targets[j]];
    e.rank = 1 + std::count_if(row, row + vocab, [&](float v) { return !std::isnan(v) && v > mine; });
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace deepinfer
