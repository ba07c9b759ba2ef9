// RowSampler: the one place a request's next token is chosen from its row of
// logits — for the engine's steps and for every CLI path that decodes.
//
// Per sampling row, in two phases around the forward pass:
//   Prepare (before): brings the constraint to the request's committed
//     outputs (the scheduler's Request, read through ctx.request), and decides its constraint
//     mask: finish-soon (the output budget is about to fall short of the
//     shortest valid ending, so the ending's next token is the only one
//     allowed) or the constraint's allowed set, which the caller fills with
//     FillMask — possibly on another thread while the forward pass runs.
//   Sample (after): for a verification row (drafts after the decode input),
//     each position in turn while the samples equal the drafts (lossless:
//     the same tokens as decoding without drafts) — or, for drafts sampled
//     from a draft model's own distribution (SamplingContext::draft_probs),
//     while rejection sampling keeps them (distribution-exact); per position
//     log-probabilities from the raw logits; logit_bias,
//     penalties and the mask applied to a copy; the token drawn with the
//     request's (seed, position, draw_stream); the constraint advanced; and
//     jump-forward: the tokens the constraint then forces, appended unsampled.
//
// Thread-safety: one RowSampler per thread (Sample uses a scratch row).
// Calls for one context must not overlap; FillMask of one context may run
// while other contexts are prepared or sampled.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runner/sampling_context.h"
#include "sampling/logprobs.h"
#include "sampling/token_bitmask.h"
#include "scheduler/step_plan.h"
#include "spec/drafter.h"

namespace deepinfer {

struct SampledRow {
  RequestId request_id = 0;
  // The sampled tokens: one, or for a verification row 1 + the accepted
  // drafts (the last is the first sample that differed from its draft, or
  // the bonus token after the last draft).
  std::vector<int32_t> tokens;
  std::vector<TokenLogprob> logprobs;  // one per sampled token when the request asked for logprobs
  std::string error;                   // non-empty: the request cannot continue
  std::vector<int32_t> forced;         // jump-forward tokens after `tokens` (the constraint accepted them)
  int32_t num_drafts = 0;              // drafts this row verified (tokens.size() - 1 of them accepted)
  DraftProposal proposal;              // drafts continuing tokens + forced, for the next step
};

class RowSampler {
 public:
  // jump_forward: append forced tokens after a sampled one (not for requests
  // that ask for logprobs: forced tokens have none).
  RowSampler(int64_t vocab, bool jump_forward);

  // Before the forward pass of a sampling row. Leaves *mask empty for an
  // unconstrained request; else sizes it to the vocabulary (one bit per id)
  // and returns true when FillMask must still fill it, false when it is final
  // (finish-soon already chose the token).
  // REQUIRES: ctx.request holds exactly the tokens before the row's first
  // sampled position (the engine's launch protocol guarantees it).
  bool Prepare(const ScheduledSequence& seq, SamplingContext& ctx, TokenBitmask* mask) const;
  // The constraint's allowed tokens into a mask Prepare asked to fill.
  void FillMask(SamplingContext& ctx, TokenBitmask* mask) const;

  // After the forward pass: the row's token(s) (see the file comment).
  // `logits` is the row's f32 [1 + num_draft_tokens, vocab]; `mask` is
  // Prepare's for the first sampled position (null when it left it empty).
  SampledRow Sample(const ScheduledSequence& seq, SamplingContext& ctx, const float* logits,
                    const TokenBitmask* mask);

 private:
  // Prepare's mask decision for a request with num_outputs outputs so far.
  bool DecideMask(SamplingContext& ctx, int64_t num_outputs, TokenBitmask* mask) const;
  bool JumpsForward(const SamplingContext& ctx) const {
    return jump_forward_ && ctx.constraint && ctx.logprobs < 0;
  }
  // The row after logit_bias, penalties (over the outputs and out's tokens)
  // and the mask: logits itself when none applies, else scratch_.
  const float* Adjusted(SamplingContext& ctx, const float* logits, const TokenBitmask* mask,
                        const SampledRow& out);
  // Samples one position into *out and advances ctx; returns the token.
  // With draft_probs (the drafter's distribution there), rejection-samples
  // the draft instead of drawing afresh.
  int32_t SampleOne(SamplingContext& ctx, const float* logits, const TokenBitmask* mask, int64_t position,
                    SampledRow* out, int32_t draft = -1, const float* draft_probs = nullptr);
  // Appends the chosen token with its logprobs and advances the constraint.
  int32_t Record(SamplingContext& ctx, const float* logits, const TokenBitmask* mask, int64_t position,
                 int32_t token, SampledRow* out);

  const int64_t vocab_;
  const bool jump_forward_;
  std::vector<float> scratch_;       // one adjusted row
  std::vector<float> target_probs_;  // rejection sampling: the target's distribution at one position
  std::vector<int32_t> outputs_;     // committed outputs + this row's samples, for penalties
};

}  // namespace deepinfer
