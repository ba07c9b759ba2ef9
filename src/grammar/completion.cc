#include "grammar/completion.h"

#include <algorithm>

namespace deepinfer::grammar {

namespace {
uint32_t Add(uint32_t x, uint32_t y) { return std::min<uint32_t>(kUnreachable, x + y); }
}  // namespace

std::vector<uint32_t> ComputeCompletionDistances(const GrammarAutomaton& a) {
  const uint32_t n = a.num_states();
  std::vector<uint32_t> dist(n, kUnreachable);
  for (uint32_t s = 0; s < n; ++s) {
    if (a.is_final[s]) dist[s] = 0;
  }
  // Bellman-Ford rounds: every round settles at least one more level of
  // the shortest derivations; stops as soon as nothing improves.
  for (bool changed = true; changed;) {
    changed = false;
    for (uint32_t s = n; s-- > 0;) {
      uint32_t best = dist[s];
      for (uint32_t e = a.byte_edge_begin[s]; e < a.byte_edge_begin[s + 1]; ++e) {
        best = std::min(best, Add(1, dist[a.byte_edges[e].target]));
      }
      for (uint32_t e = a.rule_edge_begin[s]; e < a.rule_edge_begin[s + 1]; ++e) {
        const RuleEdge& edge = a.rule_edges[e];
        best = std::min(best, Add(dist[a.rule_start[edge.rule]], dist[edge.target]));
      }
      if (best < dist[s]) {
        dist[s] = best;
        changed = true;
      }
    }
  }
  return dist;
}

uint32_t CompletionCosts::Up(size_t set, RuleId rule) const {
  const auto& v = up_[set];
  auto it = std::lower_bound(v.begin(), v.end(), std::make_pair(rule, uint32_t{0}));
  return it != v.end() && it->first == rule ? it->second : kUnreachable;
}

void CompletionCosts::ComputeSet(const EarleyParser& parser, size_t k) {
  std::span<const EarleyItem> items = parser.SetItems(k);
  std::vector<std::pair<RuleId, uint32_t>>& mine = up_[k];
  mine.clear();
  // Rules completed by items of this set: one entry each.
  for (const EarleyItem& it : items) {
    for (uint32_t e = a_.rule_edge_begin[it.state]; e < a_.rule_edge_begin[it.state + 1]; ++e) {
      mine.push_back({a_.rule_edges[e].rule, kUnreachable});
    }
  }
  if (k == 0) mine.push_back({a_.root, 0});
  std::sort(mine.begin(), mine.end());
  mine.erase(
      std::unique(mine.begin(), mine.end(), [](const auto& x, const auto& y) { return x.first == y.first; }),
      mine.end());
  if (k == 0) {
    for (auto& [r, c] : mine) c = r == a_.root ? 0 : kUnreachable;
  }
  // Same-set references (predicted items) make this a small fixpoint.
  for (bool changed = true; changed;) {
    changed = false;
    for (const EarleyItem& it : items) {
      if (it.origin == EarleyParser::kSentinelOrigin) continue;
      uint32_t above =
          it.origin == k ? Up(k, a_.state_rule[it.state]) : Up(it.origin, a_.state_rule[it.state]);
      if (above >= kUnreachable) continue;
      for (uint32_t e = a_.rule_edge_begin[it.state]; e < a_.rule_edge_begin[it.state + 1]; ++e) {
        const RuleEdge& edge = a_.rule_edges[e];
        uint32_t c = Add(dist_[edge.target], above);
        auto pos = std::lower_bound(mine.begin(), mine.end(), std::make_pair(edge.rule, uint32_t{0}));
        if (c < pos->second) {
          pos->second = c;
          changed = true;
        }
      }
    }
  }
}

uint32_t CompletionCosts::Cost(const EarleyParser& parser) {
  const size_t n = parser.num_sets();
  if (up_.size() > n) up_.resize(n);
  while (up_.size() < n) {
    up_.emplace_back();
    ComputeSet(parser, up_.size() - 1);
  }
  uint32_t best = kUnreachable;
  for (const EarleyItem& it : parser.TopItems()) {
    if (it.origin == EarleyParser::kSentinelOrigin) continue;
    best = std::min(best, Add(dist_[it.state], Up(it.origin, a_.state_rule[it.state])));
  }
  return best;
}

std::string ShortestCompletion(const GrammarAutomaton& a, const std::vector<uint32_t>& dist,
                               EarleyParser* parser, size_t max_bytes) {
  std::string out;
  const size_t base = parser->num_sets();
  CompletionCosts costs(&a, &dist);
  uint32_t cost = costs.Cost(*parser);
  // Each step takes a byte that lowers the cost by exactly one; the
  // smallest such byte, so the result is deterministic.
  while (cost > 0 && cost < kUnreachable && out.size() < max_bytes) {
    std::vector<uint8_t> candidates;
    for (const EarleyItem& it : parser->TopItems()) {
      for (uint32_t e = a.byte_edge_begin[it.state]; e < a.byte_edge_begin[it.state + 1]; ++e) {
        candidates.push_back(a.byte_edges[e].lo);
      }
    }
    std::sort(candidates.begin(), candidates.end());
    candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
    bool stepped = false;
    for (uint8_t b : candidates) {
      if (!parser->Advance(b)) continue;
      uint32_t next = costs.Cost(*parser);
      if (next + 1 == cost) {
        out.push_back(static_cast<char>(b));
        cost = next;
        stepped = true;
        break;
      }
      parser->PopTo(parser->num_sets() - 1);
      costs.Truncate(parser->num_sets());
    }
    if (!stepped) break;  // cannot happen with exact costs; never loop forever
  }
  parser->PopTo(base);
  return out;
}

}  // namespace deepinfer::grammar
