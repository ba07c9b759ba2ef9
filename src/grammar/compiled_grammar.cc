#include "grammar/compiled_grammar.h"

#include <cstdint>

#include "grammar/completion.h"

namespace deepinfer::grammar {

namespace {
// A class trie only pays off when classes merge many tokens: partitions
// finer than this (a pattern naming many characters) keep the byte walk,
// and so do rules whose positions each allow less than 1/kBroadFraction of
// the vocabulary's first bytes (their walks are short).
constexpr size_t kMaxTrieClasses = 48;
constexpr uint32_t kBroadFraction = 8;
// Trie builds tried per rule (the rule's start, then broad states).
constexpr int kMaxTrieAttempts = 3;
}  // namespace

CompiledGrammar::CompiledGrammar(GrammarAutomaton automaton, std::shared_ptr<const Vocabulary> vocab,
                                 std::shared_ptr<SharedMaskCache> shared,
                                 std::shared_ptr<const StringProfiles> profiles,
                                 std::vector<RelaxedAssertion> relaxed)
    : automaton_(std::move(automaton)),
      vocab_(std::move(vocab)),
      relaxed_(std::move(relaxed)),
      shared_(std::move(shared)),
      profiles_(std::move(profiles)) {
  uint32_t n = automaton_.num_states();
  cache_ = std::make_unique<std::atomic<const PositionMask*>[]>(n);
  for (uint32_t i = 0; i < n; ++i) cache_[i].store(nullptr, std::memory_order_relaxed);
  signature_ids_.assign(automaton_.rule_start.size(), kNoSignature);
  if (shared_ != nullptr) {
    for (size_t r = 0; r < automaton_.rule_start.size(); ++r) {
      if (!automaton_.terminal_signature[r].empty())
        signature_ids_[r] = shared_->Intern(automaton_.terminal_signature[r]);
    }
  }
  // Bounded strings (string_profile.h), recognized once per grammar: a
  // terminal rule that starts with exactly the opening quote.
  if (profiles_ != nullptr) {
    const JsonStringModel& model = JsonStringModel::Get();
    for (size_t r = 0; r < automaton_.rule_start.size(); ++r) {
      uint32_t s = automaton_.rule_start[r];
      if (!automaton_.RuleDeterministic(static_cast<RuleId>(r)) ||
          automaton_.byte_edge_begin[s + 1] != automaton_.byte_edge_begin[s] + 1) {
        continue;
      }
      const ByteEdge& e = automaton_.byte_edges[automaton_.byte_edge_begin[s]];
      if (e.lo != '"' || e.hi != '"') continue;
      auto counted = model.AnalyzeCounted(automaton_, static_cast<RuleId>(r));
      if (counted) {
        counted_.emplace(static_cast<RuleId>(r), std::move(*counted));
        continue;
      }
      // A counter in a product (pattern, format or excluded values with a
      // length bound): inside-agreement up to the count (AgreesInside,
      // which walks dense tables).
      if (!automaton_.rule_terminal[r]) continue;
      auto states = model.CountStates(automaton_, static_cast<RuleId>(r));
      if (states) counted_states_.emplace(static_cast<RuleId>(r), std::move(*states));
    }
    // Class tries for the rules whose broad positions would be walked.
    const uint32_t n = static_cast<uint32_t>(vocab_->sorted_ids().size());
    for (size_t r = 0; r < automaton_.rule_start.size(); ++r) {
      RuleId rule = static_cast<RuleId>(r);
      if (!automaton_.rule_terminal[r] || counted_.count(rule)) continue;
      const uint32_t begin = automaton_.rule_start[r];
      std::vector<uint8_t> covered;
      uint32_t broad = NextBroadState(rule, begin, covered);
      // First the partition from the rule's start; when it is too fine (a
      // pattern's literal prefix names many letters), the partitions from
      // the broad states the tries so far do not cover, a few at most (an
      // aborted build costs ~1-2 ms of compile).
      uint32_t from = begin;
      for (int attempt = 0; attempt < kMaxTrieAttempts && broad != kNoState; ++attempt) {
        auto classes = RuleByteClasses(automaton_, rule, kMaxTrieClasses, from);
        // At most one node per 3 tokens (the byte trie has ~3 per token):
        // past that, merging is too poor to pay (an aborted build stays
        // ~1-2 ms). A format x length product (uri x 4096: 9 classes,
        // between n/8 and n/3 nodes on llama3) walks ~50k tokens a
        // position without it.
        auto trie = classes ? ByteClassTrie::Build(*vocab_, *classes, n / 3) : nullptr;
        if (trie) {
          const std::vector<uint8_t>& holds = trie->classes().holds;
          covered.resize(holds.size(), 0);
          for (size_t k = 0; k < holds.size(); ++k) covered[k] |= holds[k];
          class_tries_[rule].push_back(std::move(trie));
        }
        // The next broad state not covered; after the start, each broad
        // state is tried once.
        broad = NextBroadState(rule, attempt == 0 ? begin : broad + 1, covered);
        from = broad;
      }
    }
  }
}

const ByteClassTrie* CompiledGrammar::ClassTrieFor(uint32_t state) const {
  RuleId rule = automaton_.state_rule[state];
  auto it = class_tries_.find(rule);
  if (it == class_tries_.end()) return nullptr;
  const uint32_t local = state - automaton_.rule_start[rule];
  for (const auto& trie : it->second) {
    if (trie->classes().holds[local]) return trie.get();
  }
  return nullptr;
}

uint32_t CompiledGrammar::NextBroadState(RuleId rule, uint32_t from,
                                         const std::vector<uint8_t>& covered) const {
  const GrammarAutomaton& a = automaton_;
  const uint32_t n = static_cast<uint32_t>(vocab_->sorted_ids().size());
  for (uint32_t s = from; s < a.rule_end[rule]; ++s) {
    const uint32_t local = s - a.rule_start[rule];
    if (local < covered.size() && covered[local]) continue;
    uint32_t first_tokens = 0;  // tokens whose first byte s allows
    for (int b = 0; b < 256; ++b) {
      if (a.DenseNext(s, static_cast<uint8_t>(b)) != kNoState) {
        first_tokens += profiles_->first_byte_begin(b + 1) - profiles_->first_byte_begin(b);
      }
    }
    if (first_tokens < n / kBroadFraction) continue;
    // Already computed by another grammar (e.g. the warmed-up formats)?
    if (signature_ids_[rule] != kNoSignature && shared_->Find(signature_ids_[rule], local)) {
      continue;
    }
    uint32_t u = kNoState;
    std::vector<uint8_t> walk;
    if (PlanInsideMask(s, &u, &walk)) {
      // Read from the profile, but the walked rest is broad (a format or
      // pattern x a length bound, whose counter leaves no self-loop for
      // DenseWalk's subtree shortcut: ~1 ms on 128k): the class trie
      // answers the whole position instead (see Compute).
      if (WalkedTokens(walk) >= n / kBroadFraction) return s;
      continue;
    }
    // A finer estimate of the walk: tokens whose first two bytes pass
    // (after `(555)` a space starts half of llama3's tokens, but only
    // those going on with a digit survive the second byte).
    if (TwoByteViableTokens(s) >= n / kBroadFraction) return s;
  }
  return kNoState;
}

uint32_t CompiledGrammar::WalkedTokens(const std::vector<uint8_t>& walk_first_byte) const {
  uint32_t walked = 0;
  for (int b = 0; b < 256; ++b) {
    if (walk_first_byte[b] == kWalk)
      walked += profiles_->first_byte_begin(b + 1) - profiles_->first_byte_begin(b);
  }
  return walked;
}

uint32_t CompiledGrammar::TwoByteViableTokens(uint32_t state) const {
  const GrammarAutomaton& a = automaton_;
  const Vocabulary& v = *vocab_;
  uint32_t count = 0;
  for (int b = 0; b < 256; ++b) {
    uint32_t next = a.DenseNext(state, static_cast<uint8_t>(b));
    if (next == kNoState) continue;
    // One step per two-byte prefix: the first token having it starts its
    // trie node (lcp < 2), whose range ends at node_end.
    for (uint32_t i = profiles_->first_byte_begin(b); i < profiles_->first_byte_begin(b + 1);) {
      std::string_view tok = v.sorted_token(i);
      if (tok.size() < 2) {
        ++count;
        ++i;
        continue;
      }
      uint32_t end = v.node_end(v.node(i, 2));
      if (a.DenseNext(next, static_cast<uint8_t>(tok[1])) != kNoState) count += end - i;
      i = end;
    }
  }
  return count;
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
  const uint64_t signature = signature_ids_[rule];
  uint32_t local = state - automaton_.rule_start[rule];
  bool shareable = signature != kNoSignature;
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
  if (profiles_ != nullptr) {
    RuleId rule = a.state_rule[state];
    auto it = counted_.find(rule);
    if (it != counted_.end()) {  // bounded string: assembled from a profile
      const CountedStringRule& c = it->second;
      uint32_t local = state - a.rule_start[rule];
      return ComputeCountedMask(*profiles_, c.u[local], c.count[local], c.min, c.max);
    }
  }
  if (profiles_ != nullptr && a.dense_offset[state] != kNoState) {
    // Inside a string whose extra state only shows at quotes and escapes
    // (a key next to declared names or in a patternProperties region, an
    // unanchored pattern, minLength): read from a U profile, only tokens
    // with those bytes and the first bytes that differ are run.
    uint32_t u = kNoState;
    std::vector<uint8_t> walk;
    // (Null inside an escape, where no partition holds: narrow positions,
    // the other paths are quick there.)
    const ByteClassTrie* trie = ClassTrieFor(state);
    if (PlanInsideMask(state, &u, &walk)) {
      const uint32_t n = static_cast<uint32_t>(vocab_->sorted_ids().size());
      if (trie != nullptr && WalkedTokens(walk) >= n / kBroadFraction) {
        return ComputeClassTrieMask(a, *vocab_, *trie, state);
      }
      const CountedStringRule* counted = CountedStates(state);
      return ComputeInsideMask(a, *profiles_, state, u, walk, CharactersLeft(state),
                               counted != nullptr ? counted->slack : 0);
    }
    if (trie != nullptr) return ComputeClassTrieMask(a, *vocab_, *trie, state);
  }
  if (!scratch_) scratch_ = std::make_unique<EarleyParser>(&automaton_);
  return ComputePositionMask(automaton_, *vocab_, state, scratch_.get());
}

const CountedStringRule* CompiledGrammar::CountedStates(uint32_t state) const {
  auto it = counted_states_.find(automaton_.state_rule[state]);
  return it == counted_states_.end() ? nullptr : &it->second;
}

int64_t CompiledGrammar::CharactersLeft(uint32_t state) const {
  const CountedStringRule* c = CountedStates(state);
  if (c == nullptr) return INT64_MAX;
  return c->max - c->count[state - automaton_.rule_start[automaton_.state_rule[state]]];
}

bool CompiledGrammar::AgreesInside(uint32_t state, uint32_t u) const {
  auto [it, inserted] = agrees_inside_.emplace(uint64_t{state} << 32 | u, 0);
  if (!inserted) return it->second;
  std::vector<std::pair<uint32_t, uint32_t>> agreed;
  // With a counter, tokens bound the paths that matter: the count is
  // different on every path, so an unbounded search would cover the rule.
  const CountedStringRule* counted = CountedStates(state);
  if (counted != nullptr) {  // against its own U state: known from CountStates
    uint32_t local = state - automaton_.rule_start[automaton_.state_rule[state]];
    if (counted->u[local] == u) return it->second = counted->agrees_inside[local];
  }
  if (!JsonStringModel::Get().AgreesInside(automaton_, state, u, &agreed, counted,
                                           counted ? vocab_->max_token_length() : SIZE_MAX)) {
    return false;
  }
  it->second = 1;
  // Every pair on the way agrees too: later first visits skip their search.
  for (auto [x, y] : agreed) agrees_inside_[uint64_t{x} << 32 | y] = 1;
  return true;
}

bool CompiledGrammar::PlanInsideMask(uint32_t state, uint32_t* u,
                                     std::vector<uint8_t>* walk_first_byte) const {
  const GrammarAutomaton& a = automaton_;
  if (a.is_final[state]) return false;
  const CountedStringRule* counted = CountedStates(state);
  if (counted != nullptr && counted->u[state - a.rule_start[a.state_rule[state]]] == kNoState) return false;
  // Near the end of a string with slack, most tokens would be run one by
  // one: the walk (which shares prefixes) is cheaper.
  if (counted != nullptr && counted->slack > 0 && CharactersLeft(state) - counted->slack < 4) return false;
  const JsonStringModel& model = JsonStringModel::Get();
  const GrammarAutomaton& ua = model.automaton();
  const uint32_t n = static_cast<uint32_t>(vocab_->sorted_ids().size());
  auto allows = [](const GrammarAutomaton& x, uint32_t s, int b) {
    return x.DenseNext(s, static_cast<uint8_t>(b)) != kNoState;
  };
  // Candidates: the body (by far the most common), then the U states that
  // allow exactly the same non-special first bytes (inside an escape or a
  // UTF-8 character).
  for (uint32_t i = 0; i < model.num_states(); ++i) {
    uint32_t y = i == 0 ? model.body() : (i == model.body() ? 0 : i);
    if (y == model.end()) continue;
    // With a counter, the profile's character counts must be the rule's:
    // only the state's own U state will do.
    if (counted != nullptr && y != counted->u[state - a.rule_start[a.state_rule[state]]]) continue;
    bool same_first_bytes = true;
    for (int b = 0; b < 256 && same_first_bytes && y != model.body(); ++b) {
      same_first_bytes =
          IsStringSpecialByte(static_cast<uint8_t>(b)) || allows(a, state, b) == allows(ua, y, b);
    }
    if (!same_first_bytes) continue;
    walk_first_byte->assign(256, kFromProfile);
    uint32_t walked = 0;  // tokens in walked subtrees
    for (int b = 0; b < 256 && walked * 2 < n; ++b) {
      if (IsStringSpecialByte(static_cast<uint8_t>(b))) continue;  // run one by one
      uint32_t next = a.DenseNext(state, static_cast<uint8_t>(b));
      uint32_t u_next = ua.DenseNext(y, static_cast<uint8_t>(b));
      // A full counter refuses every character U allows (the profile's
      // character count rejects those tokens).
      bool full = y == model.body() && CharactersLeft(state) < 1;
      bool agree = next == kNoState ? u_next == kNoState || full
                                    : u_next != kNoState && !full && AgreesInside(next, u_next);
      if (agree) continue;
      // The state refuses a byte U allows (a prefix such as `^SELECT `
      // before the body): that subtree is refused whole, nothing to walk.
      if (next == kNoState) {
        (*walk_first_byte)[b] = kRefuseAll;
        continue;
      }
      (*walk_first_byte)[b] = kWalk;
      walked += profiles_->first_byte_begin(b + 1) - profiles_->first_byte_begin(b);
    }
    // Worth it when most of the vocabulary is read from the profile.
    if (walked * 2 < n) {
      *u = y;
      return true;
    }
  }
  return false;
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
