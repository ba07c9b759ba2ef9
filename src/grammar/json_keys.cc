#include "grammar/json_keys.h"

#include <algorithm>
#include <functional>
#include <map>

#include "grammar/json_primitives.h"
#include "grammar/json_schema_util.h"
#include "grammar/utf8.h"

namespace deepinfer::grammar {

namespace {

using Json = nlohmann::ordered_json;
using AutomatonPtr = std::shared_ptr<const GrammarAutomaton>;

constexpr size_t kMaxPatterns = 8;
constexpr size_t kMaxProductStates = 20000;

// Builds a one-rule grammar and returns its dense automaton; nullptr when
// the language is empty.
StatusOr<AutomatonPtr> KeyAutomaton(const std::function<StatusOr<ExprId>(Grammar*)>& make,
                                    const std::string& what) {
  Grammar g;
  DI_ASSIGN_OR_RETURN(ExprId e, make(&g));
  g.set_root(g.DefineRule("key", e));
  Deadline deadline(5.0);
  auto a = BuildAutomaton(g, BuildLimits(), deadline);
  if (!a.ok()) {
    if (a.status().code() == StatusCode::kInvalidArgument) return AutomatonPtr();  // matches nothing
    return a.status();
  }
  if (!a->rule_terminal[a->root]) return ResourceExhausted(what + ": key automaton too large");
  return AutomatonPtr(std::make_shared<const GrammarAutomaton>(std::move(*a)));
}

uint32_t Start(const AutomatonPtr& a) { return a ? a->rule_start[a->root] : kNoState; }
uint32_t Next(const AutomatonPtr& a, uint32_t s, uint8_t b) {
  return s == kNoState ? kNoState : a->DenseNext(s, b);
}
bool Final(const AutomatonPtr& a, uint32_t s) { return s != kNoState && a->is_final[s]; }

bool Runs(const AutomatonPtr& a, const std::string& quoted) {
  uint32_t s = Start(a);
  for (char c : quoted) s = Next(a, s, static_cast<uint8_t>(c));
  return Final(a, s);
}

}  // namespace

StatusOr<JsonKeyLanguages> JsonKeyLanguages::Build(const std::vector<std::string>& patterns,
                                                   const Json* property_names) {
  JsonKeyLanguages out;
  if (patterns.size() > kMaxPatterns) {
    return Unimplemented("more than " + std::to_string(kMaxPatterns) + " patternProperties");
  }
  DI_ASSIGN_OR_RETURN(
      out.canonical_,
      KeyAutomaton([](Grammar* g) -> StatusOr<ExprId> { return JsonCanonicalString(g); }, "keys"));
  for (const std::string& p : patterns) {
    DI_ASSIGN_OR_RETURN(AutomatonPtr a, KeyAutomaton([&](Grammar* g) { return JsonStringPattern(g, p); },
                                                     "patternProperties '" + p + "'"));
    out.patterns_.push_back(std::move(a));
  }
  if (property_names == nullptr) return out;
  const Json& pn = *property_names;
  if (pn.is_boolean()) {
    out.no_names_ = !pn.get<bool>();
    return out;
  }
  if (!pn.is_object()) return InvalidArgument("propertyNames is not a schema");
  auto add = [&](const std::function<StatusOr<ExprId>(Grammar*)>& make, const std::string& what) -> Status {
    DI_ASSIGN_OR_RETURN(AutomatonPtr a, KeyAutomaton(make, "propertyNames " + what));
    if (!a) out.no_names_ = true;
    out.name_constraints_.push_back(std::move(a));
    return Status::Ok();
  };
  for (auto it = pn.begin(); it != pn.end(); ++it) {
    const std::string& k = it.key();
    const Json& v = it.value();
    if (json_schema_internal::IsAnnotation(k)) continue;
    if (k == "type") {
      bool string =
          v == Json("string") || (v.is_array() && std::find(v.begin(), v.end(), Json("string")) != v.end());
      if (!string) out.no_names_ = true;  // names are strings
    } else if (k == "pattern" && v.is_string()) {
      std::string p = v.get<std::string>();
      DI_RETURN_IF_ERROR(add([&](Grammar* g) { return JsonStringPattern(g, p); }, "pattern"));
    } else if (k == "format" && v.is_string()) {
      std::optional<std::string> re = FormatRegex(v.get<std::string>());
      if (re) DI_RETURN_IF_ERROR(add([&](Grammar* g) { return JsonStringPattern(g, *re); }, "format"));
    } else if ((k == "minLength" || k == "maxLength") && v.is_number_unsigned() &&
               v.get<uint64_t>() <= 10000) {
      int64_t n = static_cast<int64_t>(v.get<uint64_t>());
      DI_RETURN_IF_ERROR(add(
          [&](Grammar* g) -> StatusOr<ExprId> {
            return k == "minLength" ? JsonString(g, n, std::nullopt) : JsonString(g, 0, n);
          },
          k));
    } else if ((k == "enum" && v.is_array()) || k == "const") {
      Json values = k == "const" ? Json::array({v}) : v;
      DI_RETURN_IF_ERROR(add(
          [&](Grammar* g) -> StatusOr<ExprId> {
            std::vector<ExprId> alts;
            for (const Json& x : values) {
              if (x.is_string()) alts.push_back(g->Literal(x.dump()));
            }
            return g->Choice(std::move(alts));
          },
          k));
    } else {
      return Unimplemented("propertyNames with '" + k + "'");
    }
  }
  return out;
}

std::vector<int> JsonKeyLanguages::Matching(const std::string& name) const {
  std::string quoted = Json(name).dump();
  std::vector<int> out;
  for (size_t i = 0; i < patterns_.size(); ++i) {
    if (Runs(patterns_[i], quoted)) out.push_back(static_cast<int>(i));
  }
  return out;
}

bool JsonKeyLanguages::NameAllowed(const std::string& name) const {
  if (no_names_) return false;
  std::string quoted = Json(name).dump();
  for (const AutomatonPtr& a : name_constraints_) {
    if (!Runs(a, quoted)) return false;
  }
  return true;
}

// Product automaton of every factor; a state is the tuple of factor states
// (kNoState = that factor is dead). Dead canonical or propertyNames factors
// kill the tuple; dead patterns or names just stop matching.
StatusOr<std::vector<JsonKeyLanguages::Region>> JsonKeyLanguages::Regions(
    const std::vector<std::string>& declared, Grammar* g) const {
  std::vector<Region> regions;
  if (no_names_) return regions;
  AutomatonPtr names;
  if (!declared.empty()) {
    DI_ASSIGN_OR_RETURN(names, KeyAutomaton(
                                   [&](Grammar* dg) -> StatusOr<ExprId> {
                                     std::vector<ExprId> alts;
                                     for (const std::string& n : declared) {
                                       alts.push_back(dg->Literal(Json(n).dump()));
                                     }
                                     return dg->Choice(std::move(alts));
                                   },
                                   "declared names"));
  }
  // Factor order: canonical, names, patterns..., constraints...
  std::vector<AutomatonPtr> factors = {canonical_, names};
  factors.insert(factors.end(), patterns_.begin(), patterns_.end());
  factors.insert(factors.end(), name_constraints_.begin(), name_constraints_.end());
  const size_t first_pattern = 2, first_constraint = 2 + patterns_.size();
  auto required = [&](size_t f) { return f == 0 || f >= first_constraint; };

  std::map<std::vector<uint32_t>, uint32_t> ids;
  std::vector<std::vector<uint32_t>> tuples;
  std::vector<std::vector<ByteAutomaton::Edge>> edges;
  auto intern = [&](std::vector<uint32_t> t) -> uint32_t {
    auto [it, inserted] = ids.emplace(t, static_cast<uint32_t>(tuples.size()));
    if (inserted) tuples.push_back(std::move(t));
    return it->second;
  };
  std::vector<uint32_t> start;
  for (const AutomatonPtr& a : factors) start.push_back(Start(a));
  intern(start);
  std::vector<int> cuts;
  for (size_t d = 0; d < tuples.size(); ++d) {
    if (tuples.size() > kMaxProductStates) {
      return ResourceExhausted("patternProperties/propertyNames: key automaton above " +
                               std::to_string(kMaxProductStates) + " states");
    }
    const std::vector<uint32_t> t = tuples[d];
    cuts.assign({0});
    for (size_t f = 0; f < factors.size(); ++f) {
      if (t[f] == kNoState) continue;
      const GrammarAutomaton& a = *factors[f];
      for (uint32_t e = a.byte_edge_begin[t[f]]; e < a.byte_edge_begin[t[f] + 1]; ++e) {
        cuts.push_back(a.byte_edges[e].lo);
        cuts.push_back(a.byte_edges[e].hi + 1);
      }
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::vector<ByteAutomaton::Edge> out;
    for (size_t c = 0; c < cuts.size() && cuts[c] < 256; ++c) {
      uint8_t b = static_cast<uint8_t>(cuts[c]);
      int hi = c + 1 < cuts.size() ? cuts[c + 1] - 1 : 255;
      std::vector<uint32_t> next(factors.size());
      bool dead = false;
      for (size_t f = 0; f < factors.size() && !dead; ++f) {
        next[f] = Next(factors[f], t[f], b);
        dead = next[f] == kNoState && required(f);
      }
      if (dead) continue;
      out.push_back({b, static_cast<uint8_t>(std::min(hi, 255)), intern(std::move(next))});
    }
    edges.push_back(std::move(out));
  }
  // One automaton per set of matching patterns seen at a final tuple.
  std::map<std::vector<int>, std::vector<uint8_t>> finals;
  for (size_t s = 0; s < tuples.size(); ++s) {
    const std::vector<uint32_t>& t = tuples[s];
    bool complete = true;
    for (size_t f = 0; f < factors.size(); ++f) {
      if (required(f)) complete &= Final(factors[f], t[f]);
    }
    if (!complete || Final(names, t[1])) continue;
    std::vector<int> matched;
    for (size_t p = 0; p < patterns_.size(); ++p) {
      if (Final(factors[first_pattern + p], t[first_pattern + p])) matched.push_back(static_cast<int>(p));
    }
    auto& f = finals[matched];
    if (f.empty()) f.assign(tuples.size(), 0);
    f[s] = 1;
  }
  for (auto& [matched, is_final] : finals) {
    ByteAutomaton a;
    a.edges = edges;
    a.is_final = std::move(is_final);
    regions.push_back({matched, g->Automaton(std::move(a))});
  }
  return regions;
}

}  // namespace deepinfer::grammar
