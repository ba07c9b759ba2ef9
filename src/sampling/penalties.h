// Logit adjustments applied before sampling, in this order (each optional):
// logit_bias (added to the raw logits), then the penalties with vLLM/OpenAI
// semantics:
//   repetition r: every token seen in the prompt or the output so far has its
//                 logit divided by r when positive, multiplied by r otherwise;
//   frequency f:  logit -= f * (occurrences in the output);
//   presence p:   logit -= p once if the token occurs in the output.
// Log-probabilities reported to the client are taken before all of this
// (see logprobs.h), so they describe the model, not the request's knobs.
#pragma once

#include <cstdint>
#include <span>

#include "sampling/sampler.h"

namespace deepinfer {

// True when ApplyLogitAdjustments would change anything.
bool HasLogitAdjustments(const SamplingParams& params);

// Adjusts logits[0..vocab) in place. Token ids outside [0, vocab) in the
// history or in logit_bias are ignored (Submit rejects them earlier).
void ApplyLogitAdjustments(const SamplingParams& params, std::span<const int32_t> prompt_tokens,
                           std::span<const int32_t> output_tokens, float* logits, int64_t vocab);

}  // namespace deepinfer
