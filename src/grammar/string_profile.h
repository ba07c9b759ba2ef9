// Reference JSON string automaton and per-vocabulary token profiles against
// it: the cold-start shortcut for mask positions inside strings.
//
// Most expensive first visits of a mask position (a full walk of the
// vocabulary, ~1.5-3 ms on 128k tokens) are positions inside JSON strings
// that differ from the plain string only by a little:
//   * bounded strings `"` c{min,max} `"` (maxLength): one automaton state
//     per (character count, position inside a character), so every token of
//     the answer lands on a new position;
//   * additional-property keys, a trie of the declared names inside an
//     otherwise plain string;
//   * regions of patternProperties keys, unanchored `pattern` strings,
//     minLength strings: automata that track extra state (a suffix being
//     matched, a character count) which only decides whether the closing
//     quote is allowed.
// All are answered from one walk per vocabulary of the reference automaton
// U = `"` c* `"` (JsonString without bounds):
//   * StringProfiles: for every U state u and every sorted token, how the
//     token runs from u (fails / stays inside / closes the string at its
//     last byte / closes it and continues) and how many characters it
//     starts before the end or the closing quote. A bounded-string position
//     (u, count i) then classifies every token with a comparison against
//     [min - i, max - i] (see ComputeCountedMask in position_mask.h).
//   * JsonStringModel::AgreesInside: whether a state q of another automaton
//     allows exactly what a U state u allows on every path that avoids the
//     string-special bytes `"` and `\` (the closing quote and escapes, where
//     the extra state of keys, patterns or minLength shows). For the first
//     bytes b on which q's and u's successors agree, every token starting
//     with b and without a special byte runs from q as from u: its entry is
//     copied from u's profile; only the tokens with a special byte (1-2% of
//     a vocabulary) and the subtrees of the disagreeing first bytes are run
//     through q's automaton (ComputeInsideMask).
//
// Thread-safety: JsonStringModel is immutable (one per process);
// StringProfiles computes each profile once under a mutex, then entries are
// read-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "grammar/automaton.h"
#include "grammar/vocabulary.h"
#include "sampling/token_bitmask.h"

namespace deepinfer::grammar {

// How a token runs from a U state (2 low bits of a profile entry; the
// number of characters started is entry >> 2, capped at kMaxProfileChars).
enum StringRun : uint16_t {
  kRunFails = 0,        // some byte is not allowed and the string did not end
  kRunInside = 1,       // all bytes consumed inside the string
  kRunClosesAtEnd = 2,  // the closing quote is the token's last byte
  kRunClosesEarly = 3,  // the closing quote comes before the last byte
};
inline constexpr uint32_t kMaxProfileChars = 16383;

// The closing quote and the escape: the bytes at which an automaton over
// strings may depend on more than the characters so far (see AgreesInside).
inline bool IsStringSpecialByte(uint8_t b) { return b == '"' || b == '\\'; }

// A rule whose automaton is U with a character counter bounded by
// [min, max]: its local state s is U state `u[s]` after `count[s]`
// characters were started (count is meaningless for U's final state).
struct CountedStringRule {
  int64_t min = 0;
  int64_t max = 0;
  std::vector<uint32_t> u;
  std::vector<int64_t> count;
  // CountStates only: per local state, 1 if it agrees inside with its own
  // U state u[s] (AgreesInside with this counter, every path), allowing a
  // body state to refuse a character when at most `slack` characters are
  // left (<= kMaxCountSlack): a token of at most chars_left - slack
  // characters then runs as from u; longer ones up to chars_left must be
  // run (ComputeInsideMask).
  std::vector<uint8_t> agrees_inside;
  int64_t slack = 0;
};
inline constexpr int64_t kMaxCountSlack = 16;

class JsonStringModel {
 public:
  // Built on first use (a few hundred microseconds), shared by everyone.
  static const JsonStringModel& Get();

  const GrammarAutomaton& automaton() const { return u_; }
  uint32_t start() const { return start_; }  // before the opening quote
  uint32_t body() const { return body_; }    // between characters
  uint32_t end() const { return end_; }      // after the closing quote
  uint32_t num_states() const { return u_.num_states(); }

