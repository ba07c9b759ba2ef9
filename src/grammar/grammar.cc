#include "grammar/grammar.h"

#include <algorithm>
#include <cstdio>

namespace deepinfer::grammar {

namespace {
Expr MakeExpr(ExprKind kind) {
  Expr e;
  e.kind = kind;
  return e;
}
}  // namespace

RuleId Grammar::AddRule(std::string name) {
  rule_names_.push_back(std::move(name));
  rule_bodies_.push_back(Nothing());
  return static_cast<RuleId>(rule_names_.size() - 1);
}

void Grammar::SetBody(RuleId rule, ExprId body) { rule_bodies_[rule] = body; }

RuleId Grammar::DefineRule(std::string name, ExprId body) {
  RuleId r = AddRule(std::move(name));
  SetBody(r, body);
  return r;
}

RuleId Grammar::FindRule(std::string_view name) const {
  for (size_t i = 0; i < rule_names_.size(); ++i) {
    if (rule_names_[i] == name) return static_cast<RuleId>(i);
  }
  return -1;
}

ExprId Grammar::Add(Expr e) {
  exprs_.push_back(std::move(e));
  return static_cast<ExprId>(exprs_.size() - 1);
}

RuleId Grammar::Import(const Grammar& other, const std::string& prefix) {
  const auto expr_base = static_cast<ExprId>(exprs_.size());
  const auto rule_base = static_cast<RuleId>(rule_names_.size());
  const auto automaton_base = static_cast<int32_t>(automata_.size());
  for (const Expr& e : other.exprs_) {
    Expr copy = e;
    for (ExprId& c : copy.children) c += expr_base;
    if (copy.kind == ExprKind::kRuleRef) copy.rule += rule_base;
    if (copy.kind == ExprKind::kAutomaton) copy.rule += automaton_base;
    exprs_.push_back(std::move(copy));
  }
  for (const ByteAutomaton& a : other.automata_) automata_.push_back(a);
  for (size_t r = 0; r < other.rule_names_.size(); ++r) {
    rule_names_.push_back(prefix + other.rule_names_[r]);
    rule_bodies_.push_back(other.rule_bodies_[r] + expr_base);
  }
  return other.root_ < 0 ? -1 : other.root_ + rule_base;
}

ExprId Grammar::Empty() { return Add(MakeExpr(ExprKind::kEmpty)); }
ExprId Grammar::Nothing() { return Add(MakeExpr(ExprKind::kNothing)); }

ExprId Grammar::Bytes(std::vector<ByteRange> ranges) {
  // Normalize: sorted, merged, so equal classes print equally.
  std::sort(ranges.begin(), ranges.end(), [](ByteRange a, ByteRange b) { return a.lo < b.lo; });
  std::vector<ByteRange> merged;
  for (ByteRange r : ranges) {
    if (r.lo > r.hi) continue;
    if (!merged.empty() && r.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  if (merged.empty()) return Nothing();
  Expr e = MakeExpr(ExprKind::kBytes);
  e.ranges = std::move(merged);
  return Add(std::move(e));
}

ExprId Grammar::Literal(std::string_view bytes) {
  if (bytes.empty()) return Empty();
  std::vector<ExprId> seq;
  seq.reserve(bytes.size());
  for (char c : bytes) seq.push_back(Byte(static_cast<uint8_t>(c)));
  return Sequence(std::move(seq));
}

// NOLINTNEXTLINE(performance-unnecessary-value-param): callers move their list in
ExprId Grammar::Sequence(std::vector<ExprId> children) {
  std::vector<ExprId> kept;
  for (ExprId c : children) {
    if (exprs_[c].kind == ExprKind::kEmpty) continue;
    if (exprs_[c].kind == ExprKind::kNothing) return Nothing();
    kept.push_back(c);
  }
  if (kept.empty()) return Empty();
  if (kept.size() == 1) return kept[0];
  Expr e = MakeExpr(ExprKind::kSequence);
  e.children = std::move(kept);
  return Add(std::move(e));
}

// NOLINTNEXTLINE(performance-unnecessary-value-param): callers move their list in
ExprId Grammar::Choice(std::vector<ExprId> children) {
  std::vector<ExprId> kept;
  for (ExprId c : children) {
    if (exprs_[c].kind != ExprKind::kNothing) kept.push_back(c);
  }
  if (kept.empty()) return Nothing();
  if (kept.size() == 1) return kept[0];
  Expr e = MakeExpr(ExprKind::kChoice);
  e.children = std::move(kept);
  return Add(std::move(e));
}

ExprId Grammar::Ref(RuleId rule) {
  Expr e = MakeExpr(ExprKind::kRuleRef);
  e.rule = rule;
  return Add(std::move(e));
}

ExprId Grammar::Repeat(ExprId child, int32_t min, int32_t max) {
  if (max != kUnbounded && max < min) return Nothing();
  if (max == 0) return Empty();
  if (min == 1 && max == 1) return child;
  // Collapse nested unbounded repeats ((x+)+, (x*)?, ...): they denote the
  // same language, and expanding them literally doubles the automaton per
  // level (a fuzzer found "x++++++++++++").
  const Expr& inner = exprs_[child];
  if (inner.kind == ExprKind::kRepeat && inner.max == kUnbounded && inner.min <= 1 &&
      (max == kUnbounded || min == 0)) {
    ExprId x = inner.children[0];
    int32_t new_min = inner.min == 0 ? 0 : min;  // (x*)^n = x*; (x+){m,} = x{m,}; (x+)? = x*
    return Repeat(x, new_min, kUnbounded);
  }
  Expr e = MakeExpr(ExprKind::kRepeat);
  e.min = min;
  e.max = max;
  e.children = {child};
  return Add(std::move(e));
}

ExprId Grammar::Automaton(ByteAutomaton automaton) {
  if (automaton.is_final.empty() || automaton.edges.size() != automaton.is_final.size()) return Nothing();
  Expr e = MakeExpr(ExprKind::kAutomaton);
  e.rule = static_cast<int32_t>(automata_.size());
  automata_.push_back(std::move(automaton));
  return Add(std::move(e));
}

// Flat dump (one line per rule, one per expression) rather than nested text:
// it needs no recursion, so any user-built depth prints safely.
std::string Grammar::ToString() const {
  std::string out;
  char buf[64];
  for (size_t r = 0; r < rule_names_.size(); ++r) {
    std::snprintf(buf, sizeof(buf), "r%zu ", r);
    out += buf;
    out += rule_names_[r];
    std::snprintf(buf, sizeof(buf), " = e%d%s\n", rule_bodies_[r],
                  static_cast<RuleId>(r) == root_ ? " (root)" : "");
    out += buf;
  }
  for (size_t i = 0; i < exprs_.size(); ++i) {
    const Expr& e = exprs_[i];
    std::snprintf(buf, sizeof(buf), "e%zu ", i);
    out += buf;
    switch (e.kind) {
      case ExprKind::kEmpty:
        out += "empty";
        break;
      case ExprKind::kNothing:
        out += "nothing";
        break;
      case ExprKind::kBytes:
        out += "[";
        for (ByteRange br : e.ranges) {
          std::snprintf(buf, sizeof(buf), "%02x-%02x ", br.lo, br.hi);
          out += buf;
        }
        out += "]";
        break;
      case ExprKind::kSequence:
        out += "seq";
        break;
      case ExprKind::kChoice:
        out += "alt";
        break;
      case ExprKind::kRuleRef:
        std::snprintf(buf, sizeof(buf), "ref r%d", e.rule);
        out += buf;
        break;
      case ExprKind::kRepeat:
        std::snprintf(buf, sizeof(buf), "rep{%d,%d}", e.min, e.max);
        out += buf;
        break;
      case ExprKind::kAutomaton: {
        const ByteAutomaton& a = automata_[e.rule];
        std::snprintf(buf, sizeof(buf), "automaton{%zu states}", a.is_final.size());
        out += buf;
        for (size_t s = 0; s < a.is_final.size(); ++s) {
          std::snprintf(buf, sizeof(buf), " s%zu%s:", s, a.is_final[s] ? "*" : "");
          out += buf;
          for (const ByteAutomaton::Edge& edge : a.edges[s]) {
            std::snprintf(buf, sizeof(buf), " %02x-%02x>%u", edge.lo, edge.hi, edge.target);
            out += buf;
          }
        }
        break;
      }
    }
    for (ExprId c : e.children) {
      std::snprintf(buf, sizeof(buf), " e%d", c);
      out += buf;
    }
    out += "\n";
  }
  return out;
}

}  // namespace deepinfer::grammar
