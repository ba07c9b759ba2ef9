#include "grammar/compiled_grammar.h"

#include "grammar/completion.h"

namespace deepinfer::grammar {

CompiledGrammar::CompiledGrammar(GrammarAutomaton automaton, std::shared_ptr<const Vocabulary> vocab,
                                 std::shared_ptr<SharedMaskCache> shared,
                                 std::shared_ptr<const StringProfiles> profiles)
    : automaton_(std::move(automaton)),
      vocab_(std::move(vocab)),
      shared_(std::move(shared)),
      profiles_(std::move(profiles)) {
  uint32_t n = automaton_.num_states();
  cache_ = std::make_unique<std::atomic<const PositionMask*>[]>(n);
  for (uint32_t i = 0; i < n; ++i) cache_[i].store(nullptr, std::memory_order_relaxed);
  // Bounded strings (string_profile.h), recognized once per grammar: a
  // terminal rule that starts with exactly the opening quote.
  if (profiles_ != nullptr) {
    const JsonStringModel& model = JsonStringModel::Get();
    for (size_t r = 0; r < automaton_.rule_start.size(); ++r) {
      uint32_t s = automaton_.rule_start[r];
      if (!automaton_.rule_terminal[r] ||
          automaton_.byte_edge_begin[s + 1] != automaton_.byte_edge_begin[s] + 1) {
        continue;
      }
      const ByteEdge& e = automaton_.byte_edges[automaton_.byte_edge_begin[s]];
      if (e.lo != '"' || e.hi != '"') continue;
      auto counted = model.AnalyzeCounted(automaton_, static_cast<RuleId>(r));
      if (counted) counted_.emplace(static_cast<RuleId>(r), std::move(*counted));
    }
  }
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
    computed = std::make_shared<const PositionMask>(Compute(state));
    if (shareable) shared_->Insert(signature, local, computed);
  }
  storage_.push_back(std::move(computed));
  entry = storage_.back().get();
  cache_[state].store(entry, std::memory_order_release);
  num_cached_.fetch_add(1);
  return *entry;
}

PositionMask CompiledGrammar::Compute(uint32_t state) const {
  const GrammarAutomaton& a = automaton_;
  if (profiles_ != nullptr && a.dense_offset[state] != kNoState) {
    const JsonStringModel& model = JsonStringModel::Get();
    RuleId rule = a.state_rule[state];
    auto it = counted_.find(rule);
    if (it != counted_.end()) {  // bounded string: assembled from a profile
      const CountedStringRule& c = it->second;
      uint32_t local = state - a.rule_start[rule];
      return ComputeCountedMask(*profiles_, c.u[local], c.count[local], c.min, c.max);
    }
    // Mostly a plain string (e.g. an additional-property key: a trie of
    // the declared names inside a string)? Walk only the first bytes whose
    // successor differs from the string body's.
    const GrammarAutomaton& u = model.automaton();
    std::vector<uint8_t> walk(256, 1);
    uint32_t walked_tokens = 0;
    std::map<std::pair<uint32_t, uint32_t>, bool> equivalent;
    for (int b = 0; b < 256; ++b) {
      uint32_t next = a.DenseNext(state, static_cast<uint8_t>(b));
      uint32_t body_next = u.DenseNext(model.body(), static_cast<uint8_t>(b));
      bool same = next == kNoState && body_next == kNoState;
      if (next != kNoState && body_next != kNoState) {
        auto [e, inserted] = equivalent.emplace(std::make_pair(next, body_next), false);
        if (inserted) e->second = model.Equivalent(a, next, body_next);
        same = e->second;
      }
      walk[b] = !same;
      if (!same) walked_tokens += profiles_->first_byte_begin(b + 1) - profiles_->first_byte_begin(b);
    }
    // Worth it when most of the vocabulary is copied from the profile.
    if (walked_tokens * 2 < vocab_->sorted_ids().size()) {
      return ComputeDifferentialMask(a, *profiles_, state, walk);
    }
  }
  if (!scratch_) scratch_ = std::make_unique<EarleyParser>(&automaton_);
  return ComputePositionMask(automaton_, *vocab_, state, scratch_.get());
}

void CompiledGrammar::Precompute() const {
  for (uint32_t s = 0; s < automaton_.num_states(); ++s) {
    if (automaton_.byte_edge_begin[s] != automaton_.byte_edge_begin[s + 1]) MaskAt(s);
  }
}

const std::vector<uint32_t>& CompiledGrammar::completion_distances() const {
  std::call_once(distances_once_, [this] { distances_ = ComputeCompletionDistances(automaton_); });
  return distances_;
}

void CompiledGrammar::PrecomputeTerminal() const {
  for (uint32_t s = 0; s < automaton_.num_states(); ++s) {
    bool scans = automaton_.byte_edge_begin[s] != automaton_.byte_edge_begin[s + 1];
    if (scans && automaton_.rule_terminal[automaton_.state_rule[s]]) MaskAt(s);
  }
}

}  // namespace deepinfer::grammar
