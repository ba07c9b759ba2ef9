#include "grammar/compiled_grammar.h"

namespace deepinfer::grammar {

CompiledGrammar::CompiledGrammar(GrammarAutomaton automaton, std::shared_ptr<const Vocabulary> vocab,
                                 std::shared_ptr<SharedMaskCache> shared)
    : automaton_(std::move(automaton)), vocab_(std::move(vocab)), shared_(std::move(shared)) {
  uint32_t n = automaton_.num_states();
  cache_ = std::make_unique<std::atomic<const PositionMask*>[]>(n);
  for (uint32_t i = 0; i < n; ++i) cache_[i].store(nullptr, std::memory_order_relaxed);
}

CompiledGrammar::~CompiledGrammar() = default;

const PositionMask& CompiledGrammar::MaskAt(uint32_t state) const {
  const PositionMask* entry = cache_[state].load(std::memory_order_acquire);
  if (entry != nullptr) return *entry;
  std::lock_guard<std::mutex> lock(mutex_);
  entry = cache_[state].load(std::memory_order_relaxed);
  if (entry != nullptr) return *entry;
  // Terminal rules: try the cross-grammar cache first (mask_cache.h).
  RuleId rule = automaton_.state_rule[state];
  const std::string& signature = automaton_.terminal_signature[rule];
  uint32_t local = state - automaton_.rule_start[rule];
  bool shareable = shared_ != nullptr && !signature.empty();
  std::shared_ptr<const PositionMask> computed;
  if (shareable) computed = shared_->Find(signature, local);
  if (!computed) {
    if (!scratch_) scratch_ = std::make_unique<EarleyParser>(&automaton_);
    computed =
        std::make_shared<const PositionMask>(ComputePositionMask(automaton_, *vocab_, state, scratch_.get()));
    if (shareable) shared_->Insert(signature, local, computed);
  }
  storage_.push_back(std::move(computed));
  entry = storage_.back().get();
  cache_[state].store(entry, std::memory_order_release);
  num_cached_.fetch_add(1);
  return *entry;
}

void CompiledGrammar::Precompute() const {
  for (uint32_t s = 0; s < automaton_.num_states(); ++s) {
    if (automaton_.byte_edge_begin[s] != automaton_.byte_edge_begin[s + 1]) MaskAt(s);
  }
}

}  // namespace deepinfer::grammar
