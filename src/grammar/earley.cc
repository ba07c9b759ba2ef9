#include "grammar/earley.h"

namespace deepinfer::grammar {

namespace {
constexpr uint64_t kEmptySlot = ~uint64_t{0};

inline uint64_t Key(uint32_t state, uint32_t origin) { return (uint64_t{state} << 32) | origin; }

inline uint32_t HashKey(uint64_t k) {
  k *= 0x9E3779B97F4A7C15ull;
  return static_cast<uint32_t>(k >> 32);
}
}  // namespace

EarleyParser::EarleyParser(const GrammarAutomaton* automaton) : a_(*automaton) {
  table_.assign(64, kEmptySlot);
  Reset();
}

void EarleyParser::StartSet() {
  for (uint32_t slot : used_slots_) table_[slot] = kEmptySlot;
  used_slots_.clear();
  set_begin_.push_back(static_cast<uint32_t>(items_.size()));
  flags_.push_back(0);
}

void EarleyParser::Add(uint32_t state, uint32_t origin) {
  // Grow the table to keep load <= 1/2 (rehash only the current set).
  if ((used_slots_.size() + 1) * 2 > table_.size()) {
    for (uint32_t slot : used_slots_) table_[slot] = kEmptySlot;
    used_slots_.clear();
    table_.assign(table_.size() * 2, kEmptySlot);
    uint32_t mask = static_cast<uint32_t>(table_.size() - 1);
    for (size_t i = set_begin_.back(); i < items_.size(); ++i) {
      uint64_t k = Key(items_[i].state, items_[i].origin);
      uint32_t slot = HashKey(k) & mask;
      while (table_[slot] != kEmptySlot) slot = (slot + 1) & mask;
      table_[slot] = k;
      used_slots_.push_back(slot);
    }
  }
  uint64_t k = Key(state, origin);
  uint32_t mask = static_cast<uint32_t>(table_.size() - 1);
  uint32_t slot = HashKey(k) & mask;
  while (table_[slot] != kEmptySlot) {
    if (table_[slot] == k) return;
    slot = (slot + 1) & mask;
  }
  table_[slot] = k;
  used_slots_.push_back(slot);
  items_.push_back({state, origin});
}

// Predict and complete until the top set is closed. Items appended while
// iterating are processed by the same loop (indices, not iterators).
void EarleyParser::CloseTopSet() {
  const uint32_t k = static_cast<uint32_t>(set_begin_.size() - 1);
  for (size_t j = set_begin_.back(); j < items_.size(); ++j) {
    const EarleyItem it = items_[j];
    if (a_.is_final[it.state]) {
      RuleId r = a_.state_rule[it.state];
      if (it.origin == kSentinelOrigin) {
        flags_.back() |= kFlagSentinelDone;
      } else {
        if (r == a_.root && it.origin == 0) flags_.back() |= kFlagRootDone;
        // Empty completions (origin == k) are covered by the nullable
        // shortcut at prediction time.
        if (it.origin != k) {
          uint32_t end = set_begin_[it.origin + 1];
          for (uint32_t i = set_begin_[it.origin]; i < end; ++i) {
            const EarleyItem parent = items_[i];
            for (uint32_t e = a_.rule_edge_begin[parent.state]; e < a_.rule_edge_begin[parent.state + 1];
                 ++e) {
              if (a_.rule_edges[e].rule == r) Add(a_.rule_edges[e].target, parent.origin);
            }
          }
        }
      }
    }
    for (uint32_t e = a_.rule_edge_begin[it.state]; e < a_.rule_edge_begin[it.state + 1]; ++e) {
      const RuleEdge edge = a_.rule_edges[e];
      Add(a_.rule_start[edge.rule], k);
      if (a_.rule_nullable[edge.rule]) Add(edge.target, it.origin);
    }
  }
}

void EarleyParser::Reset() {
  items_.clear();
  set_begin_.clear();
  flags_.clear();
  StartSet();
  Add(a_.rule_start[a_.root], 0);
  CloseTopSet();
}

void EarleyParser::ResetAtState(uint32_t state) {
  items_.clear();
  set_begin_.clear();
  flags_.clear();
  StartSet();
  // No closure: the first byte is scanned by the seed's own edges only.
  // Tokens that start inside rules the seed predicts are the business of
  // those rules' own positions (see position_mask.h).
  Add(state, kSentinelOrigin);
}

bool EarleyParser::Advance(uint8_t byte) {
  const uint32_t prev_begin = set_begin_.back();
  const uint32_t prev_end = static_cast<uint32_t>(items_.size());
  StartSet();
  for (uint32_t i = prev_begin; i < prev_end; ++i) {
    const EarleyItem it = items_[i];
    for (uint32_t e = a_.byte_edge_begin[it.state]; e < a_.byte_edge_begin[it.state + 1]; ++e) {
      const ByteEdge& edge = a_.byte_edges[e];
      if (edge.lo <= byte && byte <= edge.hi) Add(edge.target, it.origin);
    }
  }
  if (items_.size() == prev_end) {
    set_begin_.pop_back();
    flags_.pop_back();
    return false;
  }
  CloseTopSet();
  return true;
}

void EarleyParser::PopTo(size_t num_sets) {
  if (num_sets >= set_begin_.size() || num_sets == 0) return;
  items_.resize(set_begin_[num_sets]);
  set_begin_.resize(num_sets);
  flags_.resize(num_sets);
}

}  // namespace deepinfer::grammar
