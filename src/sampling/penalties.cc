#include "sampling/penalties.h"

#include <unordered_map>
#include <unordered_set>

namespace deepinfer {

bool HasLogitAdjustments(const SamplingParams& params) {
  return !params.logit_bias.empty() || params.repetition_penalty != 1.0 || params.presence_penalty != 0.0 ||
         params.frequency_penalty != 0.0;
}

void ApplyLogitAdjustments(const SamplingParams& params, std::span<const int32_t> prompt_tokens,
                           std::span<const int32_t> output_tokens, float* logits, int64_t vocab) {
  auto in_range = [vocab](int32_t id) { return id >= 0 && id < vocab; };
  for (const auto& [id, bias] : params.logit_bias) {
    if (in_range(id)) logits[id] += bias;
  }

  if (params.repetition_penalty != 1.0) {
    // A set, so a token repeated many times is penalized once.
    std::unordered_set<int32_t> seen(prompt_tokens.begin(), prompt_tokens.end());
    seen.insert(output_tokens.begin(), output_tokens.end());
    const double r = params.repetition_penalty;
    for (int32_t id : seen) {
      if (!in_range(id)) continue;
      const double v = logits[id];
      logits[id] = static_cast<float>(v > 0 ? v / r : v * r);
    }
  }

  if (params.presence_penalty != 0.0 || params.frequency_penalty != 0.0) {
    std::unordered_map<int32_t, int64_t> counts;
    for (int32_t id : output_tokens) ++counts[id];
    for (const auto& [id, n] : counts) {
      if (!in_range(id)) continue;
      logits[id] = static_cast<float>(logits[id] - params.frequency_penalty * static_cast<double>(n) -
                                      params.presence_penalty);
    }
  }
}

}  // namespace deepinfer
