#include "grammar/string_profile.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

#include "grammar/json_primitives.h"

namespace deepinfer::grammar {

namespace {

// Pairs AgreesInside explores before giving up: a product key automaton's
// inside states times the few U states they pair with stay far below.
constexpr size_t kMaxInsidePairs = 4096;

// Start bytes of the segments on which both states' transitions are
// constant: every edge boundary of either state, plus the quote (which
// matters to the character count) and the backslash, so that each special
// byte is a segment of its own.
const std::vector<int>& SegmentStarts(const GrammarAutomaton& a, uint32_t s, const GrammarAutomaton& b,
                                      uint32_t t) {
  thread_local std::vector<int> cuts;  // reused: this runs once per state pair
  cuts.assign({0, '"', '"' + 1, '\\', '\\' + 1});
  for (uint32_t e = a.byte_edge_begin[s]; e < a.byte_edge_begin[s + 1]; ++e) {
    cuts.push_back(a.byte_edges[e].lo);
    cuts.push_back(a.byte_edges[e].hi + 1);
  }
  for (uint32_t e = b.byte_edge_begin[t]; e < b.byte_edge_begin[t + 1]; ++e) {
    cuts.push_back(b.byte_edges[e].lo);
    cuts.push_back(b.byte_edges[e].hi + 1);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  if (cuts.back() == 256) cuts.pop_back();
  return cuts;
}

}  // namespace

const JsonStringModel& JsonStringModel::Get() {
  static const JsonStringModel* model = new JsonStringModel();  // never destroyed: used by static caches
  return *model;
}

JsonStringModel::JsonStringModel() {
  Grammar g;
  g.set_root(g.DefineRule("json_string", JsonString(&g, 0, std::nullopt)));
  Deadline deadline(60.0);
  auto built = BuildAutomaton(g, BuildLimits(), deadline);
  // The JSON string grammar is a fixed, small regular language: failing to
  // build it is a programming error, not an input error.
  if (!built.ok() || !built->rule_terminal[0]) __builtin_trap();
  u_ = std::move(*built);
  start_ = u_.rule_start[0];
  body_ = u_.DenseNext(start_, '"');
  end_ = u_.DenseNext(body_, '"');
  if (body_ == kNoState || end_ == kNoState) __builtin_trap();
}

bool JsonStringModel::AgreesInside(const GrammarAutomaton& a, uint32_t s, uint32_t u,
                                   std::vector<std::pair<uint32_t, uint32_t>>* agreed,
                                   const CountedStringRule* counted, size_t max_depth) const {
  agreed->clear();
  if (u == end_) return false;
  const uint32_t base = a.rule_start[a.state_rule[s]];
  // Breadth first, so a pair is expanded at its smallest depth: with a
  // depth bound, paths of up to max_depth bytes are all checked.
  std::vector<std::pair<uint32_t, uint32_t>> level = {{s, u}}, next_level;
  std::unordered_set<uint64_t> seen = {uint64_t{s} << 32 | u};
  bool cut = false;  // some pair was left unexpanded at the depth bound
  for (size_t depth = 0; !level.empty(); ++depth) {
    if (depth >= max_depth) {
      cut = true;
      break;
    }
    next_level.clear();
    for (auto [x, y] : level) {
      // U is never final here (only the closing quote reaches its end).
      if (a.dense_offset[x] == kNoState || a.is_final[x]) return false;
      agreed->push_back({x, y});
      // With a counter, a character may also fail because the count is
      // full: exactly the characters started at count max (and only those).
      const bool full = counted != nullptr && y == body_ && counted->count[x - base] + 1 > counted->max;
      for (int c : SegmentStarts(a, x, u_, y)) {
        if (IsStringSpecialByte(static_cast<uint8_t>(c))) continue;
        uint32_t nx = a.DenseNext(x, static_cast<uint8_t>(c));
        uint32_t ny = u_.DenseNext(y, static_cast<uint8_t>(c));
        if (ny == kNoState || full) {
          if (nx != kNoState) return false;
          continue;
        }
        if (nx == kNoState) return false;
        if (seen.insert(uint64_t{nx} << 32 | ny).second) {
          if (seen.size() > kMaxInsidePairs) return false;
          next_level.push_back({nx, ny});
        }
      }
    }
    std::swap(level, next_level);
  }
  // Pairs are known to agree on every path only when none was cut off.
  if (cut) agreed->clear();
  return true;
}

std::optional<CountedStringRule> JsonStringModel::CountStates(const GrammarAutomaton& a, RuleId rule,
                                                              bool with_agreement) const {
  if (!a.RuleDeterministic(rule)) return std::nullopt;
  const uint32_t base = a.rule_start[rule];
  const uint32_t n = a.rule_end[rule] - base;
  CountedStringRule out;
  out.u.assign(n, kNoState);
  out.count.assign(n, -1);
  struct Item {
    uint32_t s, u;
    int64_t i;
  };
  // Pass 1: map every state to (U state, characters started); a state
  // reached with two different pairs is not a counted string.
  std::vector<Item> todo = {{base, start_, 0}};
  while (!todo.empty()) {
    Item it = todo.back();
    todo.pop_back();
    uint32_t local = it.s - base;
    if (out.u[local] != kNoState) {
      if (out.u[local] != it.u || (it.u != end_ && out.count[local] != it.i)) return std::nullopt;
      continue;
    }
    out.u[local] = it.u;
    out.count[local] = it.i;
    if (a.is_final[it.s] != u_.is_final[it.u]) return std::nullopt;
    for (int c : SegmentStarts(a, it.s, u_, it.u)) {
      uint32_t ns = a.DeterministicNext(it.s, static_cast<uint8_t>(c));
      uint32_t nu = u_.DenseNext(it.u, static_cast<uint8_t>(c));
      if (nu == kNoState && ns != kNoState) return std::nullopt;
      if (ns == kNoState || nu == kNoState) continue;
      todo.push_back({ns, nu, it.i + (it.u == body_ && c != '"' ? 1 : 0)});
    }
  }
  // Bounds: max = the largest count; min = the first count that may close.
  out.max = 0;
  out.min = -1;
  for (uint32_t local = 0; local < n; ++local) {
    // Unreachable from the start (no parse is ever there): left unmapped.
    if (out.u[local] == kNoState || out.u[local] == end_) continue;
    out.max = std::max(out.max, out.count[local]);
    if (out.u[local] == body_ && a.DeterministicNext(base + local, '"') != kNoState &&
        (out.min < 0 || out.count[local] < out.min)) {
      out.min = out.count[local];
    }
  }
  if (!with_agreement) return out;
  // Slack: the most characters left at a body state that refuses to start
  // a character U allows (a pattern that still needs room, e.g. an
  // unanchored `\$\{version\}` with maxLength 30 refuses other characters
  // when fewer than 10 are left). Bounded slack keeps the profile usable
  // (tokens of at most chars_left - slack characters cannot meet a
  // refusal); more and refusals count as disagreement.
  auto refuses = [&](uint32_t local, int c) {
    const uint32_t y = out.u[local];
    return y == body_ && out.count[local] + 1 <= out.max &&
           u_.DenseNext(y, static_cast<uint8_t>(c)) != kNoState &&
           a.DeterministicNext(base + local, static_cast<uint8_t>(c)) == kNoState;
  };
  out.slack = 0;
  for (uint32_t local = 0; local < n; ++local) {
    if (out.u[local] != body_) continue;
    for (int c : SegmentStarts(a, base + local, u_, body_)) {
      if (!IsStringSpecialByte(static_cast<uint8_t>(c)) && refuses(local, c)) {
        out.slack = std::max(out.slack, out.max - out.count[local]);
      }
    }
  }
  const bool slack_ok = out.slack <= kMaxCountSlack;
  if (!slack_ok) out.slack = 0;
  // Agreement with the own U state: local checks, then the failures
  // propagated back along non-special edges.
  out.agrees_inside.assign(n, 0);
  std::vector<std::vector<uint32_t>> preds(n);
  std::vector<uint32_t> bad;
  for (uint32_t local = 0; local < n; ++local) {
    const uint32_t x = base + local, y = out.u[local];
    if (y == kNoState || y == end_) continue;
    bool ok = !a.is_final[x];
    const bool full = y == body_ && out.count[local] + 1 > out.max;
    for (int c : SegmentStarts(a, x, u_, y)) {
      if (!ok) break;
      if (IsStringSpecialByte(static_cast<uint8_t>(c))) continue;
      uint32_t nx = a.DeterministicNext(x, static_cast<uint8_t>(c));
      uint32_t ny = u_.DenseNext(y, static_cast<uint8_t>(c));
      if (ny == kNoState || full) {
        ok = nx == kNoState;
      } else if (slack_ok && refuses(local, c)) {
        ok = true;  // within the slack
      } else {
        ok = nx != kNoState;
        if (ok) preds[nx - base].push_back(local);
      }
    }
    out.agrees_inside[local] = ok;
    if (!ok) bad.push_back(local);
  }
  while (!bad.empty()) {
    uint32_t local = bad.back();
    bad.pop_back();
    for (uint32_t p : preds[local]) {
      if (out.agrees_inside[p]) {
        out.agrees_inside[p] = 0;
        bad.push_back(p);
      }
    }
  }
  return out;
}

std::optional<CountedStringRule> JsonStringModel::AnalyzeCounted(const GrammarAutomaton& a,
                                                                 RuleId rule) const {
  std::optional<CountedStringRule> counted = CountStates(a, rule, /*with_agreement=*/false);
  if (!counted) return std::nullopt;
  CountedStringRule& out = *counted;
  const uint32_t base = a.rule_start[rule];
  const uint32_t n = a.rule_end[rule] - base;
  for (uint32_t local = 0; local < n; ++local) {
    if (out.u[local] == kNoState) return std::nullopt;  // unreachable state: not this shape
  }
  if (out.min < 0 || out.min > out.max) return std::nullopt;
  // Pass 2: exactly the transitions of U whose count stays in bounds.
  for (uint32_t local = 0; local < n; ++local) {
    uint32_t s = base + local, u = out.u[local];
    if (u == end_) continue;
    int64_t i = out.count[local];
    for (int c : SegmentStarts(a, s, u_, u)) {
      uint32_t nu = u_.DenseNext(u, static_cast<uint8_t>(c));
      if (nu == kNoState) continue;
      bool closes = u == body_ && c == '"';
      bool expected = closes ? i >= out.min : i + (u == body_ ? 1 : 0) <= out.max;
      if (expected != (a.DeterministicNext(s, static_cast<uint8_t>(c)) != kNoState)) return std::nullopt;
    }
  }
  return out;
}

StringProfiles::StringProfiles(std::shared_ptr<const Vocabulary> vocab)
    : vocab_(std::move(vocab)), first_byte_(257, 0) {
  const uint32_t n = static_cast<uint32_t>(vocab_->sorted_ids().size());
  // Sorted order is by unsigned bytes, so each first byte is one range.
  uint32_t i = 0;
  for (int b = 0; b < 256; ++b) {
    first_byte_[b] = i;
    while (i < n && static_cast<uint8_t>(vocab_->sorted_token(i)[0]) == b) ++i;
  }
  first_byte_[256] = n;
  sorted_index_.assign(vocab_->size(), kNotSorted);
  for (uint32_t j = 0; j < n; ++j) sorted_index_[vocab_->sorted_ids()[j]] = j;
  for (uint32_t j = 0; j < n; ++j) {
    for (char c : vocab_->sorted_token(j)) {
      if (IsStringSpecialByte(static_cast<uint8_t>(c))) {
        special_tokens_.push_back(j);
        break;
      }
    }
  }
  profiles_.resize(JsonStringModel::Get().num_states());
}

// One walk of the sorted vocabulary (trie preorder) from U state u with a
// state and a character count per depth; a failing byte decides its whole
// subtree (a trie node range) at once.
const StringProfile& StringProfiles::Get(uint32_t u) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (profiles_[u]) return *profiles_[u];
  const JsonStringModel& model = JsonStringModel::Get();
  const GrammarAutomaton& a = model.automaton();
  const Vocabulary& v = *vocab_;
  const uint32_t n = static_cast<uint32_t>(v.sorted_ids().size());
  auto profile = std::make_unique<StringProfile>();
  std::vector<uint16_t>* out = &profile->entries;
  out->assign(n, uint16_t{kRunFails});
  const auto& lcp = v.sorted_lcp();
  std::vector<uint32_t> states(v.max_token_length() + 1);
  std::vector<uint32_t> chars(v.max_token_length() + 1);
  auto entry = [](StringRun run, uint32_t c) {
    return static_cast<uint16_t>(run | (std::min(c, kMaxProfileChars) << 2));
  };
  states[0] = u;
  chars[0] = 0;
  // Sorted indices of the tokens that do not fail: the sets below are
  // built from them alone (from most U states nearly every token fails).
  std::vector<uint32_t> live;
  size_t depth = 0;
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view tok = v.sorted_token(i);
    depth = std::min<size_t>(depth, lcp[i]);  // states[0..depth] hold for token i
    bool failed = false;
    while (depth < tok.size()) {
      uint32_t s = states[depth];
      uint8_t b = static_cast<uint8_t>(tok[depth]);
      uint32_t next = a.DenseNext(s, b);
      if (next == kNoState) {
        failed = true;
        break;
      }
      states[depth + 1] = next;
      chars[depth + 1] = chars[depth] + (s == model.body() && b != '"' ? 1 : 0);
      ++depth;
    }
    if (!failed) {
      (*out)[i] = entry(states[depth] == model.end() ? kRunClosesAtEnd : kRunInside, chars[depth]);
      live.push_back(i);
      continue;
    }
    // Every token sharing the failing byte fails there too. U's final
    // state has no edges: failing there means the string closed before.
    uint32_t end = v.node_end(v.node(i, depth + 1));
    if (states[depth] == model.end()) {
      for (uint32_t j = i; j < end; ++j) {
        (*out)[j] = entry(kRunClosesEarly, chars[depth]);
        live.push_back(j);
      }
    }
    i = end - 1;
  }
  // The sets masks are assembled from.
  const auto& ids = v.sorted_ids();
  profile->inside_upto.assign(StringProfile::kShortChars + 1, TokenBitmask(v.size()));
  profile->accepted_any = TokenBitmask(v.size());
  for (uint32_t i : live) {
    uint16_t e = (*out)[i];
    uint32_t c = e >> 2;
    int32_t id = ids[i];
    switch (e & 3) {
      case kRunInside:
        profile->accepted_any.Set(id);
        if (c > StringProfile::kShortChars) {
          profile->inside_long.push_back(i);
        } else {
          for (uint32_t k = c; k <= StringProfile::kShortChars; ++k) {
            profile->inside_upto[k].Set(id);
          }
        }
        break;
      case kRunClosesAtEnd:
        profile->accepted_any.Set(id);
        profile->closes_at_end.push_back(i);
        break;
      case kRunClosesEarly:
        profile->closes_early.push_back(i);
        break;
      default:
        break;
    }
  }
  profiles_[u] = std::move(profile);
  return *profiles_[u];
}

}  // namespace deepinfer::grammar
