#include "grammar/json_schema_rewrite.h"

#include <algorithm>
#include <set>

#include "grammar/json_primitives.h"

namespace deepinfer::grammar::json_schema_internal {

namespace {

constexpr int kMaxNegateDepth = 32;
constexpr size_t kMaxAlternatives = 64;

const std::vector<std::string> kAllTypes = {"null", "boolean", "object", "array", "string", "number"};

Json Typed(const std::string& t, Json body) {
  body["type"] = t;
  return body;
}

// Non-objects satisfy `required`, so its complement is objects only: those
// missing the first name, or having it and missing the second, ...
// (disjoint branches).
std::vector<Json> NegateRequired(const Json& names) {
  std::vector<Json> out;
  Json before = Json::array();
  for (const Json& n : names) {
    if (!n.is_string()) continue;
    Json alt = {{"type", "object"}, {"properties", {{n.get<std::string>(), false}}}};
    if (!before.empty()) alt["required"] = before;
    out.push_back(std::move(alt));
    before.push_back(n);
  }
  return out;
}

// Bound keywords: the complement within the keyword's type.
std::optional<Json> NegateBound(const std::string& k, const Json& v) {
  static const std::map<std::string, std::pair<std::string, std::string>> kNumber = {
      {"minimum", {"exclusiveMaximum", "number"}},
      {"exclusiveMinimum", {"maximum", "number"}},
      {"maximum", {"exclusiveMinimum", "number"}},
      {"exclusiveMaximum", {"minimum", "number"}}};
  auto it = kNumber.find(k);
  if (it != kNumber.end()) {
    if (!v.is_number()) return std::nullopt;
    return Json{{"type", "number"}, {it->second.first, v}};
  }
  static const std::map<std::string, std::pair<std::string, std::string>> kCounts = {
      {"minLength", {"string", "maxLength"}},
      {"maxLength", {"string", "minLength"}},
      {"minItems", {"array", "maxItems"}},
      {"maxItems", {"array", "minItems"}},
      {"minProperties", {"object", "maxProperties"}},
      {"maxProperties", {"object", "minProperties"}}};
  auto c = kCounts.find(k);
  if (c == kCounts.end() || !v.is_number_unsigned()) return std::nullopt;
  uint64_t n = v.get<uint64_t>();
  bool is_min = k.rfind("min", 0) == 0;
  if (is_min && n == 0) return Json(false);
  return Json{{"type", c->second.first}, {c->second.second, is_min ? n - 1 : n + 1}};
}

}  // namespace

StatusOr<std::vector<Json>> Negate(const Json& schema, const Json& root, int depth) {
  if (depth > kMaxNegateDepth) return Unimplemented("'not' nested too deep");
  if (schema.is_boolean()) {
    if (schema.get<bool>()) return std::vector<Json>{};
    return std::vector<Json>{Json(true)};
  }
  if (!schema.is_object()) return InvalidArgument("'not' of a schema that is not an object");
  std::vector<Json> out;
  auto add = [&](std::vector<Json> alts) -> Status {
    for (Json& a : alts) {
      if (a == Json(false)) continue;
      out.push_back(std::move(a));
    }
    if (out.size() > kMaxAlternatives) return Unimplemented("'not' with too many alternatives");
    return Status::Ok();
  };
  for (auto it = schema.begin(); it != schema.end(); ++it) {
    const std::string& k = it.key();
    const Json& v = it.value();
    if (IsAnnotation(k) || k == "then" || k == "else") continue;
    if (k == "type") {
      std::set<std::string> excluded;
      for (const Json& t : v.is_array() ? v : Json::array({v})) {
        if (t.is_string()) excluded.insert(t.get<std::string>());
      }
      bool integer_only = excluded.count("integer") && !excluded.count("number");
      if (integer_only) excluded.insert("number");
      Json rest = Json::array();
      for (const std::string& t : kAllTypes) {
        if (!excluded.count(t)) rest.push_back(t);
      }
      if (!rest.empty()) DI_RETURN_IF_ERROR(add({Json{{"type", rest}}}));
      // not integer: numbers with a non-zero fraction.
      if (integer_only) DI_RETURN_IF_ERROR(add({Json{{"type", "number"}, {kNotIntegral, true}}}));
    } else if (k == "enum" || k == "const") {
      DI_RETURN_IF_ERROR(add({Json{{kNotIn, k == "const" ? Json::array({v}) : v}}}));
    } else if (k == "required") {
      DI_RETURN_IF_ERROR(add(NegateRequired(v)));
    } else if (k == "properties" && v.is_object()) {
      std::vector<Json> alts;
      for (auto p = v.begin(); p != v.end(); ++p) {
        alts.push_back(
            {{"type", "object"}, {"required", {p.key()}}, {"properties", {{p.key(), {{"not", p.value()}}}}}});
      }
      DI_RETURN_IF_ERROR(add(std::move(alts)));
    } else if (k == "pattern" && v.is_string()) {
      DI_RETURN_IF_ERROR(add({Typed("string", {{kNotPattern, {v}}})}));
    } else if (k == "format" && v.is_string()) {
      std::optional<std::string> re = FormatRegex(v.get<std::string>());
      if (re) DI_RETURN_IF_ERROR(add({Typed("string", {{kNotPattern, {*re}}})}));
    } else if (std::optional<Json> bound = NegateBound(k, v)) {
      DI_RETURN_IF_ERROR(add({*bound}));
    } else if (k == "not") {
      DI_RETURN_IF_ERROR(add({v}));
    } else if (k == "allOf" && v.is_array()) {
      for (const Json& sub : v) {
        DI_ASSIGN_OR_RETURN(std::vector<Json> alts, Negate(sub, root, depth + 1));
        DI_RETURN_IF_ERROR(add(std::move(alts)));
      }
    } else if (k == "anyOf" && v.is_array()) {
      // not (A or B) = not A and not B: every combination of alternatives.
      std::vector<Json> combos = {Json::object()};
      for (const Json& sub : v) {
        DI_ASSIGN_OR_RETURN(std::vector<Json> alts, Negate(sub, root, depth + 1));
        std::vector<Json> next;
        for (const Json& c : combos) {
          for (const Json& a : alts) next.push_back(c.empty() ? a : Json{{"allOf", {c, a}}});
        }
        if (next.size() > kMaxAlternatives) return Unimplemented("'not' of a large anyOf");
        combos = std::move(next);
      }
      DI_RETURN_IF_ERROR(add(std::move(combos)));
    } else if (k == "if") {
      // not (I ? T : E) = (I and not T) or (not I and not E).
      Json then_s = schema.value("then", Json(true)), else_s = schema.value("else", Json(true));
      DI_RETURN_IF_ERROR(
          add({Json{{"allOf", {v, {{"not", then_s}}}}}, Json{{"allOf", {{{"not", v}}, {{"not", else_s}}}}}}));
    } else if (k == "$ref" && v.is_string()) {
      DI_ASSIGN_OR_RETURN(const Json* target, ResolveRef(root, v.get<std::string>()));
      DI_ASSIGN_OR_RETURN(std::vector<Json> alts, Negate(*target, root, depth + 1));
      DI_RETURN_IF_ERROR(add(std::move(alts)));
    } else {
      return Unimplemented("not (of '" + k + "')");
    }
  }
  return out;
}

bool NeedsRewrite(const Json& schema) {
  if (!schema.is_object()) return false;
  for (const char* k : {"not", "if", "dependentRequired", "dependentSchemas", "dependencies"}) {
    if (schema.contains(k)) return true;
  }
  return false;
}

Json RewriteApplicators(const Json& schema, const Json& root, const std::string& path,
                        std::vector<std::pair<std::string, std::string>>* relaxed) {
  Json out = schema;
  std::vector<std::vector<Json>> groups;
  if (schema.contains("not")) {
    out.erase("not");
    auto alts = Negate(schema["not"], root);
    if (alts.ok()) {
      groups.push_back(std::move(*alts));
    } else {
      relaxed->push_back({alts.status().message(), path + "/not"});
    }
  }
  if (schema.contains("if")) {
    for (const char* k : {"if", "then", "else"}) out.erase(k);
    const Json& cond = schema["if"];
    Json then_s = schema.value("then", Json(true)), else_s = schema.value("else", Json(true));
    auto negated = Negate(cond, root);
    if (negated.ok()) {
      std::vector<Json> alts = {Json{{"allOf", {cond, then_s}}}};
      for (const Json& n : *negated) alts.push_back(Json{{"allOf", {n, else_s}}});
      groups.push_back(std::move(alts));
    } else {
      relaxed->push_back({"'if' (" + negated.status().message() + ")", path + "/if"});
    }
  } else {
    out.erase("then");  // without `if` they have no effect
    out.erase("else");
  }
  auto dependency = [&](const std::string& name, const Json& dep, const std::string& where) {
    std::vector<Json> alts = NegateRequired(Json::array({name}));
    if (dep.is_array()) {
      Json req = Json::array({name});
      for (const Json& d : dep) req.push_back(d);
      alts.push_back(Json{{"required", req}});
    } else if (dep.is_object() || dep.is_boolean()) {
      alts.push_back(Json{{"allOf", {Json{{"required", {name}}}, dep}}});
    } else {
      relaxed->push_back({"malformed dependency", where});
      return;
    }
    groups.push_back(std::move(alts));
  };
  for (const char* k : {"dependentRequired", "dependentSchemas", "dependencies"}) {
    if (!schema.contains(k)) continue;
    out.erase(k);
    const Json& deps = schema[k];
    if (!deps.is_object()) {
      relaxed->push_back({std::string("'") + k + "' that is not an object", path + "/" + k});
      continue;
    }
    for (auto it = deps.begin(); it != deps.end(); ++it) {
      dependency(it.key(), it.value(), path + "/" + k + "/" + it.key());
    }
  }
  if (groups.empty()) return out;
  Json all = out.contains("allOf") && out["allOf"].is_array() ? out["allOf"] : Json::array();
  for (std::vector<Json>& g : groups) {
    if (g.empty()) {
      all.push_back(false);
    } else if (g.size() == 1) {
      all.push_back(std::move(g[0]));
    } else {
      all.push_back(Json{{"anyOf", std::move(g)}});
    }
  }
  out["allOf"] = std::move(all);
  return out;
}

}  // namespace deepinfer::grammar::json_schema_internal