  // True if dense state `s` of `a` and U state `u` (not U's end) allow the
  // same bytes along every path of non-special bytes (IsStringSpecialByte)
  // from them, and `a` reaches no final state on those paths: a token with
  // no special byte then runs from s exactly as from u (same bytes consumed,
  // the rule never ends). On success `agreed` holds every pair (s', u')
  // explored, which agree as well. Bounded search: false when undecided.
  //
  // With `counted` (CountStates of s's rule), a character started at the
  // rule's largest count may fail in `a` where U goes on (and must): the
  // count is full. A token without special bytes then runs from s as from u
  // as long as it starts at most max - count(s) characters (a product of a
  // pattern or an excluded set with a length bound: the pattern only shows
  // at the closing quote). `max_depth` bounds the paths checked (tokens are
  // at most that many bytes); `agreed` is then filled only when no path was
  // cut off.
  bool AgreesInside(const GrammarAutomaton& a, uint32_t s, uint32_t u,
                    std::vector<std::pair<uint32_t, uint32_t>>* agreed,
                    const CountedStringRule* counted = nullptr, size_t max_depth = SIZE_MAX) const;

  // Recognizes `"` c{min,max} `"` with a finite max in a deterministic
  // rule (dense tables or not); nullopt otherwise.
  std::optional<CountedStringRule> AnalyzeCounted(const GrammarAutomaton& a, RuleId rule) const;
  // The first half of AnalyzeCounted: maps every state of a terminal string
  // rule to one (U state, characters started) pair, or nullopt when some
  // state is reached with two pairs (no counter: a loop; or not a subset of
  // JSON strings). max = the largest count, min = the smallest count at
  // which the body may close (-1 if none); transitions are not checked
  // against U with a counter, so the rule may be a product of one with a
  // pattern. Also fills agrees_inside, in one pass over the rule: a state
  // agrees unless, on a non-special byte, it refuses what U allows (other
  // than at a full count) or allows what U refuses, or it is final — itself
  // or some state it reaches on non-special bytes.
  // Deterministic rules without dense tables are counted too (AnalyzeCounted
  // of a long bounded string); agrees_inside needs `with_agreement`.
  std::optional<CountedStringRule> CountStates(const GrammarAutomaton& a, RuleId rule,
                                               bool with_agreement = true) const;

 private:
  JsonStringModel();
  GrammarAutomaton u_;
  uint32_t start_ = 0, body_ = 0, end_ = 0;
};

// Profile of one U state, with the sets a mask is assembled from.
struct StringProfile {
  static constexpr int kShortChars = 12;
  std::vector<uint16_t> entries;  // per sorted token: StringRun | chars << 2
  // Token-id bitsets over the vocabulary's ids: inside_upto[k] = the
  // kRunInside tokens starting at most k characters (k <= kShortChars), so a
  // bounded-string mask starts from one copy instead of a vocabulary pass.
  std::vector<TokenBitmask> inside_upto;
  TokenBitmask accepted_any;  // kRunInside or kRunClosesAtEnd, any count
  // Sorted indices, ascending.
  std::vector<uint32_t> inside_long;    // kRunInside with more than kShortChars characters
  std::vector<uint32_t> closes_at_end;  // kRunClosesAtEnd
  std::vector<uint32_t> closes_early;   // kRunClosesEarly
  uint32_t chars(uint32_t sorted_index) const { return entries[sorted_index] >> 2; }
};

class StringProfiles {
 public:
  explicit StringProfiles(std::shared_ptr<const Vocabulary> vocab);

  // Profile of U state u: one entry per sorted token (Vocabulary::sorted_ids
  // order). Computed on first request (one vocabulary walk), then cached.
  const StringProfile& Get(uint32_t u) const;
  // Sorted tokens starting with byte b are [first_byte_begin(b), first_byte_begin(b + 1)).
  uint32_t first_byte_begin(int b) const { return first_byte_[b]; }
  // Sorted indices (ascending) of the tokens containing a special byte.
  const std::vector<uint32_t>& special_tokens() const { return special_tokens_; }
  const Vocabulary& vocab() const { return *vocab_; }
  // Index of token `id` in Vocabulary::sorted_ids, or kNotSorted (EOS,
  // special and empty tokens).
  static constexpr uint32_t kNotSorted = ~uint32_t{0};
  uint32_t sorted_index(int32_t id) const { return sorted_index_[id]; }

 private:
  std::shared_ptr<const Vocabulary> vocab_;
  std::vector<uint32_t> first_byte_;  // [257]
  std::vector<uint32_t> special_tokens_;
  std::vector<uint32_t> sorted_index_;  // [vocab size]
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<const StringProfile>> profiles_;  // per U state
};

}  // namespace deepinfer::grammar
