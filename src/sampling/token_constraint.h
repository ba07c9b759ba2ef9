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

namespace deepinfer {

class TokenConstraint {
 public:
  virtual ~TokenConstraint() = default;
  // Writes ceil(vocab / 32) words: bit (id % 32) of word (id / 32) set iff
  // token id may come next. End-of-generation ids are set only where the
  // constraint is complete.
  virtual void FillAllowedMask(uint32_t* words, int64_t vocab) = 0;
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

// Sets logits[id] = -inf for every id whose bit is clear in `words`
// (ceil(vocab / 32) words, layout as FillAllowedMask).
inline void ApplyAllowedMask(const uint32_t* words, float* logits, int64_t vocab) {
  for (int64_t id = 0; id < vocab; ++id) {
    if (!((words[id >> 5] >> (id & 31)) & 1u)) logits[id] = -__builtin_inff();
  }
}

}  // namespace deepinfer
