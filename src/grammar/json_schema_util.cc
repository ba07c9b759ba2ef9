#include "grammar/json_schema_util.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <set>

#include "grammar/json_primitives.h"

namespace deepinfer::grammar::json_schema_internal {

bool IsAnnotation(const std::string& k) {
  // Assertion and applicator keywords of 2020-12, 2019-09 and draft-07/06/04
  // (plus `format`, asserted here as python3-jsonschema's format checker
  // does). Everything else -- title, $id, id, self, javaType, x-*, any
  // vendor keyword -- constrains nothing, as the specification says.
  static const std::set<std::string> kAssertions = {"type",
                                                    "enum",
                                                    "const",
                                                    "multipleOf",
                                                    "maximum",
                                                    "minimum",
                                                    "exclusiveMaximum",
                                                    "exclusiveMinimum",
                                                    "maxLength",
                                                    "minLength",
                                                    "pattern",
                                                    "format",
                                                    "maxItems",
                                                    "minItems",
                                                    "uniqueItems",
                                                    "contains",
                                                    "maxContains",
                                                    "minContains",
                                                    "maxProperties",
                                                    "minProperties",
                                                    "required",
                                                    "dependentRequired",
                                                    "dependentSchemas",
                                                    "dependencies",
                                                    "allOf",
                                                    "anyOf",
                                                    "oneOf",
                                                    "not",
                                                    "if",
                                                    "then",
                                                    "else",
                                                    "properties",
                                                    "patternProperties",
                                                    "additionalProperties",
                                                    "propertyNames",
                                                    "items",
                                                    "prefixItems",
                                                    "additionalItems",
                                                    "unevaluatedItems",
                                                    "unevaluatedProperties",
                                                    "$ref",
                                                    "$dynamicRef",
                                                    "$recursiveRef"};
  return kAssertions.count(k) == 0 && k.rfind(kInternalPrefix, 0) != 0;
}

bool HasConstraints(const Json& schema) {
  if (!schema.is_object()) return !(schema.is_boolean() && schema.get<bool>());
  for (auto it = schema.begin(); it != schema.end(); ++it) {
    if (!IsAnnotation(it.key())) return true;
  }
  return false;
}

Json Without(const Json& schema, const std::string& keyword) {
  Json out = schema;
  out.erase(keyword);
  return out;
}

namespace {

// The subschema declaring `$anchor: name` (2019-09+) or `$id`/`id: "#name"`
// (draft-07 and earlier); an explicit stack, so deep schemas cannot
// overflow it.
StatusOr<const Json*> FindAnchor(const Json& root, const std::string& name) {
  std::vector<const Json*> stack = {&root};
  while (!stack.empty()) {
    const Json* node = stack.back();
    stack.pop_back();
    if (node->is_object()) {
      for (const char* k : {"$anchor", "$dynamicAnchor"}) {
        if (node->contains(k) && (*node)[k] == Json(name)) return node;
      }
      for (const char* k : {"$id", "id"}) {
        if (node->contains(k) && (*node)[k] == Json("#" + name)) return node;
      }
    }
    if (node->is_structured()) {
      for (const Json& child : *node) stack.push_back(&child);
    }
  }
  return InvalidArgument("$ref '#" + name + "' does not resolve (no such $anchor)");
}

}  // namespace

StatusOr<const Json*> ResolveRef(const Json& root, const std::string& ref) {
  if (ref.empty() || ref[0] != '#') {
    return Unimplemented("$ref '" + ref + "': only local references (#/...) are supported");
  }
  const Json* node = &root;
  if (ref.size() == 1) return node;
  if (ref[1] != '/') return FindAnchor(root, ref.substr(1));
  size_t pos = 2;
  while (pos <= ref.size()) {
    size_t end = ref.find('/', pos);
    if (end == std::string::npos) end = ref.size();
    std::string token;
    for (size_t i = pos; i < end; ++i) {
      if (ref[i] == '~' && i + 1 < end && (ref[i + 1] == '0' || ref[i + 1] == '1')) {
        token.push_back(ref[i + 1] == '0' ? '~' : '/');
        ++i;
      } else if (ref[i] == '%' && i + 2 < end) {
        token.push_back(static_cast<char>(std::stoi(ref.substr(i + 1, 2), nullptr, 16)));
        i += 2;
      } else {
        token.push_back(ref[i]);
      }
    }
    if (node->is_object() && node->contains(token)) {
      node = &(*node)[token];
    } else if (node->is_array() && !token.empty() && std::all_of(token.begin(), token.end(), ::isdigit) &&
               std::stoul(token) < node->size()) {
      node = &(*node)[std::stoul(token)];
    } else {
      return InvalidArgument("$ref '" + ref + "' does not resolve (no '" + token + "')");
    }
    pos = end + 1;
  }
  return node;
}

namespace {

std::vector<std::string> TypeList(const Json& t) {
  std::vector<std::string> out;
  if (t.is_string()) out.push_back(t.get<std::string>());
  if (t.is_array()) {
    for (const Json& x : t) {
      if (x.is_string()) out.push_back(x.get<std::string>());
    }
  }
  return out;
}

bool TypeAllows(const std::vector<std::string>& types, const std::string& t) {
  for (const std::string& x : types) {
    if (x == t || (x == "number" && t == "integer")) return true;
  }
  return false;
}

Json AllOf(const Json& a, const Json& b) { return Json{{"allOf", Json::array({a, b})}}; }

std::set<std::string> PropertyNames(const Json& s) {
  std::set<std::string> out;
  if (s.contains("properties") && s["properties"].is_object()) {
    for (auto it = s["properties"].begin(); it != s["properties"].end(); ++it) out.insert(it.key());
  }
  return out;
}

}  // namespace

Status CheckContradictoryBounds(const Json& root) {
  // Keywords whose value is a subschema, a list of them, or a map of them.
  static const std::set<std::string> kOne = {"additionalProperties",
                                             "items",
                                             "additionalItems",
                                             "not",
                                             "if",
                                             "then",
                                             "else",
                                             "propertyNames",
                                             "contains",
                                             "unevaluatedItems",
                                             "unevaluatedProperties"};
  static const std::set<std::string> kList = {"allOf", "anyOf", "oneOf", "prefixItems", "items"};
  static const std::set<std::string> kMap = {"properties", "patternProperties", "$defs", "definitions",
                                             "dependentSchemas"};
  std::vector<std::pair<const Json*, std::string>> stack = {{&root, "#"}};
  auto escape = [](const std::string& s) {
    std::string out;
    for (char c : s) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
    return out;
  };
  while (!stack.empty()) {
    auto [node, path] = stack.back();
    stack.pop_back();
    if (!node->is_object()) continue;
    const Json& s = *node;
    auto num = [&](const char* k) -> std::optional<double> {
      if (s.contains(k) && s[k].is_number()) return s[k].get<double>();
      return std::nullopt;
    };
    for (auto [lo, hi] : {std::pair{"minLength", "maxLength"}, std::pair{"minItems", "maxItems"},
                          std::pair{"minProperties", "maxProperties"}, std::pair{"minimum", "maximum"}}) {
      std::optional<double> a = num(lo), b = num(hi);
      if (a && b && *a > *b) {
        return InvalidArgument(std::string(lo) + " > " + hi + " at " + path +
                               ": no instance satisfies the schema");
      }
    }
    if (std::optional<double> max = num("maxProperties"); max && s.contains("required") &&
                                                          s["required"].is_array() &&
                                                          static_cast<double>(s["required"].size()) > *max) {
      return InvalidArgument("more required properties than maxProperties at " + path +
                             ": no object satisfies the schema");
    }
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string& k = it.key();
      const Json& v = it.value();
      std::string sub = path + "/" + escape(k);
      if (kList.count(k) && v.is_array()) {
        for (size_t i = 0; i < v.size(); ++i) stack.push_back({&v[i], sub + "/" + std::to_string(i)});
      } else if (kOne.count(k)) {
        stack.push_back({&v, sub});
      } else if (kMap.count(k) && v.is_object()) {
        for (auto p = v.begin(); p != v.end(); ++p)
          stack.push_back({&p.value(), sub + "/" + escape(p.key())});
      }
    }
  }
  return Status::Ok();
}

