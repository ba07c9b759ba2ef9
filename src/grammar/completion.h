// Shortest completion: the fewest bytes that take a parse to a point where
// the grammar may end, so an engine running out of token budget can steer
// to a valid output instead of cutting it off (GrammarMatcher::
// ShortestCompletion, GrammarConstraint::FinishTokens).
//
// Per automaton state, dist[s] = fewest bytes from s to a final state of
// its rule, where a rule edge costs the rule's shortest string (a fixpoint:
// rules may recurse). A parse is an Earley set stack; the cost of ending
// from the top set is
//   min over top items (s, o):  dist[s] + up(o, rule(s))
//   up(o, r) = min over items (p, o') of set o with an edge p -r-> t:
//              dist[t] + up(o', rule(p));   up(0, root) = 0
// computed set by set (a set only refers to itself and earlier sets; within
// a set, relaxation to a fixpoint handles prediction cycles).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "grammar/automaton.h"
#include "grammar/earley.h"

namespace deepinfer::grammar {

inline constexpr uint32_t kUnreachable = 0x3FFFFFFFu;

// dist[s] for every state (kUnreachable if s cannot end its rule; the
// builder trims such states, so that only happens for unproductive input).
std::vector<uint32_t> ComputeCompletionDistances(const GrammarAutomaton& a);

// Completion costs over one parser's sets. `up` caches per-set results; a
// set below the top never changes, so the cache stays valid while the
// caller only pushes sets above `valid_sets()` (call Truncate after PopTo).
class CompletionCosts {
 public:
  CompletionCosts(const GrammarAutomaton* a, const std::vector<uint32_t>* dist) : a_(*a), dist_(*dist) {}

  // Fewest bytes to an accepting point from the parser's top set.
  uint32_t Cost(const EarleyParser& parser);
  void Truncate(size_t num_sets) {
    if (up_.size() > num_sets) up_.resize(num_sets);
  }

 private:
  void ComputeSet(const EarleyParser& parser, size_t k);
  uint32_t Up(size_t set, RuleId rule) const;

  const GrammarAutomaton& a_;
  const std::vector<uint32_t>& dist_;
  // Per set: (rule, cost) pairs, sorted by rule.
  std::vector<std::vector<std::pair<RuleId, uint32_t>>> up_;
};

// Bytes of a shortest completion from the parser's current state (empty if
// it may end now), at most max_bytes; the parser is left as it was.
std::string ShortestCompletion(const GrammarAutomaton& a, const std::vector<uint32_t>& dist,
                               EarleyParser* parser, size_t max_bytes);

}  // namespace deepinfer::grammar
