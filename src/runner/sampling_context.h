// SamplingContext: what the runner needs to sample one request's next token,
// kept beside (not inside) the scheduler's Request because the runner works
// on another thread. Created at Submit; the engine drops its reference when
// the request ends, a step still executing keeps it alive.
//
// Thread-safety: after Submit only the runner thread touches it (the mask
// helper too, but only while the runner waits for the forward pass), so no
// lock is needed.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "sampling/sampler.h"
#include "sampling/token_constraint.h"
#include "scheduler/request.h"

namespace deepinfer {

struct SamplingContext {
  RequestId id = 0;
  SamplingParams params;  // seed resolved at Submit
  uint32_t draw_stream = 0;
  int32_t logprobs = -1;               // -1: none; else top-k alternatives to report
  std::vector<int32_t> prompt_tokens;  // for the repetition penalty
  // Outputs the runner knows of, in position order (for penalties and the
  // constraint). Re-synced from each row, so a recomputed or discarded tail
  // can never leave it out of step with the scheduler.
  std::vector<int32_t> output_tokens;
  std::unique_ptr<TokenConstraint> constraint;  // null: unconstrained
  int64_t constraint_accepted = 0;              // outputs the constraint has accepted
  // Outputs the request may produce: min(max_tokens, max_model_len - prompt).
  // A constrained request steers to a shortest valid ending when it runs out.
  int64_t output_budget = 0;
  bool cached_tokens_counted = false;  // engine thread: prefix hit added to metrics
};

}  // namespace deepinfer
