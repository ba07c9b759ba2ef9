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
#include <memory>
#include <mutex>
#include <vector>

#include "grammar/automaton.h"
#include "grammar/earley.h"
#include "grammar/mask_cache.h"
#include "grammar/position_mask.h"
#include "grammar/vocabulary.h"

namespace deepinfer::grammar {

class CompiledGrammar {
 public:
  // `shared` (optional) must be bound to the same vocabulary.
  CompiledGrammar(GrammarAutomaton automaton, std::shared_ptr<const Vocabulary> vocab,
                  std::shared_ptr<SharedMaskCache> shared = nullptr);
  ~CompiledGrammar();
  CompiledGrammar(const CompiledGrammar&) = delete;
  CompiledGrammar& operator=(const CompiledGrammar&) = delete;

  const GrammarAutomaton& automaton() const { return automaton_; }
  const Vocabulary& vocab() const { return *vocab_; }
  const std::shared_ptr<const Vocabulary>& vocab_ptr() const { return vocab_; }

  // Cache entry of `state` (a state with byte edges); computed on first use.
  const PositionMask& MaskAt(uint32_t state) const;
  // Fills every entry now (trades compile time for no first-use latency).
  void Precompute() const;
  // Number of entries computed so far.
  size_t num_cached() const { return num_cached_.load(); }

 private:
  GrammarAutomaton automaton_;
  std::shared_ptr<const Vocabulary> vocab_;
  mutable std::mutex mutex_;
  mutable std::unique_ptr<std::atomic<const PositionMask*>[]> cache_;
  std::shared_ptr<SharedMaskCache> shared_;
  mutable std::vector<std::shared_ptr<const PositionMask>> storage_;
  mutable std::unique_ptr<EarleyParser> scratch_;  // guarded by mutex_
  mutable std::atomic<size_t> num_cached_{0};
};

}  // namespace deepinfer::grammar
