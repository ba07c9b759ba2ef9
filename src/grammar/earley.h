// EarleyParser: incremental recognizer over bytes for a GrammarAutomaton.
//
// The parse state is a stack of Earley sets, one per consumed byte (set 0
// before any byte). An item is (automaton state, origin set): "inside the
// rule owning `state`, which started at set `origin`". Rule references are
// predicted and completed inside a set (with the Aycock-Horspool shortcut
// for nullable rules), so nesting lives in the data, never in the C++ call
// stack: no recursion depth depends on the input.
//
// Rolling back is popping sets (PopTo), which is also how the token-mask
// walk tries a byte and undoes it. Sets below the top are immutable.
//
// Thread-safety: none; one parser per request. The automaton must outlive it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "grammar/automaton.h"

namespace deepinfer::grammar {

struct EarleyItem {
  uint32_t state;
  uint32_t origin;
};

class EarleyParser {
 public:
  // Origin of the seed item in ResetAtState: its rule's completion is only
  // recorded (SentinelCompleted), there is no parent to advance.
  static constexpr uint32_t kSentinelOrigin = 0xFFFFFFFFu;

  explicit EarleyParser(const GrammarAutomaton* automaton);

  // Set 0 = the start of the root rule.
  void Reset();
  // Set 0 = the single item (state, kSentinelOrigin), not closed: the first
  // byte can only be scanned by `state`'s own byte edges.
  void ResetAtState(uint32_t state);

  // Consumes one byte. On success pushes a new set and returns true; if no
  // item survives, returns false and leaves the parser unchanged.
  bool Advance(uint8_t byte);
  // Pops sets until `num_sets` remain (num_sets >= 1).
  void PopTo(size_t num_sets);
  size_t num_sets() const { return set_begin_.size(); }

  // The root rule has matched everything consumed so far.
  bool CanEnd() const { return (flags_.back() & kFlagRootDone) != 0; }
  // In ResetAtState mode: the seed's rule completed in the top set.
  bool SentinelCompleted() const { return (flags_.back() & kFlagSentinelDone) != 0; }

  // Items of set k (k < num_sets()).
  std::span<const EarleyItem> SetItems(size_t k) const {
    uint32_t end = k + 1 < set_begin_.size() ? set_begin_[k + 1] : static_cast<uint32_t>(items_.size());
    return {items_.data() + set_begin_[k], end - set_begin_[k]};
  }
  // Items of the top set.
  std::span<const EarleyItem> TopItems() const {
    return {items_.data() + set_begin_.back(), items_.size() - set_begin_.back()};
  }

 private:
  static constexpr uint8_t kFlagRootDone = 1;
  static constexpr uint8_t kFlagSentinelDone = 2;

  void StartSet();
  void Add(uint32_t state, uint32_t origin);
  void CloseTopSet();

  const GrammarAutomaton& a_;
  std::vector<EarleyItem> items_;
  std::vector<uint32_t> set_begin_;  // start of each set in items_
  std::vector<uint8_t> flags_;       // per set
  // Open-addressing dedup table for the set being built (keys: state<<32|origin).
  std::vector<uint64_t> table_;
  std::vector<uint32_t> used_slots_;
};

}  // namespace deepinfer::grammar
