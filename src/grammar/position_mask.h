// Adaptive token-mask cache entry for one automaton state ("position").
//
// For a position p (a state inside rule R) every maskable token falls in one
// of three classes, decided by running its bytes from p *without* any
// context outside R (R's completion is only recorded, see
// EarleyParser::ResetAtState):
//   accepted  - all bytes consumed inside R (or R ends exactly at the
//               token's end): allowed whatever the stack above R is;
//   uncertain - R can end after k bytes, 1 <= k < length, and the rest would
//               have to be matched by R's parents: checked per step;
//   rejected  - everything else: never allowed from p.
// Only tokens whose first byte is scanned by p's own byte edges are
// considered: tokens starting inside a rule p predicts, or after R ends
// before the token's first byte, are covered by the other positions of the
// same Earley set (the predicted rules' starts and the parents advanced by
// an empty completion are items of that set), so they are neither accepted
// nor uncertain here.
//
// The matcher's mask is the union of `accepted` over the positions of the
// current set plus the uncertain tokens that pass a real parse. Accepted is
// stored as a bitset when large, as an id list when small.
#pragma once

#include <cstdint>
#include <vector>

#include "grammar/automaton.h"
#include "grammar/byte_class_trie.h"
#include "grammar/earley.h"
#include "grammar/string_profile.h"
#include "grammar/vocabulary.h"
#include "sampling/token_bitmask.h"

namespace deepinfer::grammar {

struct PositionMask {
  TokenBitmask accepted_bits;         // over vocab.size() ids, or empty
  std::vector<int32_t> accepted_ids;  // used when accepted_bits is empty
  std::vector<uint32_t> uncertain;    // indices into vocab.sorted_ids(), ascending
};

// Computes the entry for `state`. `scratch` is reused between calls.
PositionMask ComputePositionMask(const GrammarAutomaton& automaton, const Vocabulary& vocab, uint32_t state,
                                 EarleyParser* scratch);

// Position of a bounded string (CountedStringRule): U state u after `count`
// characters, bounds [min, max]. One pass over the profile of u, no walk.
PositionMask ComputeCountedMask(const StringProfiles& profiles, uint32_t u, int64_t count, int64_t min,
                                int64_t max);

// Dense, non-final `state` read against U state `u` (string_profile.h):
// for every first byte b with walk_first_byte[b] == 0 that is not special,
// the successors of `state` and `u` on b both fail or agree inside
// (JsonStringModel::AgreesInside). Tokens starting with such a byte and
// containing no special byte are classified from u's profile; tokens with a
// special byte are run one by one through `state`'s automaton; the
// first-byte subtrees with walk_first_byte[b] set are walked. With a
// character counter (AgreesInside with `counted`), tokens read from the
// profile are accepted only when they start at most `chars_left`
// characters; with a `slack` (CountedStringRule::slack) those starting more
// than chars_left - slack are run through the automaton.
// walk_first_byte values:
inline constexpr uint8_t kFromProfile = 0;  // classified from u's profile
inline constexpr uint8_t kWalk = 1;         // subtree walked through `state`
inline constexpr uint8_t kRefuseAll = 2;    // `state` refuses the byte: subtree rejected
PositionMask ComputeInsideMask(const GrammarAutomaton& automaton, const StringProfiles& profiles,
                               uint32_t state, uint32_t u, const std::vector<uint8_t>& walk_first_byte,
                               int64_t chars_left = INT64_MAX, int64_t slack = 0);

// Dense `state` of a rule whose byte classes built `trie`, one where the
// partition holds (ByteClasses::holds): the same classification as the
// plain walk, over class strings instead of bytes (tokens under the
// backslash's class run byte by byte).
PositionMask ComputeClassTrieMask(const GrammarAutomaton& automaton, const Vocabulary& vocab,
                                  const ByteClassTrie& trie, uint32_t state);

}  // namespace deepinfer::grammar
