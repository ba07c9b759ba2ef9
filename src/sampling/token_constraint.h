// TokenConstraint: what the sampler needs from structured output, without
// knowing grammars. The engine holds one per constrained request; the grammar
// module implements it (grammar/grammar_constraint.h).
//
// Per step: FillAllowedMask (may run on another thread while the forward pass
// executes), then the sampler masks disallowed logits to -inf, samples, and the
// engine calls Accept with the chosen token. Speculative decoding calls
// Rollback for rejected drafts. ForcedTokens lets the engine jump forward when
// only one continuation is possible.
#pragma once

#include <cstdint>
#include <vector>

#include "sampling/token_bitmask.h"

namespace deepinfer {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // Overwrites *mask (its size() is the model's vocabulary): bit id set iff
  // token id may come next; ids the constraint's vocabulary lacks are clear.
  // End-of-generation ids are set only where the constraint is complete.
  virtual void FillAllowedMask(TokenBitmask* mask) = 0;
  // Advances past `token`. false if it was not allowed (state unchanged).
  virtual bool Accept(int32_t token) = 0;
  // Takes back the last n accepted tokens.
  virtual void Rollback(int n) = 0;
  // True once nothing but end-of-generation may follow.
  virtual bool IsComplete() const = 0;
  // Tokens that must come next whatever is sampled (jump-forward), empty if
  // there is a choice. Must not change state.
  virtual std::vector<int32_t> ForcedTokens() { return {}; }
  // Finish-soon: tokens after which the constraint is complete (a shortest
  // completion), each allowed in turn; for a request whose token budget is
  // running out. Empty if already complete or unsupported. Must not change state.
  virtual std::vector<int32_t> FinishTokens() { return {}; }
};

}  // namespace deepinfer

namespace deepinfer {

// Sets logits[id] = -inf for every id whose bit is clear in `mask`
// (logits holds mask.size() floats).
inline void ApplyAllowedMask(const TokenBitmask& mask, float* logits) {
  const auto vocab = static_cast<int32_t>(mask.size());
  for (int32_t id = 0; id < vocab; ++id) {
    if (!mask.Test(id)) logits[id] = -__builtin_inff();
  }
}

}  // namespace deepinfer
