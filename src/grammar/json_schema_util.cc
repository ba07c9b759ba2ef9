#include "grammar/json_schema_util.h"

#include <algorithm>
#include <set>

namespace deepinfer::grammar::json_schema_internal {

bool IsAnnotation(const std::string& k) {
  static const std::set<std::string> kAnnotations = {
      "title",       "description", "default",          "examples",        "$comment",
      "$schema",     "$id",         "$anchor",          "$dynamicAnchor",  "deprecated",
      "readOnly",    "writeOnly",   "contentMediaType", "contentEncoding", "$defs",
      "definitions", "$vocabulary"};
  return kAnnotations.count(k) != 0;
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

StatusOr<const Json*> ResolveRef(const Json& root, const std::string& ref) {
  if (ref.empty() || ref[0] != '#') {
    return Unimplemented("$ref '" + ref + "': only local references (#/...) are supported");
  }
  const Json* node = &root;
  if (ref.size() == 1) return node;
  if (ref[1] != '/') {
    return Unimplemented("$ref '" + ref + "': anchor references are not supported");
  }
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

StatusOr<Json> MergeSchemas(const Json& a, const Json& b) {
  if (a.is_boolean()) return a.get<bool>() ? b : a;
  if (b.is_boolean()) return b.get<bool>() ? a : b;
  if (!a.is_object() || !b.is_object()) return InvalidArgument("allOf: schema is not an object");
  // additionalProperties constrains names the *other* side may declare.
  for (const auto* pair : {&a, &b}) {
    const Json& self = *pair;
    const Json& other = pair == &a ? b : a;
    if (self.contains("additionalProperties") && !(self["additionalProperties"] == Json(true))) {
      std::set<std::string> mine = PropertyNames(self);
      for (const std::string& p : PropertyNames(other)) {
        if (!mine.count(p)) {
          return Unimplemented("allOf: property '" + p +
                               "' is declared in one branch but restricted by "
                               "additionalProperties in another");
        }
      }
    }
  }
  Json out = a;
  for (auto it = b.begin(); it != b.end(); ++it) {
    const std::string& k = it.key();
    const Json& v = it.value();
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
    } else if (k == "additionalProperties" || k == "items" || k == "additionalItems") {
      if (cur.is_array() || v.is_array()) {
        return Unimplemented("allOf: cannot merge tuple-form '" + k + "'");
      }
      cur = AllOf(cur, v);
    } else {
      return Unimplemented("allOf: cannot merge different values of '" + k + "'");
    }
  }
  return out;
}

}  // namespace deepinfer::grammar::json_schema_internal
