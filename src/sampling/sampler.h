// Token sampling from one row of logits: greedy, temperature, top-k, top-p,
// min-p, with the random draw taken from a counter-based generator keyed by
// (seed, position), so the same request samples the same tokens wherever it
// runs.
//
// Filter order (as vLLM and llama.cpp apply them): temperature scaling, then
// top-k, then top-p over the surviving renormalized distribution, then min-p
// relative to the most likely token. Ties in logits are broken by lower id, so
// the candidate order is a pure function of the logits.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/status.h"

namespace deepinfer {

struct SamplingParams {
  double temperature = 1.0;  // <= 0 (or exactly 0): greedy argmax
  int64_t top_k = 0;         // 0 or >= vocab: off
  double top_p = 1.0;        // (0, 1]; 1 = off
  double min_p = 0.0;        // [0, 1]; 0 = off
  uint64_t seed = 0;
  // Penalties over the tokens generated so far (vLLM/OpenAI semantics):
  // repetition divides positive logits / multiplies negative ones of tokens
  // seen in prompt or output; presence subtracts once per seen output token;
  // frequency subtracts per occurrence in the output.
  double repetition_penalty = 1.0;                    // > 0; 1 = off
  double presence_penalty = 0.0;                      // [-2, 2]
  double frequency_penalty = 0.0;                     // [-2, 2]
  std::vector<std::pair<int32_t, float>> logit_bias;  // added to the raw logits; ids < vocab

  // InvalidArgument naming the field when a value is out of range.
  Status Validate() const;
  bool IsGreedy() const { return temperature <= 0.0; }
};

// Index of the largest logit; the lowest index wins ties. NaN logits never win.
int32_t ArgMax(const float* logits, int64_t vocab);

// Samples a token id from logits[0..vocab). `position` is the absolute
// position the sampled token will occupy; `draw` distinguishes several
// draws at one position. Greedy params ignore the seed.
int32_t SampleToken(const float* logits, int64_t vocab, const SamplingParams& params, uint64_t position,
                    uint32_t draw = 0);

// The distribution SampleToken draws from, as probabilities over the whole
// vocabulary (zero outside the filtered candidates; one-hot at the argmax
// for greedy params). Speculative rejection sampling compares the target's
// and the draft's (runner/row_sampler.h). probs: [vocab].
void SamplingProbabilities(const float* logits, int64_t vocab, const SamplingParams& params, float* probs);

}  // namespace deepinfer
