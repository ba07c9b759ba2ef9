// CompiledGrammar: a grammar automaton bound to one vocabulary, with the
// adaptive token-mask cache (position_mask.h).
//
// Cache entries are computed on first use by any matcher (or all at once
// with Precompute) and then never change, so matchers on many threads share
// one CompiledGrammar: MaskAt is thread-safe (a mutex guards computation;
// reads of finished entries are lock-free).
//
// Ownership: holds the automaton by value and the vocabulary by shared_ptr;
// matchers hold the CompiledGrammar by shared_ptr.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "grammar/automaton.h"
#include "grammar/byte_class_trie.h"
#include "grammar/earley.h"
#include "grammar/json_schema.h"
#include "grammar/mask_cache.h"
#include "grammar/position_mask.h"
#include "grammar/string_profile.h"
#include "grammar/vocabulary.h"

namespace deepinfer::grammar {

class CompiledGrammar {
 public:
  // `shared` and `profiles` (optional) must be bound to the same vocabulary;
  // with `profiles`, positions inside strings are derived from them instead
  // of walked (string_profile.h).
  // `relaxed`: the JSON Schema assertions the automaton leaves out
  // (JsonSchemaOptions::strict = false), reported to the caller.
  CompiledGrammar(GrammarAutomaton automaton, std::shared_ptr<const Vocabulary> vocab,
                  std::shared_ptr<SharedMaskCache> shared = nullptr,
                  std::shared_ptr<const StringProfiles> profiles = nullptr,
                  std::vector<RelaxedAssertion> relaxed = {});
  ~CompiledGrammar();
  CompiledGrammar(const CompiledGrammar&) = delete;
  CompiledGrammar& operator=(const CompiledGrammar&) = delete;

  const GrammarAutomaton& automaton() const { return automaton_; }
  const Vocabulary& vocab() const { return *vocab_; }
  const std::shared_ptr<const Vocabulary>& vocab_ptr() const { return vocab_; }
  // Assertions of the source schema not enforced by this grammar (empty for
  // a strict compile and for non-JSON-Schema sources).
  const std::vector<RelaxedAssertion>& relaxed() const { return relaxed_; }

  // Cache entry of `state` (a state with byte edges); computed on first use.
  const PositionMask& MaskAt(uint32_t state) const;
  // Fills every entry now (trades compile time for no first-use latency).
  void Precompute() const;
  // Same, for the positions of terminal rules only (the ones shared across
  // grammars through the SharedMaskCache).
  void PrecomputeTerminal() const;
  // Per state: fewest bytes to the end of its rule (completion.h); computed
  // on first use, thread-safe.
  const std::vector<uint32_t>& completion_distances() const;
  // Number of entries computed so far.
  size_t num_cached() const { return num_cached_.load(); }
  // Whether `rule`'s first visits walk a ByteClassTrie (for tests).
  bool HasClassTrie(RuleId rule) const { return class_tries_.count(rule) > 0; }
  // Whether `state`'s first visit walks a ByteClassTrie (for tests).
  bool UsesClassTrie(uint32_t state) const { return ClassTrieFor(state) != nullptr; }

 private:
  GrammarAutomaton automaton_;
  std::shared_ptr<const Vocabulary> vocab_;
  std::vector<RelaxedAssertion> relaxed_;
  mutable std::mutex mutex_;
  mutable std::unique_ptr<std::atomic<const PositionMask*>[]> cache_;
  std::shared_ptr<SharedMaskCache> shared_;
  // Per rule: SharedMaskCache::Intern of its terminal signature, or
  // kNoSignature (not terminal, or no shared cache).
  static constexpr uint64_t kNoSignature = ~uint64_t{0};
  std::vector<uint64_t> signature_ids_;
  mutable std::vector<std::shared_ptr<const PositionMask>> storage_;
  mutable std::unique_ptr<EarleyParser> scratch_;  // guarded by mutex_
  mutable std::atomic<size_t> num_cached_{0};

  // Fresh entry for `state` (no cache hit); called with mutex_ held.
  PositionMask Compute(uint32_t state) const;
  std::shared_ptr<const StringProfiles> profiles_;
  mutable std::once_flag distances_once_;
  mutable std::vector<uint32_t> distances_;
  // Bounded-string rules, found at construction (then read-only).
  std::map<RuleId, CountedStringRule> counted_;
  // String rules with a character counter that are not plain bounded
  // strings (CountStates: a pattern, format or excluded set times a length
  // bound), found at construction.
  std::map<RuleId, CountedStringRule> counted_states_;
  const CountedStringRule* CountedStates(uint32_t state) const;
  // Characters that may still start from `state` (INT64_MAX without a
  // counter).
  int64_t CharactersLeft(uint32_t state) const;
  // Rules with broad positions that neither a counted string nor a string
  // profile answers (e.g. `^[A-Za-z ]+$`), found at construction: a trie
  // for the rule's whole partition, or when that one is too fine, tries
  // for the partitions from its broad states (ByteClasses::holds says
  // where each applies; the first that holds is used).
  std::map<RuleId, std::vector<std::unique_ptr<const ByteClassTrie>>> class_tries_;
  // The first state of `rule` from `from` on that is broad (its walk would
  // cover >= 1/kBroadFraction of the vocabulary) and not in `covered`
  // (local states; may be empty), or kNoState.
  uint32_t NextBroadState(RuleId rule, uint32_t from, const std::vector<uint8_t>& covered) const;
  // The class trie whose partition holds at `state`, or null.
  const ByteClassTrie* ClassTrieFor(uint32_t state) const;
  uint32_t TwoByteViableTokens(uint32_t state) const;
  // Tokens under the first bytes a PlanInsideMask plan walks.
  uint32_t WalkedTokens(const std::vector<uint8_t>& walk_first_byte) const;
  // Memo of JsonStringModel::AgreesInside per (state, U state) pair:
  // 1 agrees, 0 does not (guarded by mutex_; also filled by the
  // constructor's NeedsClassTrie).
  mutable std::unordered_map<uint64_t, uint8_t> agrees_inside_;
  bool AgreesInside(uint32_t state, uint32_t u) const;  // mutex_ held
  // For ComputeInsideMask: a U state and the first bytes to walk, when most
  // of the vocabulary can be read from the profile; mutex_ held.
  bool PlanInsideMask(uint32_t state, uint32_t* u, std::vector<uint8_t>* walk_first_byte) const;
};

}  // namespace deepinfer::grammar