namespace deepinfer::grammar::json_schema_internal {

namespace {

constexpr size_t kMaxExclusiveBranches = 6;

// Values of an enum/const, or nullopt when the schema has neither.
std::optional<Json> FiniteValues(const Json& s) {
  if (!s.is_object()) return std::nullopt;
  if (s.contains("const")) return Json::array({s["const"]});
  if (s.contains("enum") && s["enum"].is_array()) return s["enum"];
  return std::nullopt;
}

// The JSON types a schema's `type` keyword allows (integer as its own
// entry, implied by number); all when absent.
std::set<std::string> TypesOf(const Json& s) {
  std::set<std::string> out;
  if (!s.is_object() || !s.contains("type")) {
    return {"null", "boolean", "object", "array", "string", "number", "integer"};
  }
  const Json& t = s["type"];
  for (const Json& x : t.is_array() ? t : Json::array({t})) {
    if (!x.is_string()) continue;
    out.insert(x.get<std::string>());
    if (x == Json("number")) out.insert("integer");
  }
  return out;
}

bool Required(const Json& s, const std::string& name) {
  if (!s.is_object() || !s.contains("required") || !s["required"].is_array()) return false;
  const Json& r = s["required"];
  return std::find(r.begin(), r.end(), Json(name)) != r.end();
}

const Json* PropertySchema(const Json& s, const std::string& name) {
  if (!s.is_object() || !s.contains("properties") || !s["properties"].is_object()) return nullptr;
  const Json& p = s["properties"];
  return p.contains(name) ? &p[name] : nullptr;
}

// A sufficient test that no instance satisfies both (after `base`): types
// that do not meet, enum/const sets that do not meet, or -- for objects only
// -- a property one requires whose values the other excludes.
bool ProvablyDisjoint(const Json& a, const Json& b, const std::set<std::string>& base_types) {
  if (a == Json(false) || b == Json(false)) return true;
  std::set<std::string> ta = TypesOf(a), tb = TypesOf(b), both;
  for (const std::string& t : ta) {
    if (tb.count(t) && base_types.count(t)) both.insert(t);
  }
  if (both.empty()) return true;
  std::optional<Json> va = FiniteValues(a), vb = FiniteValues(b);
  if (va && vb) {
    bool meet = false;
    for (const Json& x : *va) meet |= std::find(vb->begin(), vb->end(), x) != vb->end();
    if (!meet) return true;
  }
  if (both != std::set<std::string>{"object"}) return false;
  for (const auto* pair : {&a, &b}) {
    const Json& self = *pair;
    const Json& other = pair == &a ? b : a;
    if (!self.is_object() || !self.contains("properties") || !self["properties"].is_object()) continue;
    for (auto it = self["properties"].begin(); it != self["properties"].end(); ++it) {
      if (!Required(self, it.key())) continue;
      const Json* theirs = PropertySchema(other, it.key());
      if (theirs == nullptr) continue;
      if (*theirs == Json(false)) return true;
      std::optional<Json> mine = FiniteValues(it.value()), their_values = FiniteValues(*theirs);
      if (!mine || !their_values) continue;
      bool meet = false;
      for (const Json& x : *mine)
        meet |= std::find(their_values->begin(), their_values->end(), x) != their_values->end();
      if (!meet) return true;
    }
  }
  return false;
}

StatusOr<Json> DerefBranch(const Json& s, const Json& root) {
  if (!s.is_object() || !s.contains("$ref") || !s["$ref"].is_string()) return s;
  DI_ASSIGN_OR_RETURN(const Json* target, ResolveRef(root, s["$ref"].get<std::string>()));
  Json rest = Without(s, "$ref");
  if (!HasConstraints(rest)) return *target;
  return MergeSchemas(*target, rest);
}

}  // namespace

StatusOr<std::vector<Json>> ExclusiveOneOf(const Json& base, const Json& branches, const Json& root) {
  std::vector<Json> resolved;
  for (const Json& b : branches) {
    DI_ASSIGN_OR_RETURN(Json d, DerefBranch(b, root));
    resolved.push_back(std::move(d));
  }
  std::set<std::string> base_types = TypesOf(base);
  size_t n = resolved.size();
  std::vector<std::vector<bool>> disjoint(n, std::vector<bool>(n, true));
  bool all_disjoint = true;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      disjoint[i][j] = disjoint[j][i] = ProvablyDisjoint(resolved[i], resolved[j], base_types);
      all_disjoint &= disjoint[i][j];
    }
  }
  std::vector<Json> out(branches.begin(), branches.end());
  if (all_disjoint) return out;
  if (n > kMaxExclusiveBranches) return Unimplemented("oneOf exclusivity (more than 6 overlapping branches)");
  for (size_t i = 0; i < n; ++i) {
    Json all = Json::array({branches[i]});
    for (size_t j = 0; j < n; ++j) {
      if (j == i || disjoint[i][j]) continue;
      auto negated = Negate(resolved[j], root);
      if (!negated.ok()) return Unimplemented("oneOf exclusivity (" + negated.status().message() + ")");
      all.push_back(Json{{"not", branches[j]}});
    }
    out[i] = all.size() == 1 ? branches[i] : Json{{"allOf", all}};
  }
  return out;
}

}  // namespace deepinfer::grammar::json_schema_internal
