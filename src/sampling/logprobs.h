// Log-probabilities for the OpenAI `logprobs` / `top_logprobs` fields: the
// log-softmax of the raw logits (before temperature, penalties, bias and
// grammar masks), computed in double precision.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace deepinfer {

struct LogprobResult {
  float logprob = 0.0f;                        // of the chosen token
  std::vector<std::pair<int32_t, float>> top;  // the top_k most likely, best first, ties by lower id
};

// One sampled token's entry of a response's logprobs.
struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;                        // log-softmax of the raw logits
  std::vector<std::pair<int32_t, float>> top;  // top alternatives, best first
};

// A prompt token's entry (vLLM's prompt_logprobs): also its vocabulary rank.
struct RankedTokenLogprob : TokenLogprob {
  int64_t rank = 0;  // 1 + the number of tokens with a higher logprob
};

// REQUIRES: 0 <= token < vocab, top_k >= 0. NaN logits count as -inf.
LogprobResult ComputeLogprobs(const float* logits, int64_t vocab, int32_t token, int32_t top_k);

// Prompt logprobs: rows f32 [targets.size(), vocab], row j the logits that
// predict targets[j]; one entry per target (ComputeLogprobs of each row), so
// the caller can drop the rows right away.
std::vector<RankedTokenLogprob> ComputeTokenLogprobs(const float* rows, int64_t vocab,
                                                     const std::vector<int32_t>& targets, int32_t top_k);

}  // namespace deepinfer
