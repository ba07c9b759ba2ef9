#include "grammar/matcher.h"

#include <algorithm>

#include "grammar/completion.h"

namespace deepinfer::grammar {

namespace {
constexpr size_t kEosMark = ~size_t{0};
}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar)
    : grammar_(std::move(grammar)), parser_(&grammar_->automaton()) {}

void GrammarMatcher::Reset() {
  parser_.Reset();
  history_.clear();
  terminated_ = false;
}

bool GrammarMatcher::AcceptToken(int32_t token_id) {
  const Vocabulary& vocab = grammar_->vocab();
  if (terminated_ || token_id < 0 || static_cast<size_t>(token_id) >= vocab.size()) return false;
  if (vocab.is_eos(token_id)) {
    if (!parser_.CanEnd()) return false;
    terminated_ = true;
    history_.push_back(kEosMark);
    return true;
  }
  if (!vocab.is_maskable(token_id)) return false;
  return AcceptBytes(vocab.token(token_id));
}

bool GrammarMatcher::AcceptBytes(std::string_view bytes) {
  if (terminated_) return false;
  size_t before = parser_.num_sets();
  for (char c : bytes) {
    if (!parser_.Advance(static_cast<uint8_t>(c))) {
      parser_.PopTo(before);
      return false;
    }
  }
  history_.push_back(before);
  return true;
}

void GrammarMatcher::Rollback(int num_tokens) {
  for (int i = 0; i < num_tokens && !history_.empty(); ++i) {
    size_t mark = history_.back();
    history_.pop_back();
    if (mark == kEosMark) {
      terminated_ = false;
    } else {
      parser_.PopTo(mark);
    }
  }
}

bool GrammarMatcher::IsCompleted() const {
  if (terminated_) return true;
  const GrammarAutomaton& a = grammar_->automaton();
  for (const EarleyItem& it : parser_.TopItems()) {
    if (a.byte_edge_begin[it.state] != a.byte_edge_begin[it.state + 1]) return false;
  }
  return parser_.CanEnd();
}

std::string GrammarMatcher::ForcedBytes(size_t max_bytes) {
  std::string out;
  if (terminated_) return out;
  const GrammarAutomaton& a = grammar_->automaton();
  const size_t base = parser_.num_sets();
  while (out.size() < max_bytes && !parser_.CanEnd()) {
    // Every byte edge of a live item leads somewhere completable (the
    // automaton is trimmed), so one distinct byte over all items = forced.
    int only = -1;
    bool choice = false;
    for (const EarleyItem& it : parser_.TopItems()) {
      for (uint32_t e = a.byte_edge_begin[it.state]; e < a.byte_edge_begin[it.state + 1]; ++e) {
        const ByteEdge& edge = a.byte_edges[e];
        if (edge.lo != edge.hi || (only >= 0 && only != edge.lo)) {
          choice = true;
          break;
        }
        only = edge.lo;
      }
      if (choice) break;
    }
    if (choice || only < 0 || !parser_.Advance(static_cast<uint8_t>(only))) break;
    out.push_back(static_cast<char>(only));
  }
  parser_.PopTo(base);
  return out;
}

std::string GrammarMatcher::ShortestCompletion(size_t max_bytes) {
  if (terminated_) return std::string();
  return grammar::ShortestCompletion(grammar_->automaton(), grammar_->completion_distances(), &parser_,
                                     max_bytes);
}

void GrammarMatcher::FillNextTokenBitmask(TokenBitmask* mask) {
  const Vocabulary& vocab = grammar_->vocab();
  mask->Reset(vocab.size());
  if (terminated_) return;
  const GrammarAutomaton& a = grammar_->automaton();

  // Positions = distinct states of the top set that can scan a byte.
  positions_.clear();
  for (const EarleyItem& it : parser_.TopItems()) {
    if (a.byte_edge_begin[it.state] != a.byte_edge_begin[it.state + 1]) {
      positions_.push_back(it.state);
    }
  }
  std::sort(positions_.begin(), positions_.end());
  positions_.erase(std::unique(positions_.begin(), positions_.end()), positions_.end());

  candidates_.clear();
  const std::vector<uint32_t>* single = nullptr;
  int lists = 0;
  for (uint32_t p : positions_) {
    const PositionMask& m = grammar_->MaskAt(p);
    if (!m.accepted_bits.empty()) {
      mask->Union(m.accepted_bits);
    } else {
      for (int32_t id : m.accepted_ids) mask->Set(id);
    }
    if (!m.uncertain.empty()) {
      ++lists;
      single = &m.uncertain;
      candidates_.insert(candidates_.end(), m.uncertain.begin(), m.uncertain.end());
    }
  }
  if (lists == 1) {
    CheckCandidates(*single, mask);
  } else if (lists > 1) {
    std::sort(candidates_.begin(), candidates_.end());
    candidates_.erase(std::unique(candidates_.begin(), candidates_.end()), candidates_.end());
    CheckCandidates(candidates_, mask);
  }
  if (parser_.CanEnd()) {
    for (int32_t id : vocab.eos_ids()) mask->Set(id);
  }
}

// Real parse of each candidate on top of the current state, in trie order:
// the parser keeps the sets of the previous candidate's common prefix, and a
// byte that failed rejects every following candidate sharing it.
void GrammarMatcher::CheckCandidates(const std::vector<uint32_t>& sorted_indices, TokenBitmask* mask) {
  const Vocabulary& vocab = grammar_->vocab();
  const auto& ids = vocab.sorted_ids();
  const size_t base = parser_.num_sets();
  std::string_view prev;
  bool has_prev = false;
  size_t depth = 0;
  bool failed = false;
  for (uint32_t index : sorted_indices) {
    int32_t id = ids[index];
    if (mask->Test(id)) continue;  // already allowed
    std::string_view tok = vocab.sorted_token(index);
    size_t shared = 0;
    if (has_prev) {
      size_t n = std::min({prev.size(), tok.size(), depth + 1});
      while (shared < n && prev[shared] == tok[shared]) ++shared;
    }
    prev = tok;
    has_prev = true;
    if (failed && shared > depth) continue;
    depth = std::min(depth, shared);
    parser_.PopTo(base + depth);
    failed = false;
    while (depth < tok.size()) {
      if (!parser_.Advance(static_cast<uint8_t>(tok[depth]))) {
        failed = true;
        break;
      }
      ++depth;
    }
    if (!failed) mask->Set(id);
  }
  parser_.PopTo(base);
}

}  // namespace deepinfer::grammar
