// ByteClassTrie: the vocabulary trie over byte classes of one rule, for the
// first-visit masks of positions that a string profile cannot answer.
//
// A rule that treats many bytes alike (a `pattern` such as `^[A-Za-z ]+$`,
// a character class with a count) is walked at every first visit over the
// whole byte trie of the vocabulary (~1-1.5 ms on 128k tokens), although its
// automaton cannot tell `cat` from `dog`. Bytes with the same transition
// from every state of the rule form a class (RuleByteClasses); replacing
// each token's bytes by their classes merges such tokens into one path, and
// the walk over that trie (preorder, a DFA state per depth) visits a few
// thousand nodes instead of ~10^5, then expands accepted nodes to tokens.
//
// Layout (preorder node numbering, node 0 the root = empty string):
//   node_class[n]   class of the edge into n; node_depth[n] its length
//   subtree_end[n]  one past the last node of n's subtree
//   token_begin[n]  index into `tokens`: the tokens whose class string ends
//                   at n come first, then those of its subtree in preorder,
//                   so a subtree's tokens are [token_begin[n],
//                   token_begin[subtree_end[n]]) (token_begin has one more
//                   entry, = tokens.size())
//   tokens          sorted token indices (Vocabulary::sorted_ids order)
//
// Built at compile time by CompiledGrammar for the rules that need one
// (~2 ms on 128k tokens: one pass over the byte trie); immutable
// afterwards, safe to share across threads.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "grammar/automaton.h"
#include "grammar/vocabulary.h"

namespace deepinfer::grammar {

// A partition of the bytes for the states of a rule that are reached
// without a backslash (`holds`). JSON string escapes (`\n`, `\u` and four
// hex digits) split digits and letters into many classes once a pattern
// excludes characters (`.`, `\s`), yet few tokens contain a backslash: the
// partition leaves the escape states out, and the backslash is a class of
// its own (`run_class`) under which tokens are run byte by byte.
struct ByteClasses {
  std::array<uint8_t, 256> class_of{};
  std::vector<uint8_t> representative;  // a byte of each class
  // Per local state of the rule (state - rule_start): 1 if the partition
  // holds there. Closed under every byte but the backslash.
  std::vector<uint8_t> holds;
  uint8_t run_class = 0;  // class_of['\\'] (bytes equal to it everywhere may share it)
  size_t size() const { return representative.size(); }
};

// Partition of the bytes of dense rule `rule`: b and b' share a class iff
// every state reachable from `from` (a state of the rule; kNoState: its
// start) without a backslash has the same transition on both; the
// backslash starts its own class. From a later state the partition is
// often much coarser (after `^(feat|fix)\(` the keywords' letters no
// longer differ). nullopt when the rule is not dense or has more than
// `max_classes` classes.
std::optional<ByteClasses> RuleByteClasses(const GrammarAutomaton& a, RuleId rule, size_t max_classes,
                                           uint32_t from = kNoState);

class ByteClassTrie {
 public:
  // Null when the trie would exceed `max_nodes` nodes (too little merging
  // to beat the byte walk); the build stops as soon as it does.
  static std::unique_ptr<const ByteClassTrie> Build(const Vocabulary& vocab, const ByteClasses& classes,
                                                    uint32_t max_nodes);

  const ByteClasses& classes() const { return classes_; }
  uint32_t num_nodes() const { return static_cast<uint32_t>(node_class_.size()); }
  uint8_t node_class(uint32_t n) const { return node_class_[n]; }
  uint16_t node_depth(uint32_t n) const { return node_depth_[n]; }
  uint32_t subtree_end(uint32_t n) const { return subtree_end_[n]; }
  uint32_t token_begin(uint32_t n) const { return token_begin_[n]; }
  uint32_t token(uint32_t k) const { return tokens_[k]; }

 private:
  explicit ByteClassTrie(const ByteClasses& classes) : classes_(classes) {}
  bool Fill(const Vocabulary& vocab, uint32_t max_nodes);
  ByteClasses classes_;
  std::vector<uint8_t> node_class_;
  std::vector<uint16_t> node_depth_;
  std::vector<uint32_t> subtree_end_;
  std::vector<uint32_t> token_begin_;  // [num_nodes + 1]
  std::vector<uint32_t> tokens_;
};

}  // namespace deepinfer::grammar
