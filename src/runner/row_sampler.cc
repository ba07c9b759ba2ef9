#include "runner/row_sampler.h"

#include <algorithm>
#include <cstring>
#include <span>

#include "core/check.h"
#include "sampling/penalties.h"
#include "sampling/philox.h"
#include "sampling/rejection.h"

namespace deepinfer {
namespace {

// The position the row's first sampled token will occupy (a verification row
// samples there and at one position per draft after it).
int64_t SampledPosition(const ScheduledSequence& seq) {
  return seq.start_pos + static_cast<int64_t>(seq.tokens.size()) - seq.num_draft_tokens;
}

// Brings the constraint to exactly the committed outputs: rolls back what
// the scheduler did not keep (jump-forward tokens it dropped) and accepts
// what it has not seen yet.
void SyncConstraint(SamplingContext& ctx) {
  const std::span<const int32_t> outputs = ctx.request->OutputTokens();
  const auto want = static_cast<int64_t>(outputs.size());
  if (ctx.constraint_accepted > want) {
    ctx.constraint->Rollback(static_cast<int>(ctx.constraint_accepted - want));
    ctx.constraint_accepted = want;
  }
  while (ctx.constraint_accepted < want) {
    ctx.constraint->Accept(outputs[static_cast<size_t>(ctx.constraint_accepted)]);
    ++ctx.constraint_accepted;
  }
}

// Finish-soon: when a constrained request's remaining output budget is about
// to fall short of the shortest valid ending, the next token is that
// ending's first (else an output cut at max_tokens would be invalid, e.g.
// JSON with an unclosed string). -1 when there is room (or no ending is known).
// The window bounds how often the completion search runs.
int32_t FinishSoonToken(SamplingContext& ctx, int64_t num_outputs) {
  constexpr int64_t kWindow = 64;
  const int64_t remaining = ctx.output_budget - num_outputs;
  if (remaining > kWindow || ctx.constraint->IsComplete()) return -1;
  const std::vector<int32_t> finish = ctx.constraint->FinishTokens();
  // One token of slack: a path found in bytes may tokenize one token longer
  // after the next step's choice.
  if (finish.empty() || static_cast<int64_t>(finish.size()) + 1 < remaining) return -1;
  return finish.front();
}

// The draw streams of rejection sampling's two uniforms, apart from the
// target's (small numbers) and the draft's independent one (0x40000000).
constexpr uint32_t kKeepDraw = 0x20000000u;
constexpr uint32_t kResidualDraw = 0x10000000u;

// Whether the row's drafts are the rejection drafts the context keeps the
// distributions of (the latest proposal, at the row's first sampled position).
bool HasRejectionDrafts(const SamplingContext& ctx, int64_t first, std::span<const int32_t> drafts) {
  return !drafts.empty() && !ctx.draft_probs.empty() && ctx.draft_position == first &&
         drafts.size() <= ctx.draft_tokens.size() &&
         std::equal(drafts.begin(), drafts.end(), ctx.draft_tokens.begin());
}

}  // namespace

RowSampler::RowSampler(int64_t vocab, bool jump_forward)
    : vocab_(vocab), jump_forward_(jump_forward), scratch_(static_cast<size_t>(vocab)) {}

bool RowSampler::Prepare(const ScheduledSequence& seq, SamplingContext& ctx, TokenBitmask* mask) const {
  DI_CHECK_MSG(ctx.request != nullptr && ctx.request->NumKnownTokens() == SampledPosition(seq),
               "a sampling row's request must hold exactly the tokens before its sampled position");
  if (ctx.constraint) SyncConstraint(ctx);
  return DecideMask(ctx, ctx.request->NumOutputTokens(), mask);
}

bool RowSampler::DecideMask(SamplingContext& ctx, int64_t num_outputs, TokenBitmask* mask) const {
  mask->Reset(0);
  if (!ctx.constraint) return false;
  mask->Reset(static_cast<size_t>(vocab_));
  if (const int32_t finish = FinishSoonToken(ctx, num_outputs); finish >= 0 && finish < vocab_) {
    mask->Set(finish);  // steer to a valid ending
    return false;
  }
  return true;
}

void RowSampler::FillMask(SamplingContext& ctx, TokenBitmask* mask) const {
  ctx.constraint->FillAllowedMask(mask);
}

const float* RowSampler::Adjusted(SamplingContext& ctx, const float* logits, const TokenBitmask* mask,
                                  const SampledRow& out) {
  if (mask == nullptr && !HasLogitAdjustments(ctx.params)) return logits;
  std::memcpy(scratch_.data(), logits, scratch_.size() * sizeof(float));
  // Penalties see the committed outputs and what this row sampled before.
  std::span<const int32_t> outputs = ctx.request->OutputTokens();
  if (!out.tokens.empty()) {
    outputs_.assign(outputs.begin(), outputs.end());
    outputs_.insert(outputs_.end(), out.tokens.begin(), out.tokens.end());
    outputs = outputs_;
  }
  ApplyLogitAdjustments(ctx.params, ctx.request->PromptTokens(), outputs, scratch_.data(), vocab_);
  if (mask != nullptr) ApplyAllowedMask(*mask, scratch_.data());
  return scratch_.data();
}

int32_t RowSampler::SampleOne(SamplingContext& ctx, const float* logits, const TokenBitmask* mask,
                              int64_t position, SampledRow* out, int32_t draft, const float* draft_probs) {
  const float* work = Adjusted(ctx, logits, mask, *out);
  int32_t token = -1;
  if (draft_probs != nullptr) {
    // Rejection sampling against the draft's distribution (sampling/rejection.h).
    target_probs_.resize(static_cast<size_t>(vocab_));
    SamplingProbabilities(work, vocab_, ctx.params, target_probs_.data());
    const float p_d = target_probs_[static_cast<size_t>(draft)];
    if (KeepDraft(p_d, draft_probs[draft],
                  UniformAt(ctx.params.seed, static_cast<uint64_t>(position), ctx.draw_stream ^ kKeepDraw))) {
      token = draft;
    } else {
      token = SampleResidual(
          target_probs_.data(), draft_probs, vocab_,
          UniformAt(ctx.params.seed, static_cast<uint64_t>(position), ctx.draw_stream ^ kResidualDraw));
    }
  } else {
    token = SampleToken(work, vocab_, ctx.params, static_cast<uint64_t>(position), ctx.draw_stream);
  }
  return Record(ctx, logits, mask, position, token, out);
}

int32_t RowSampler::Record(SamplingContext& ctx, const float* logits, const TokenBitmask* mask,
                           int64_t position, int32_t token, SampledRow* out) {
  out->tokens.push_back(token);
  if (mask != nullptr && !mask->Test(token)) {
    out->error = "structured output: the constraint allows no token at position " + std::to_string(position);
  }
  if (ctx.logprobs >= 0) {
    LogprobResult lp = ComputeLogprobs(logits, vocab_, token, ctx.logprobs);
    out->logprobs.push_back(TokenLogprob{token, lp.logprob, std::move(lp.top)});
  }
  if (ctx.constraint && out->error.empty()) {
    if (ctx.constraint->Accept(token)) {
      ++ctx.constraint_accepted;
    } else {
      out->error = "structured output: the constraint rejected token " + std::to_string(token);
    }
  }
  return token;
}

SampledRow RowSampler::Sample(const ScheduledSequence& seq, SamplingContext& ctx, const float* logits,
                              const TokenBitmask* mask) {
  SampledRow out;
  out.request_id = seq.request_id;
  out.num_drafts = seq.num_draft_tokens;
  const int64_t first = SampledPosition(seq);
  const auto num_drafts = static_cast<size_t>(seq.num_draft_tokens);
  const std::span<const int32_t> drafts = std::span<const int32_t>(seq.tokens).last(num_drafts);
  // Verification: position first + j is sampled exactly as a plain decode of
  // it would be — same logits (the forward pass is invariant to how positions
  // are grouped), same adjustments, mask and (seed, position, stream) draw —
  // and the row goes on only while the sample equals the draft that the next
  // logits row was computed from. So the output is token for token the one
  // without speculation. A constrained row stops where the constraint would
  // force tokens (plain decoding appends them unsampled) or is complete.
  // Drafts sampled from the drafter's own distribution are verified by
  // rejection sampling instead: distribution-exact, not the same tokens.
  const bool rejection_drafts = HasRejectionDrafts(ctx, first, drafts);
  TokenBitmask later_mask;
  for (size_t j = 0;; ++j) {
    const float* row_logits = logits + j * static_cast<size_t>(vocab_);
    const TokenBitmask* row_mask = mask;
    if (j > 0 && ctx.constraint) {
      row_mask = nullptr;
      const int64_t num_outputs = ctx.request->NumOutputTokens() + static_cast<int64_t>(out.tokens.size());
      if (DecideMask(ctx, num_outputs, &later_mask)) FillMask(ctx, &later_mask);
      if (!later_mask.empty()) row_mask = &later_mask;
    }
    const bool rejection = rejection_drafts && j < num_drafts;
    const int32_t token = SampleOne(
        ctx, row_logits, row_mask, first + static_cast<int64_t>(j), &out, rejection ? drafts[j] : -1,
        rejection ? ctx.draft_probs.data() + j * static_cast<size_t>(vocab_) : nullptr);
    if (!out.error.empty() || j == num_drafts || token != drafts[j]) break;
    if (ctx.constraint &&
        (ctx.constraint->IsComplete() || (JumpsForward(ctx) && !ctx.constraint->ForcedTokens().empty()))) {
      break;
    }
  }
  if (num_drafts > 0) {  // the proposal is used up
    ctx.draft_position = -1;
    ctx.draft_tokens.clear();
    ctx.draft_probs.clear();
  }
  if (JumpsForward(ctx) && out.error.empty() && !ctx.constraint->IsComplete()) {
    // The scheduler may drop these (SequenceOutput::num_forced); the next
    // row's Prepare then rolls the constraint back to what it kept.
    for (int32_t token : ctx.constraint->ForcedTokens()) {
      if (!ctx.constraint->Accept(token)) break;
      ++ctx.constraint_accepted;
      out.forced.push_back(token);
    }
  }
  return out;
}

}  // namespace deepinfer
