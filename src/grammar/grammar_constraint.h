// GrammarConstraint: the TokenConstraint (sampling/token_constraint.h) backed
// by a GrammarMatcher over a CompiledGrammar. Made by StructuredOutput.
//
// The model's logit count may differ from the tokenizer's vocabulary (padded
// embeddings): ids past the vocabulary are never allowed.
//
// Thread-safety: one constraint per request; its methods may be called from
// different threads (the mask is filled on a worker while the forward pass
// runs) — a mutex serializes them, it is uncontended in normal use.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/matcher.h"
#include "sampling/token_constraint.h"

namespace deepinfer::grammar {

class GrammarConstraint : public TokenConstraint {
 public:
  explicit GrammarConstraint(std::shared_ptr<const CompiledGrammar> grammar);

  void FillAllowedMask(TokenBitmask* mask) override;
  bool Accept(int32_t token) override;
  void Rollback(int n) override;
  bool IsComplete() const override;
  // Jump-forward: the bytes every continuation shares (ForcedBytes), split
  // into tokens by greedy longest match over the vocabulary. Empty when the
  // next byte is a choice or the constraint may end here.
  std::vector<int32_t> ForcedTokens() override;
  // Finish-soon: tokens spelling a shortest completion (the matcher's
  // ShortestCompletion split by greedy longest match), after which the
  // constraint is complete; empty if it already is. Each token is allowed
  // in turn, so an engine out of budget can append them without sampling.
  // State is unchanged.
  std::vector<int32_t> FinishTokens() override;

 private:
  std::shared_ptr<const CompiledGrammar> grammar_;
  mutable std::mutex mutex_;
  GrammarMatcher matcher_;
  TokenBitmask scratch_;  // the vocabulary-sized mask when the model's size differs
};

// Greedy longest-match split of `bytes` into maskable vocabulary tokens.
// Returns the ids of the longest prefix that could be covered (all of it
// unless some byte has no single-byte token and no longer token fits).
std::vector<int32_t> GreedyTokenize(const Vocabulary& vocab, std::string_view bytes);

}  // namespace deepinfer::grammar
