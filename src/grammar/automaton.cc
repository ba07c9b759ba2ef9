#include "grammar/automaton.h"

#include <algorithm>
#include <bitset>
#include <chrono>
#include <map>
#include <unordered_map>

namespace deepinfer::grammar {

Deadline::Deadline(double seconds) : seconds_(seconds) {
  int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now().time_since_epoch())
                    .count();
  end_ns_ = now + static_cast<int64_t>(seconds * 1e9);
}

bool Deadline::Expired() const {
  int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now().time_since_epoch())
                    .count();
  return now > end_ns_;
}

namespace {

struct NfaEdge {
  uint8_t lo;
  uint8_t hi;
  RuleId rule;  // -1: byte edge
  uint32_t target;
};

// Thompson NFA of one rule: state 0 is the start, `final` the accept state.
struct Nfa {
  std::vector<std::vector<uint32_t>> eps;
  std::vector<std::vector<NfaEdge>> edges;
  uint32_t final = 0;
  uint32_t NewState() {
    eps.emplace_back();
    edges.emplace_back();
    return static_cast<uint32_t>(eps.size() - 1);
  }
};

Status TimeLimitError(const Deadline& d) {
  char buf[96];
  std::snprintf(buf, sizeof(buf), "grammar compile time limit (%.1f s) exceeded", d.seconds());
  return ResourceExhausted(buf);
}

class ThompsonBuilder {
 public:
  ThompsonBuilder(const Grammar& g, const BuildLimits& limits, const Deadline& deadline)
      : g_(g), limits_(limits), deadline_(deadline) {}

  StatusOr<Nfa> BuildRule(RuleId r) {
    Nfa nfa;
    uint32_t start = nfa.NewState();
    DI_ASSIGN_OR_RETURN(uint32_t end, Emit(nfa, g_.rule_body(r), start, 0));
    nfa.final = end;
    return nfa;
  }

 private:
  // Emits `e` starting at state `in`; returns the state reached after it.
  StatusOr<uint32_t> Emit(Nfa& nfa, ExprId id, uint32_t in, int depth) {
    if (depth > limits_.max_expr_depth) {
      return ResourceExhausted("grammar expression nesting deeper than " +
                               std::to_string(limits_.max_expr_depth));
    }
    if (++total_states_ > limits_.max_nfa_states) {
      return ResourceExhausted("grammar too large: more than " + std::to_string(limits_.max_nfa_states) +
                               " automaton states (large repetition counts?)");
    }
    if ((total_states_ & 1023) == 0 && deadline_.Expired()) return TimeLimitError(deadline_);
    const Expr& e = g_.expr(id);
    switch (e.kind) {
      case ExprKind::kEmpty:
        return in;
      case ExprKind::kNothing:
        return nfa.NewState();  // unreachable from `in`: matches nothing
      case ExprKind::kBytes: {
        uint32_t out = nfa.NewState();
        for (ByteRange r : e.ranges) nfa.edges[in].push_back({r.lo, r.hi, -1, out});
        return out;
      }
      case ExprKind::kRuleRef: {
        uint32_t out = nfa.NewState();
        nfa.edges[in].push_back({0, 0, e.rule, out});
        return out;
      }
      case ExprKind::kSequence: {
        uint32_t cur = in;
        for (ExprId c : e.children) {
          DI_ASSIGN_OR_RETURN(cur, Emit(nfa, c, cur, depth + 1));
        }
        return cur;
      }
      case ExprKind::kChoice: {
        uint32_t out = nfa.NewState();
        for (ExprId c : e.children) {
          // A fresh entry per alternative keeps loops in one alternative
          // from leaking into the others.
          uint32_t entry = nfa.NewState();
          nfa.eps[in].push_back(entry);
          DI_ASSIGN_OR_RETURN(uint32_t end, Emit(nfa, c, entry, depth + 1));
          nfa.eps[end].push_back(out);
        }
        return out;
      }
      case ExprKind::kAutomaton: {
        const ByteAutomaton& src = g_.automaton(e.rule);
        total_states_ += src.is_final.size();
        if (total_states_ > limits_.max_nfa_states) {
          return ResourceExhausted("grammar too large: more than " + std::to_string(limits_.max_nfa_states) +
                                   " automaton states");
        }
        std::vector<uint32_t> ids(src.is_final.size());
        for (uint32_t& id : ids) id = nfa.NewState();
        uint32_t out = nfa.NewState();
        nfa.eps[in].push_back(ids[0]);
        for (size_t s = 0; s < ids.size(); ++s) {
          for (const ByteAutomaton::Edge& edge : src.edges[s]) {
            if (edge.target < ids.size()) {
              nfa.edges[ids[s]].push_back({edge.lo, edge.hi, -1, ids[edge.target]});
            }
          }
          if (src.is_final[s]) nfa.eps[ids[s]].push_back(out);
        }
        return out;
      }
      case ExprKind::kRepeat: {
        ExprId child = e.children[0];
        uint32_t cur = in;
        for (int32_t i = 0; i < e.min; ++i) {
          uint32_t entry = nfa.NewState();
          nfa.eps[cur].push_back(entry);
          DI_ASSIGN_OR_RETURN(cur, Emit(nfa, child, entry, depth + 1));
        }
        if (e.max == Grammar::kUnbounded) {
          uint32_t loop = nfa.NewState();
          nfa.eps[cur].push_back(loop);
          DI_ASSIGN_OR_RETURN(uint32_t end, Emit(nfa, child, loop, depth + 1));
          nfa.eps[end].push_back(loop);
          return loop;
        }
        uint32_t out = nfa.NewState();
        nfa.eps[cur].push_back(out);
        for (int32_t i = e.min; i < e.max; ++i) {
          uint32_t entry = nfa.NewState();
          nfa.eps[cur].push_back(entry);
          DI_ASSIGN_OR_RETURN(cur, Emit(nfa, child, entry, depth + 1));
          nfa.eps[cur].push_back(out);
        }
        return out;
      }
    }
    return Internal("unknown expression kind");
  }

