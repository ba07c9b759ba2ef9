#include "grammar/json_constrained.h"

#include <nlohmann/json.hpp>

#include "grammar/json_primitives.h"

namespace deepinfer::grammar {

namespace {

constexpr size_t kMaxProductStates = 50000;

using MachinePtr = std::unique_ptr<ByteMachine>;

// Owns the machines of one product and their roles.
struct Factors {
  std::vector<MachinePtr> owned;
  std::vector<ProductFactor> list;
  // A null machine is an empty language: required -> nothing matches;
  // forbidden -> no effect. Returns false when nothing can match.
  bool Add(MachinePtr m, bool required) {
    if (!m) return !required;
    list.push_back({m.get(), required});
    owned.push_back(std::move(m));
    return true;
  }
  StatusOr<ExprId> Build(Grammar* g) const {
    DI_ASSIGN_OR_RETURN(std::optional<ByteAutomaton> a, MachineProduct(list, kMaxProductStates));
    if (!a) return g->Nothing();
    return g->Automaton(std::move(*a));
  }
};

// Every no-exponent spelling of the value `d`: I, I.F0*, and for zero also
// the negative spellings.
ExprId DecimalSpellings(Grammar* g, const Decimal& d) {
  bool zero = d.int_digits == "0" && d.frac_digits.empty();
  ExprId sign = zero ? g->Optional(g->Byte('-')) : (d.negative ? g->Byte('-') : g->Empty());
  ExprId zeros = g->Star(g->Byte('0'));
  ExprId frac = d.frac_digits.empty() ? g->Optional(g->Sequence({g->Byte('.'), g->Plus(g->Byte('0'))}))
                                      : g->Sequence({g->Byte('.'), g->Literal(d.frac_digits), zeros});
  return g->Sequence({sign, g->Literal(d.int_digits), frac});
}

}  // namespace

StatusOr<ExprId> ConstrainedJsonString(Grammar* g, const StringConstraints& c) {
  if (c.max_len && *c.max_len < c.min_len) return g->Nothing();
  bool negatives = !c.not_patterns.empty() || !c.not_values.empty();
  if (!negatives && c.patterns.empty()) return JsonString(g, c.min_len, c.max_len);
  if (!negatives && c.patterns.size() == 1 && c.min_len == 0 && !c.max_len) {
    return JsonStringPattern(g, c.patterns[0]);
  }
  Factors f;
  for (const std::string& p : c.patterns) {
    DI_ASSIGN_OR_RETURN(MachinePtr m,
                        DenseMachine([&](Grammar* pg) { return JsonStringPattern(pg, p); }, "pattern"));
    if (!f.Add(std::move(m), true)) return g->Nothing();
  }
  if (negatives) {
    // Complements are taken on decoded text: one spelling per character.
    DI_ASSIGN_OR_RETURN(
        MachinePtr canonical,
        DenseMachine([](Grammar* cg) -> StatusOr<ExprId> { return JsonCanonicalString(cg); }, "string"));
    f.Add(std::move(canonical), true);
  }
  if (c.min_len > 0 || c.max_len) f.Add(JsonLengthMachine(c.min_len, c.max_len), true);
  for (const std::string& p : c.not_patterns) {
    DI_ASSIGN_OR_RETURN(MachinePtr m,
                        DenseMachine([&](Grammar* pg) { return JsonStringPattern(pg, p); }, "not pattern"));
    f.Add(std::move(m), false);
  }
  if (!c.not_values.empty()) {
    DI_ASSIGN_OR_RETURN(MachinePtr m, DenseMachine(
                                          [&](Grammar* vg) -> StatusOr<ExprId> {
                                            std::vector<ExprId> alts;
                                            for (const std::string& v : c.not_values) {
                                              alts.push_back(vg->Literal(nlohmann::json(v).dump()));
                                            }
                                            return vg->Choice(std::move(alts));
                                          },
                                          "not enum"));
    f.Add(std::move(m), false);
  }
  return f.Build(g);
}

StatusOr<ExprId> ConstrainedJsonInteger(Grammar* g, const IntegerConstraints& c) {
  if (c.lo && c.hi && *c.lo > *c.hi) return g->Nothing();
  if (c.multiple_of <= 1 && c.excluded.empty()) {
    return c.lo || c.hi ? IntegerRange(g, c.lo, c.hi) : JsonInteger(g);
  }
  Factors f;
  DI_ASSIGN_OR_RETURN(MachinePtr range, DenseMachine(
                                            [&](Grammar* rg) -> StatusOr<ExprId> {
                                              return c.lo || c.hi ? IntegerRange(rg, c.lo, c.hi)
                                                                  : JsonInteger(rg);
                                            },
                                            "integer range"));
  if (!f.Add(std::move(range), true)) return g->Nothing();
  if (c.multiple_of > 1) f.Add(MultipleOfMachine(c.multiple_of), true);
  for (int64_t v : c.excluded) {
    Decimal d;
    d.negative = v < 0;
    d.int_digits = std::to_string(v < 0 ? -static_cast<uint64_t>(v) : static_cast<uint64_t>(v));
    DI_ASSIGN_OR_RETURN(MachinePtr m, DenseMachine(
                                          [&](Grammar* vg) -> StatusOr<ExprId> {
                                            // Integer spellings only: no fraction here.
                                            ExprId sign = v == 0  ? vg->Optional(vg->Byte('-'))
                                                          : v < 0 ? vg->Byte('-')
                                                                  : vg->Empty();
                                            return vg->Sequence({sign, vg->Literal(d.int_digits)});
                                          },
                                          "not enum"));
    f.Add(std::move(m), false);
  }
  return f.Build(g);
}

StatusOr<ExprId> ConstrainedJsonNumber(Grammar* g, const NumberConstraints& c) {
  Factors f;
  f.Add(DecimalSyntaxMachine(), true);
  if (c.lo) f.Add(DecimalBoundMachine(*c.lo, /*lower=*/true, c.lo_strict), true);
  if (c.hi) f.Add(DecimalBoundMachine(*c.hi, /*lower=*/false, c.hi_strict), true);
  if (c.multiple_of > 0) f.Add(ScaledMultipleOfMachine(c.multiple_of, c.multiple_of_scale), true);
  if (c.non_integral) f.Add(MultipleOfMachine(1), false);
  for (const Decimal& d : c.excluded) {
    DI_ASSIGN_OR_RETURN(
        MachinePtr m,
        DenseMachine([&](Grammar* vg) -> StatusOr<ExprId> { return DecimalSpellings(vg, d); }, "not enum"));
    f.Add(std::move(m), false);
  }
  return f.Build(g);
}

}  // namespace deepinfer::grammar
