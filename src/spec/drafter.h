// Drafter: proposes the tokens a request will most likely produce next, each
// with a confidence, for speculative decoding (docs/speculative.md). The
// target model then verifies the proposals in one forward pass; verification
// is lossless (runner/row_sampler.h), so a drafter only decides speed, never
// output.
//
// Contract: after every step the runner hands the drafter one DraftInput per
// sequence of the step (sampling or not: a drafter with its own state, like
// the MTP one, must see every position the target computed), and gets back
// one proposal per input: at most max_tokens drafts continuing the input's
// sequence, with confidence[i] in [0, 1] the drafter's estimate that draft i
// is accepted given drafts 0..i-1 were (uncalibrated; see
// AcceptanceCalibrator). An empty proposal is always valid. A request may
// come back after a rollback (rejected drafts, preemption): its next input's
// start_pos is then at or before positions seen earlier, and those positions
// are to be forgotten.
//
// Thread-safety: called from the runner thread only.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sampling/sampler.h"
#include "spec/acceptance_calibrator.h"

namespace deepinfer {

struct DraftProposal {
  std::vector<int32_t> tokens;
  std::vector<float> confidence;  // one per token, conditional on the earlier drafts
  // Drafts sampled independently from the drafter's distribution, to be
  // verified by rejection sampling: that distribution at each draft,
  // f32 [tokens.size(), vocab]. Empty: verify by "accept while the target's
  // sample equals the draft" (argmax or coupled drafts).
  std::vector<float> probs;
};

// What one step tells a drafter about one of its sequences.
struct DraftInput {
  int64_t request_id = 0;
  int64_t start_pos = 0;  // the first position the step computed
  // The tokens at positions start_pos, start_pos + 1, ...: the step's inputs
  // whose target state is kept (rejected drafts excluded), then the tokens
  // the step sampled (and forced) after them.
  std::span<const int32_t> tokens;
  // The target's state at [start_pos, start_pos + num_computed) is kept.
  int64_t num_computed = 0;
  // NeedsHidden() only: f32 [num_computed, hidden] — the target's hidden
  // state after its final norm (the lm_head input) at those positions.
  const float* hidden = nullptr;
  // Proposing inputs of a drafter that NeedsSequence(): the request's whole
  // known sequence (prompt, outputs, this step's samples). Empty otherwise.
  std::span<const int32_t> sequence;
  int32_t max_tokens = 0;  // > 0: propose at most this many drafts
  // A drafter whose drafts cost time may stop once the product of its
  // calibrated confidences so far (calibration->Calibrated(depth, raw); the
  // raw ones without a calibration) falls below this: the schedule would not
  // verify the drafts after it (the step's exchange rate,
  // draft_length_policy.h). Proposing more is still valid.
  float stop_below_confidence = 0.0f;
  const AcceptanceCalibrator* calibration = nullptr;
  // Proposing inputs: the request's sampling (drafters that sample, like a
  // draft model, draw their drafts as the target would) — params, its draw
  // stream, and how many of `sequence`'s tokens are prompt (penalties).
  const SamplingParams* sampling = nullptr;
  uint32_t draw_stream = 0;
  int64_t num_prompt_tokens = 0;
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  // Whether ProposeStep reads DraftInput::hidden (the runner then asks the
  // model for its hidden states).
  virtual bool NeedsHidden() const { return false; }
  // Whether ProposeStep reads DraftInput::sequence (the runner then copies
  // each proposing request's whole history once per step).
  virtual bool NeedsSequence() const { return true; }
  // One proposal per input, in input order (empty where max_tokens is 0).
  virtual std::vector<DraftProposal> ProposeStep(std::span<const DraftInput> inputs) = 0;
  // The requests have ended: drop whatever the drafter keeps for them.
  virtual void Release(std::span<const int64_t> request_ids) { (void)request_ids; }
  // Seconds of the last ProposeStep that did not depend on how many drafts
  // it proposed (the MTP catch-up). The schedule fits the marginal cost of a
  // draft to the rest: timed together, catch-up work grows with the tokens
  // accepted, which grows with the drafts proposed, and the fit would charge
  // it to the drafts.
  virtual double last_fixed_seconds() const { return 0.0; }
};

}  // namespace deepinfer