  const Grammar& g_;
  const BuildLimits& limits_;
  const Deadline& deadline_;
  size_t total_states_ = 0;
};

// Hash of a sorted state set (subsets, Moore signatures).
struct SubsetHash {
  size_t operator()(const std::vector<uint32_t>& v) const {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ v.size();
    for (uint32_t x : v) h = (h ^ x) * 0x100000001B3ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

// One rule's automaton before it is appended to the global arrays.
struct LocalAutomaton {
  std::vector<std::vector<ByteEdge>> byte_edges;
  std::vector<std::vector<RuleEdge>> rule_edges;
  std::vector<uint8_t> is_final;
  bool deterministic = true;
};

class SubsetBuilder {
 public:
  SubsetBuilder(const Nfa& nfa, const Deadline& deadline)
      : nfa_(nfa), deadline_(deadline), stamp_(nfa.eps.size(), 0) {}

  // Subset construction; returns false if more than `cap` states are needed.
  // Subsets are numbered in order of discovery (breadth first), so the
  // result depends only on the NFA. Scratch vectors are reused across
  // subsets and a subset is copied only when it is new (the build is
  // allocation-bound otherwise).
  StatusOr<bool> Determinize(size_t cap, LocalAutomaton* out) {
    std::unordered_map<std::vector<uint32_t>, uint32_t, SubsetHash> ids;
    std::vector<const std::vector<uint32_t>*> sets;  // keys of `ids` (stable)
    auto intern = [&](const std::vector<uint32_t>& set) -> uint32_t {
      auto [it, inserted] = ids.try_emplace(set, static_cast<uint32_t>(sets.size()));
      if (inserted) sets.push_back(&it->first);
      return it->second;
    };
    std::vector<NfaEdge> bytes;
    std::vector<std::pair<RuleId, uint32_t>> rule_targets;
    std::vector<uint32_t> targets;
    intern(Closure({0}));
    for (size_t d = 0; d < sets.size(); ++d) {
      if (sets.size() > cap) return false;
      // Each subset costs up to a closure over the whole NFA: check often.
      if (deadline_.Expired()) return TimeLimitError(deadline_);
      bytes.clear();
      rule_targets.clear();
      bool final = false;
      for (uint32_t s : *sets[d]) {
        if (s == nfa_.final) final = true;
        for (const NfaEdge& e : nfa_.edges[s]) {
          if (e.rule >= 0) {
            rule_targets.emplace_back(e.rule, e.target);
          } else {
            bytes.push_back(e);
          }
        }
      }
      std::vector<ByteEdge> out_bytes;
      // Partition 0..255 at every range boundary; each piece has one target set.
      std::bitset<257> is_cut;
      for (const NfaEdge& e : bytes) {
        is_cut.set(e.lo);
        is_cut.set(e.hi + 1);
      }
      int lo = -1;
      for (int c = 0; c <= 256; ++c) {
        if (!is_cut[c]) continue;
        if (lo >= 0) {
          const int hi = c - 1;
          targets.clear();
          for (const NfaEdge& e : bytes) {
            if (e.lo <= lo && hi <= e.hi) targets.push_back(e.target);
          }
          if (!targets.empty()) {
            uint32_t t = intern(Closure(targets));
            if (!out_bytes.empty() && out_bytes.back().target == t && out_bytes.back().hi + 1 == lo) {
              out_bytes.back().hi = static_cast<uint8_t>(hi);
            } else {
              out_bytes.push_back({static_cast<uint8_t>(lo), static_cast<uint8_t>(hi), t});
            }
          }
        }
        lo = c;
      }
      // One edge per referenced rule, in rule order.
      std::stable_sort(rule_targets.begin(), rule_targets.end(),
                       [](const auto& x, const auto& y) { return x.first < y.first; });
      std::vector<RuleEdge> out_rules;
      for (size_t i = 0; i < rule_targets.size();) {
        targets.clear();
        size_t j = i;
        for (; j < rule_targets.size() && rule_targets[j].first == rule_targets[i].first; ++j) {
          targets.push_back(rule_targets[j].second);
        }
        out_rules.push_back({rule_targets[i].first, intern(Closure(targets))});
        i = j;
      }
      out->byte_edges.push_back(std::move(out_bytes));
      out->rule_edges.push_back(std::move(out_rules));
      out->is_final.push_back(final);
    }
    out->deterministic = true;
    return true;
  }

  // Epsilon-free NFA: one state per Thompson state that starts or ends a
  // labelled edge; linear in the Thompson size, used when subsets blow up.
  Status EpsilonFree(LocalAutomaton* out) {
    std::vector<uint32_t> id(nfa_.eps.size(), kNoState);
    std::vector<uint32_t> order = {0};
    id[0] = 0;
    for (size_t d = 0; d < order.size(); ++d) {
      if ((d & 15) == 15 && deadline_.Expired()) return TimeLimitError(deadline_);
      std::vector<uint32_t> set = Closure({order[d]});
      std::vector<ByteEdge> bytes;
      std::vector<RuleEdge> rules;
      bool final = false;
      for (uint32_t s : set) {
        if (s == nfa_.final) final = true;
        for (const NfaEdge& e : nfa_.edges[s]) {
          if (id[e.target] == kNoState) {
            id[e.target] = static_cast<uint32_t>(order.size());
            order.push_back(e.target);
          }
          if (e.rule >= 0) {
            rules.push_back({e.rule, id[e.target]});
          } else {
            bytes.push_back({e.lo, e.hi, id[e.target]});
          }
        }
      }
      out->byte_edges.push_back(std::move(bytes));
      out->rule_edges.push_back(std::move(rules));
      out->is_final.push_back(final);
    }
    out->deterministic = false;
    return Status::Ok();
  }

 private:
  // The sorted labelled states epsilon-reachable from `seeds`; the result
  // lives in a scratch vector valid until the next call.
  const std::vector<uint32_t>& Closure(const std::vector<uint32_t>& seeds) {
    ++generation_;
    stack_.clear();
    closure_.clear();
    for (uint32_t s : seeds) {
      if (stamp_[s] != generation_) {
        stamp_[s] = generation_;
        stack_.push_back(s);
      }
    }
    while (!stack_.empty()) {
      uint32_t s = stack_.back();
      stack_.pop_back();
      // Only states with labelled edges or the accept state matter for the
      // subset's identity; pure epsilon hubs are dropped to merge more sets.
      if (!nfa_.edges[s].empty() || s == nfa_.final) closure_.push_back(s);
      for (uint32_t t : nfa_.eps[s]) {
        if (stamp_[t] != generation_) {
          stamp_[t] = generation_;
          stack_.push_back(t);
        }
      }
    }
    std::sort(closure_.begin(), closure_.end());
    return closure_;
  }

  const Nfa& nfa_;
  const Deadline& deadline_;
  std::vector<uint32_t> stamp_;
  uint32_t generation_ = 0;
  std::vector<uint32_t> stack_, closure_;
};

// Moore partition refinement of a deterministic rule automaton: merges
// states with identical futures (e.g. the many copies of "rest of a JSON
// string" in an object-key trie), which shrinks both the automaton and the
// number of mask-cache positions. State 0 stays the start state.
void Minimize(LocalAutomaton* a, const Deadline& deadline) {
  const size_t n = a->is_final.size();
  std::vector<uint32_t> cls(n), next_cls(n);
  for (size_t s = 0; s < n; ++s) cls[s] = a->is_final[s];
  size_t num_classes = 0;
  std::vector<uint32_t> sig;
  for (int iter = 0;; ++iter) {
    if ((iter & 15) == 15 && deadline.Expired()) return;  // keep what we have (still correct)
    std::unordered_map<std::vector<uint32_t>, uint32_t, SubsetHash> ids;
    ids.reserve(n);
    for (size_t s = 0; s < n; ++s) {
      sig.clear();
      sig.push_back(cls[s]);
      for (const ByteEdge& e : a->byte_edges[s]) {
        // Adjacent ranges into the same class are one range for comparison.
        if (sig.size() >= 4 && sig[sig.size() - 1] == cls[e.target] && sig[sig.size() - 2] + 1 == e.lo) {
          sig[sig.size() - 2] = e.hi;
        } else {
          sig.push_back(e.lo);
          sig.push_back(e.hi);
          sig.push_back(cls[e.target]);
        }
      }
      sig.push_back(0xFFFFFFFFu);
      for (const RuleEdge& e : a->rule_edges[s]) {
        sig.push_back(static_cast<uint32_t>(e.rule));
        sig.push_back(cls[e.target]);
      }
      auto [it, inserted] = ids.emplace(sig, static_cast<uint32_t>(ids.size()));
      next_cls[s] = it->second;
    }
    bool stable = ids.size() == num_classes;
    num_classes = ids.size();
    cls.swap(next_cls);
    if (stable) break;
  }
  if (num_classes == n) return;
  LocalAutomaton out;
  out.deterministic = true;
  std::vector<int64_t> rep(num_classes, -1);
  for (size_t s = 0; s < n; ++s) {
    if (rep[cls[s]] < 0) rep[cls[s]] = static_cast<int64_t>(s);
  }
  for (size_t c = 0; c < num_classes; ++c) {
    size_t s = static_cast<size_t>(rep[c]);
    std::vector<ByteEdge> bytes;
    for (const ByteEdge& e : a->byte_edges[s]) {
      uint32_t t = cls[e.target];
      if (!bytes.empty() && bytes.back().target == t && bytes.back().hi + 1 == e.lo) {
        bytes.back().hi = e.hi;
      } else {
        bytes.push_back({e.lo, e.hi, t});
      }
    }
    std::vector<RuleEdge> rules;
    for (const RuleEdge& e : a->rule_edges[s]) rules.push_back({e.rule, cls[e.target]});
    out.byte_edges.push_back(std::move(bytes));
    out.rule_edges.push_back(std::move(rules));
    out.is_final.push_back(a->is_final[s]);
  }
  *a = std::move(out);
}

// Marks states that can reach a final state, and rules that derive some
// string, by backward propagation to a fixpoint (linear in edges).
void ComputeLiveness(const GrammarAutomaton& a, std::vector<uint8_t>* live,
                     std::vector<uint8_t>* productive) {
  uint32_t n = a.num_states();
  size_t num_rules = a.rule_start.size();
  struct Pred {
    uint32_t source;
    RuleId rule;
  };
  std::vector<std::vector<Pred>> preds(n);
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> uses(num_rules);  // (source, target)
  for (uint32_t s = 0; s < n; ++s) {
    for (uint32_t i = a.byte_edge_begin[s]; i < a.byte_edge_begin[s + 1]; ++i) {
      preds[a.byte_edges[i].target].push_back({s, -1});
    }
    for (uint32_t i = a.rule_edge_begin[s]; i < a.rule_edge_begin[s + 1]; ++i) {
      const RuleEdge& e = a.rule_edges[i];
      preds[e.target].push_back({s, e.rule});
      uses[e.rule].push_back({s, e.target});
    }
  }
  live->assign(n, 0);
  productive->assign(num_rules, 0);
  std::vector<uint32_t> work;
  auto mark = [&](uint32_t s) {
    if (!(*live)[s]) {
      (*live)[s] = 1;
      work.push_back(s);
    }
  };
  for (uint32_t s = 0; s < n; ++s) {
    if (a.is_final[s]) mark(s);
  }
  while (!work.empty()) {
    uint32_t s = work.back();
    work.pop_back();
    for (const Pred& p : preds[s]) {
      if (p.rule < 0 || (*productive)[p.rule]) mark(p.source);
    }
    RuleId r = a.state_rule[s];
    if (a.rule_start[r] == s && !(*productive)[r]) {
      (*productive)[r] = 1;
      for (auto [source, target] : uses[r]) {
        if ((*live)[target]) mark(source);
      }
    }
  }
}

}  // namespace

StatusOr<GrammarAutomaton> BuildAutomaton(const Grammar& g, const BuildLimits& limits,
                                          const Deadline& deadline) {
  if (g.root() < 0 || static_cast<size_t>(g.root()) >= g.num_rules()) {
    return InvalidArgument("grammar has no root rule");
  }
  GrammarAutomaton a;
  a.root = g.root();
  ThompsonBuilder thompson(g, limits, deadline);
  std::vector<uint8_t> deterministic(g.num_rules(), 0);
  a.byte_edge_begin.push_back(0);
  a.rule_edge_begin.push_back(0);
  for (size_t r = 0; r < g.num_rules(); ++r) {
    a.rule_names.push_back(g.rule_name(static_cast<RuleId>(r)));
    DI_ASSIGN_OR_RETURN(Nfa nfa, thompson.BuildRule(static_cast<RuleId>(r)));
    SubsetBuilder subsets(nfa, deadline);
    LocalAutomaton local;
    DI_ASSIGN_OR_RETURN(bool ok, subsets.Determinize(limits.max_dfa_states_per_rule, &local));
    if (!ok) {
      local = LocalAutomaton();
      DI_RETURN_IF_ERROR(subsets.EpsilonFree(&local));
    } else if (local.is_final.size() <= limits.max_minimize_states) {
      Minimize(&local, deadline);
    }
    deterministic[r] = local.deterministic;
    uint32_t base = a.num_states();
    a.rule_start.push_back(base);
    for (size_t s = 0; s < local.is_final.size(); ++s) {
      for (ByteEdge e : local.byte_edges[s]) a.byte_edges.push_back({e.lo, e.hi, e.target + base});
      for (RuleEdge e : local.rule_edges[s]) a.rule_edges.push_back({e.rule, e.target + base});
      a.byte_edge_begin.push_back(static_cast<uint32_t>(a.byte_edges.size()));
      a.rule_edge_begin.push_back(static_cast<uint32_t>(a.rule_edges.size()));
      a.is_final.push_back(local.is_final[s]);
      a.state_rule.push_back(static_cast<RuleId>(r));
    }
  }

  // Prune edges into dead states and unproductive rules.
  std::vector<uint8_t> live, productive;
  ComputeLiveness(a, &live, &productive);
  if (!productive[a.root]) {
    return InvalidArgument("grammar matches no string (root rule '" + g.rule_name(a.root) + "')");
  }
  {
    std::vector<ByteEdge> bytes;
    std::vector<RuleEdge> rules;
    std::vector<uint32_t> bb = {0}, rb = {0};
    for (uint32_t s = 0; s < a.num_states(); ++s) {
      for (uint32_t i = a.byte_edge_begin[s]; i < a.byte_edge_begin[s + 1]; ++i) {
        if (live[s] && live[a.byte_edges[i].target]) bytes.push_back(a.byte_edges[i]);
      }
      for (uint32_t i = a.rule_edge_begin[s]; i < a.rule_edge_begin[s + 1]; ++i) {
        const RuleEdge& e = a.rule_edges[i];
        if (live[s] && live[e.target] && productive[e.rule]) rules.push_back(e);
      }
      bb.push_back(static_cast<uint32_t>(bytes.size()));
      rb.push_back(static_cast<uint32_t>(rules.size()));
    }
    a.byte_edges = std::move(bytes);
    a.rule_edges = std::move(rules);
    a.byte_edge_begin = std::move(bb);
    a.rule_edge_begin = std::move(rb);
  }

  // Nullable rules (needed by the Earley nullable-completion shortcut):
  // a state is nullable if final, or a nullable rule edge leads to one.
  a.rule_nullable.assign(g.num_rules(), 0);
  std::vector<uint8_t> nullable_state(a.is_final.begin(), a.is_final.end());
  for (bool changed = true; changed;) {
    changed = false;
    if (deadline.Expired()) return TimeLimitError(deadline);
    for (uint32_t s = a.num_states(); s-- > 0;) {
      if (!nullable_state[s]) {
        for (uint32_t i = a.rule_edge_begin[s]; i < a.rule_edge_begin[s + 1]; ++i) {
          const RuleEdge& e = a.rule_edges[i];
          if (a.rule_nullable[e.rule] && nullable_state[e.target]) {
            nullable_state[s] = 1;
            changed = true;
            break;
          }
        }
      }
    }
    for (size_t r = 0; r < g.num_rules(); ++r) {
      if (!a.rule_nullable[r] && nullable_state[a.rule_start[r]]) {
        a.rule_nullable[r] = 1;
        changed = true;
      }
    }
  }

  for (size_t r = 0; r < g.num_rules(); ++r) {
    a.rule_end.push_back(r + 1 < g.num_rules() ? a.rule_start[r + 1] : a.num_states());
  }
  // Dense tables for deterministic rules without rule references.
  a.rule_terminal.assign(g.num_rules(), 0);
  a.rule_deterministic.assign(g.num_rules(), 0);
  a.terminal_signature.assign(g.num_rules(), std::string());
  a.dense_offset.assign(a.num_states(), kNoState);
  for (size_t r = 0; r < g.num_rules(); ++r) {
    uint32_t begin = a.rule_start[r];
    uint32_t end = r + 1 < g.num_rules() ? a.rule_start[r + 1] : a.num_states();
    if (!deterministic[r] || a.rule_edge_begin[end] != a.rule_edge_begin[begin]) continue;
    a.rule_deterministic[r] = 1;
    if (end - begin > limits.max_dense_states_per_rule) continue;
    a.rule_terminal[r] = 1;
    std::string& sig = a.terminal_signature[r];
    auto put = [&sig](uint32_t v) { sig.append(reinterpret_cast<const char*>(&v), sizeof(v)); };
    for (uint32_t s = begin; s < end; ++s) {
      put(a.is_final[s]);
      put(a.byte_edge_begin[s + 1] - a.byte_edge_begin[s]);
      for (uint32_t i = a.byte_edge_begin[s]; i < a.byte_edge_begin[s + 1]; ++i) {
        const ByteEdge& e = a.byte_edges[i];
        put((uint32_t{e.lo} << 8) | e.hi);
        put(e.target - begin);
      }
    }
    for (uint32_t s = begin; s < end; ++s) {
      a.dense_offset[s] = static_cast<uint32_t>(a.dense_next.size());
      a.dense_next.resize(a.dense_next.size() + 256, kNoState);
      for (uint32_t i = a.byte_edge_begin[s]; i < a.byte_edge_begin[s + 1]; ++i) {
        const ByteEdge& e = a.byte_edges[i];
        for (int b = e.lo; b <= e.hi; ++b) a.dense_next[a.dense_offset[s] + b] = e.target;
      }
    }
  }
  // Self-loop byte sets of dense states.
  a.dense_loop.assign(a.dense_next.size() / 64, 0);
  for (uint32_t s = 0; s < a.num_states(); ++s) {
    if (a.dense_offset[s] == kNoState) continue;
    uint64_t* loop = &a.dense_loop[a.dense_offset[s] / 64];
    for (uint32_t i = a.byte_edge_begin[s]; i < a.byte_edge_begin[s + 1]; ++i) {
      const ByteEdge& e = a.byte_edges[i];
      if (e.target != s) continue;
      for (int b = e.lo; b <= e.hi; ++b) loop[b >> 6] |= uint64_t{1} << (b & 63);
    }
  }
  return a;
}

}  // namespace deepinfer::grammar
