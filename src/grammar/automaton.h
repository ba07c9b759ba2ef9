// GrammarAutomaton: the vocabulary-independent compiled form of a Grammar.
//
// Each rule becomes a finite automaton over two kinds of edge labels: byte
// ranges, and references to other rules (a recursive transition network).
// A rule's automaton is determinized when that stays under a state budget,
// else it is kept as an epsilon-free NFA; the matcher (earley.h) handles
// both. All rules' states live in one global numbering, stored CSR-style:
// state s owns byte_edges[byte_edge_begin[s] .. byte_edge_begin[s+1]) and
// likewise for rule_edges.
//
// Rules that are deterministic and reference no other rule ("terminal"
// rules, e.g. a JSON string) additionally get a dense 256-entry transition
// table per state, which the mask precomputation walks at a few ns a byte.
//
// Build guarantees: every rule edge points to a productive rule and every
// state can still reach a final state of its rule, so any live parse can be
// completed (the mask relies on this). No recursion depth depends on input
// beyond kMaxExprDepth, which is checked and reported as an error.
//
// Immutable after BuildAutomaton; safe to share across threads.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "grammar/grammar.h"

namespace deepinfer::grammar {

inline constexpr uint32_t kNoState = 0xFFFFFFFFu;

struct BuildLimits {
  size_t max_nfa_states = 1'000'000;        // Thompson states over all rules
  size_t max_dfa_states_per_rule = 131072;  // a bounded string of ~5000 characters
  size_t max_dense_states_per_rule = 32768;
  size_t max_minimize_states = 1000;  // larger DFAs are kept unminimized
  double time_limit_s = 5.0;          // whole front end + build
  int max_expr_depth = 2000;          // nesting of expressions
};

struct ByteEdge {
  uint8_t lo;
  uint8_t hi;
  uint32_t target;
};

struct RuleEdge {
  RuleId rule;
  uint32_t target;
};

struct GrammarAutomaton {
  uint32_t num_states() const { return static_cast<uint32_t>(is_final.size()); }

  std::vector<uint32_t> byte_edge_begin;  // [num_states + 1]
  std::vector<ByteEdge> byte_edges;
  std::vector<uint32_t> rule_edge_begin;  // [num_states + 1]
  std::vector<RuleEdge> rule_edges;
  std::vector<uint8_t> is_final;       // [num_states]
  std::vector<RuleId> state_rule;      // [num_states]
  std::vector<uint32_t> rule_start;    // [num_rules]
  std::vector<uint32_t> rule_end;      // [num_rules] one past the last state of the rule
  std::vector<uint8_t> rule_nullable;  // [num_rules] derives the empty string
  std::vector<uint8_t> rule_terminal;  // [num_rules] has dense tables
  // [num_rules] deterministic, without rule references: terminal rules and
  // those too large for dense tables (e.g. a long bounded string).
  std::vector<uint8_t> rule_deterministic;
  std::vector<uint32_t> dense_offset;  // [num_states] index into dense_next or kNoState
  std::vector<uint32_t> dense_next;    // 256 per dense state, kNoState = no edge
  // [num_rules] for terminal rules: the rule's automaton serialized with
  // rule-local state numbers (empty otherwise). Equal signatures mean equal
  // mask-cache entries, so they key the cross-grammar cache (mask_cache.h).
  std::vector<std::string> terminal_signature;
  // Per dense state: the 256-bit set of bytes that loop back to it (e.g.
  // plain characters inside a string), so a mask walk can accept a whole
  // vocabulary subtree made of such bytes at once. 4 words per dense state,
  // indexed like dense_next (dense_offset / 64).
  std::vector<uint64_t> dense_loop;
  std::vector<std::string> rule_names;
  RuleId root = -1;

  // Transition of a dense state (terminal rule) on byte b.
  uint32_t DenseNext(uint32_t state, uint8_t b) const { return dense_next[dense_offset[state] + b]; }
  const uint64_t* DenseLoop(uint32_t state) const { return &dense_loop[dense_offset[state] / 64]; }
  bool RuleDeterministic(RuleId r) const {
    return static_cast<size_t>(r) < rule_deterministic.size() && rule_deterministic[r];
  }
  // Transition of a state of a deterministic rule on byte b: the dense
  // table when there is one, else a scan of its (disjoint) byte edges.
  uint32_t DeterministicNext(uint32_t state, uint8_t b) const {
    if (dense_offset[state] != kNoState) return DenseNext(state, b);
    for (uint32_t e = byte_edge_begin[state]; e < byte_edge_begin[state + 1]; ++e) {
      if (byte_edges[e].lo <= b && b <= byte_edges[e].hi) return byte_edges[e].target;
    }
    return kNoState;
  }
};

// Deadline shared by a whole compile (front end + build).
class Deadline {
 public:
  explicit Deadline(double seconds);
  bool Expired() const;
  double seconds() const { return seconds_; }

 private:
  double seconds_;
  int64_t end_ns_;
};

// Errors: kInvalidArgument if the grammar matches nothing (names the root),
// kResourceExhausted when a limit in `limits` is hit (names the limit).
StatusOr<GrammarAutomaton> BuildAutomaton(const Grammar& grammar, const BuildLimits& limits,
                                          const Deadline& deadline);

}  // namespace deepinfer::grammar