StatusOr<Json> MergeSchemas(const Json& a, const Json& b) {
  if (a.is_boolean()) return a.get<bool>() ? b : a;
  if (b.is_boolean()) return b.get<bool>() ? a : b;
  if (!a.is_object() || !b.is_object()) return InvalidArgument("allOf: schema is not an object");
  // additionalProperties constrains names the *other* side may declare:
  // those get the restricting side's additionalProperties schema too (exact
  // unless patternProperties also decide which names are additional).
  bool patterns = a.contains("patternProperties") || b.contains("patternProperties");
  std::vector<std::pair<std::string, Json>> extra_constraints;
  for (const auto* pair : {&a, &b}) {
    const Json& self = *pair;
    const Json& other = pair == &a ? b : a;
    if (self.contains("additionalProperties") && !(self["additionalProperties"] == Json(true))) {
      std::set<std::string> mine = PropertyNames(self);
      for (const std::string& p : PropertyNames(other)) {
        if (mine.count(p)) continue;
        if (patterns) {
          return Unimplemented("allOf: property '" + p +
                               "' is declared in one branch but restricted by "
                               "additionalProperties and patternProperties in another");
        }
        extra_constraints.push_back({p, self["additionalProperties"]});
      }
    }
  }
  // Applicators that cannot be combined key by key run as allOf items of
  // the result (the converter merges those in turn).
  Json deferred = Json::array();
  auto defer = [&](const std::vector<const char*>& keys) {
    bool both = false;
    for (const char* k : keys) both |= a.contains(k) && b.contains(k);
    if (!both) return false;
    Json group = Json::object();
    for (const char* k : keys) {
      if (b.contains(k)) group[k] = b[k];
    }
    deferred.push_back(std::move(group));
    return true;
  };
  std::set<std::string> skip;
  for (const std::vector<const char*>& keys :
       std::vector<std::vector<const char*>>{{"if", "then", "else"},
                                             {"not"},
                                             {"dependentRequired"},
                                             {"dependentSchemas"},
                                             {"dependencies"},
                                             {"contains", "minContains", "maxContains"}}) {
    if (defer(keys)) skip.insert(keys.begin(), keys.end());
  }
  Json out = a;
  for (auto it = b.begin(); it != b.end(); ++it) {
    const std::string& k = it.key();
    const Json& v = it.value();
    if (skip.count(k)) continue;
    if (!out.contains(k)) {
      out[k] = v;
      continue;
    }
    Json& cur = out[k];
    if (cur == v || IsAnnotation(k)) continue;
    if (k == "type") {
      std::vector<std::string> ta = TypeList(cur), tb = TypeList(v);
      Json both = Json::array();
      for (const std::string& t : ta) {
        if (TypeAllows(tb, t)) both.push_back(t);
      }
      for (const std::string& t : tb) {
        if (t == "integer" && TypeAllows(ta, t) && !TypeAllows(tb, "number") &&
            std::find(both.begin(), both.end(), Json("integer")) == both.end()) {
          both.push_back(t);
        }
      }
      cur = both;
    } else if (k == "properties") {
      for (auto p = v.begin(); p != v.end(); ++p) {
        if (cur.contains(p.key())) {
          cur[p.key()] = AllOf(cur[p.key()], p.value());
        } else {
          cur[p.key()] = p.value();
        }
      }
    } else if (k == "required") {
      for (const Json& r : v) {
        if (std::find(cur.begin(), cur.end(), r) == cur.end()) cur.push_back(r);
      }
    } else if (k == "enum") {
      Json both = Json::array();
      for (const Json& x : cur) {
        if (std::find(v.begin(), v.end(), x) != v.end()) both.push_back(x);
      }
      cur = both;
    } else if (k == "const") {
      out.erase("const");
      out["enum"] = Json::array();  // two different consts: nothing matches
    } else if (k == "minimum" || k == "exclusiveMinimum" || k == "minLength" || k == "minItems" ||
               k == "minProperties") {
      if (v.is_number() && cur.is_number() && v > cur) cur = v;
    } else if (k == "maximum" || k == "exclusiveMaximum" || k == "maxLength" || k == "maxItems" ||
               k == "maxProperties") {
      if (v.is_number() && cur.is_number() && v < cur) cur = v;
    } else if (k == "additionalProperties" || k == "items" || k == "additionalItems" ||
               k == "propertyNames") {
      if (cur.is_array() || v.is_array()) {
        return Unimplemented("allOf: cannot merge tuple-form '" + k + "'");
      }
      cur = AllOf(cur, v);
    } else if (k == "anyOf" || k == "oneOf") {
      // (A1 | A2) & (B1 | B2): each of a's alternatives, with b's anyOf.
      if (!cur.is_array() || !v.is_array()) return InvalidArgument("allOf: " + k + " is not an array");
      Json alts = Json::array();
      for (const Json& x : cur) alts.push_back(AllOf(x, Json{{k, v}}));
      cur = alts;
    } else if (k == "pattern" || k == "format") {
      // Every pattern must match: the extra ones go to an internal list.
      std::optional<std::string> extra;
      if (k == "pattern" && v.is_string()) extra = v.get<std::string>();
      if (k == "format" && v.is_string()) extra = FormatRegex(v.get<std::string>());
      if (extra) out[kPatternsKeyword].push_back(*extra);
    } else if (k == "uniqueItems") {
      cur = cur == Json(true) || v == Json(true);
    } else if (k == "multipleOf" && cur.is_number_unsigned() && v.is_number_unsigned()) {
      uint64_t x = cur.get<uint64_t>(), y = v.get<uint64_t>();
      cur = x / std::gcd(x, y) * y;
    } else if (k.rfind(kInternalPrefix, 0) == 0 && cur.is_array() && v.is_array()) {
      for (const Json& x : v) cur.push_back(x);
    } else {
      return Unimplemented("allOf: cannot merge different values of '" + k + "'");
    }
  }
  for (auto& [name, constraint] : extra_constraints) {
    out["properties"][name] = AllOf(out["properties"][name], constraint);
  }
  if (!deferred.empty()) {
    Json& all = out["allOf"];
    if (!all.is_array()) all = Json::array();
    for (Json& d : deferred) all.push_back(std::move(d));
  }
  return out;
}

}  // namespace deepinfer::grammar::json_schema_internal
