// GrammarMatcher: per-request state of constrained decoding.
//
// Feed it the tokens the sampler picked (AcceptToken); ask it which tokens
// may come next (FillNextTokenBitmask); take tokens back after a rejected
// speculative draft (Rollback). A token is allowed iff some string the
// grammar accepts starts with (everything accepted so far + its bytes); EOS
// ids are allowed iff everything accepted so far is a complete match.
//
// Cost: AcceptToken is O(token bytes x Earley set size). The mask is the
// union of cached per-position masks plus a real parse of the few
// "uncertain" tokens, sharing prefixes (see position_mask.h).
//
// Thread-safety: none (one matcher per request); the CompiledGrammar it
// holds may be shared. Errors: a disallowed token returns false and leaves
// the state unchanged.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/earley.h"
#include "sampling/token_bitmask.h"

namespace deepinfer::grammar {

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar);

  // Consumes one token. EOS is accepted only when IsAccepting(); after it
  // the matcher is terminated and accepts nothing more (until Rollback).
  bool AcceptToken(int32_t token_id);
  // Consumes raw bytes as one step (for tests and jump-forward text);
  // counts as one token for Rollback.
  bool AcceptBytes(std::string_view bytes);
  // Undoes the last `num_tokens` accepted tokens (clamped to what exists).
  void Rollback(int num_tokens);
  void Reset();

  // Overwrites *mask with the ids allowed next, resized to vocab().size().
  // A terminated matcher allows nothing.
  void FillNextTokenBitmask(TokenBitmask* mask);

  bool IsAccepting() const { return !terminated_ && parser_.CanEnd(); }
  bool IsTerminated() const { return terminated_; }
  // True if no byte can follow (the only continuation is EOS).
  bool IsCompleted() const;
  // Jump-forward: the longest byte string every continuation starts with
  // (each step has exactly one possible next byte and the grammar cannot
  // end there), at most `max_bytes`. Leaves the state unchanged.
  std::string ForcedBytes(size_t max_bytes = 256);
  // Finish-soon: a shortest byte string after which the output may end
  // (empty if it may end now or the matcher is terminated), at most
  // `max_bytes`. For an engine whose token budget runs out. Leaves the
  // state unchanged. Cost: a few Earley steps per byte tried.
  std::string ShortestCompletion(size_t max_bytes = 4096);
  size_t num_tokens() const { return history_.size(); }

  const CompiledGrammar& grammar() const { return *grammar_; }

 private:
  // Checks candidate tokens (sorted indices, ascending) by real parsing.
  void CheckCandidates(const std::vector<uint32_t>& sorted_indices, TokenBitmask* mask);

  std::shared_ptr<const CompiledGrammar> grammar_;
  EarleyParser parser_;
  // Per accepted token: number of Earley sets before it; kEosMark for EOS.
  std::vector<size_t> history_;
  bool terminated_ = false;
  std::vector<uint32_t> positions_;   // scratch
  std::vector<uint32_t> candidates_;  // scratch
};

}  // namespace deepinfer::grammar
