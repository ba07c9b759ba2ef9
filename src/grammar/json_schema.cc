#include "grammar/json_schema.h"

#include <cmath>
#include <map>
#include <set>

#include "core/log.h"
#include "grammar/byte_machine.h"
#include "grammar/json_schema_converter.h"

namespace deepinfer::grammar {

using json_schema_internal::Json;

std::string JsonSchemaOptions::CacheKey() const {
  return std::to_string(any_whitespace) + "," + std::to_string(max_whitespace) + "," +
         std::to_string(strict) + "," + std::to_string(max_depth);
}

namespace json_schema_internal {

namespace {

const std::set<std::string> kTypes = {"null", "boolean", "object", "array", "string", "number", "integer"};
const std::set<std::string> kHandled = {"type",
                                        "enum",
                                        "const",
                                        "anyOf",
                                        "oneOf",
                                        "allOf",
                                        "$ref",
                                        "properties",
                                        "required",
                                        "additionalProperties",
                                        "items",
                                        "prefixItems",
                                        "additionalItems",
                                        "minItems",
                                        "maxItems",
                                        "minLength",
                                        "maxLength",
                                        "pattern",
                                        "format",
                                        "minimum",
                                        "maximum",
                                        "exclusiveMinimum",
                                        "exclusiveMaximum",
                                        "patternProperties",
                                        "propertyNames",
                                        "minProperties",
                                        "maxProperties",
                                        "multipleOf",
                                        "uniqueItems",
                                        "then",
                                        "else",
                                        kNotIn,
                                        kNotPattern,
                                        kNotIntegral,
                                        "contains",
                                        "minContains",
                                        "maxContains",
                                        kPatternsKeyword};
}  // namespace

std::string PointerToken(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

StatusOr<RuleId> SchemaConverter::Run() {
  DI_ASSIGN_OR_RETURN(RuleId root, RuleFor(root_, "#", 0));
  if (!relaxed_.empty() && options_.strict) {
    std::string list;
    for (const RelaxedAssertion& r : relaxed_) {
      list += (list.empty() ? "" : "; ") + r.keyword + " at " + r.pointer;
    }
    return Unimplemented("JSON Schema assertions not enforceable exactly: " + list);
  }
  return root;
}

StatusOr<ExprId> SchemaConverter::Build(const Json& s, const std::string& path, int depth) {
  if (depth > options_.max_depth) {
    return ResourceExhausted("JSON schema nested deeper than " + std::to_string(options_.max_depth) + " at " +
                             path);
  }
  // Rewrites (not, oneOf, dependencies) multiply alternatives: bound the
  // grammar so no schema can make the compile run away.
  if (g_->num_exprs() > kMaxGrammarExprs) {
    return ResourceExhausted("JSON schema expands to a grammar above " + std::to_string(kMaxGrammarExprs) +
                             " expressions at " + path);
  }
  if (s.is_boolean()) return s.get<bool>() ? AnyValue() : g_->Nothing();
  if (!s.is_object()) return InvalidArgument("schema at " + path + " is not an object or boolean");
  if (s.contains("$ref")) {
    if (!s["$ref"].is_string()) return InvalidArgument("$ref at " + path + " is not a string");
    std::string ref = s["$ref"].get<std::string>();
    auto target = ResolveRef(root_, ref);
    if (!target.ok()) return Status(target.status().code(), target.status().message() + " at " + path);
    Json rest = Without(s, "$ref");
    if (!HasConstraints(rest) || ref_overrides_siblings_) return RefTo(**target, ref, depth);
    DI_ASSIGN_OR_RETURN(Json merged, MergeSchemas(**target, rest));
    return Build(merged, path, depth + 1);
  }
  if (json_schema_internal::NeedsRewrite(s)) {
    std::vector<std::pair<std::string, std::string>> relaxed;
    Json rewritten = json_schema_internal::RewriteApplicators(s, root_, path, &relaxed);
    for (const auto& [what, where] : relaxed) Unsupported(where, what);
    return Build(rewritten, path, depth + 1);
  }
  if (s.contains("allOf")) {
    if (!s["allOf"].is_array()) return InvalidArgument("allOf at " + path + " is not an array");
    Json merged = Without(s, "allOf");
    int i = 0;
    for (const Json& sub : s["allOf"]) {
      std::string sub_path = path + "/allOf/" + std::to_string(i++);
      DI_ASSIGN_OR_RETURN(Json d, Deref(sub));
      auto m = MergeSchemas(merged, d);
      if (m.ok()) {
        merged = std::move(*m);
      } else if (m.status().code() == StatusCode::kUnimplemented) {
        Unsupported(sub_path, m.status().message());  // relaxed: the branch is left out
      } else {
        return Status(m.status().code(), m.status().message() + " at " + sub_path);
      }
    }
    return Build(merged, path, depth + 1);
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    if (!s.contains(key)) continue;
    if (!s[key].is_array()) return InvalidArgument(std::string(key) + " at " + path + " is not an array");
    Json base = Without(s, key);
    Json branches = s[key];
    if (std::string(key) == "oneOf") {
      // Exactly one branch: branches that may overlap exclude each other.
      auto exclusive = ExclusiveOneOf(base, branches, root_);
      if (exclusive.ok()) {
        branches = Json(*exclusive);
      } else if (exclusive.status().code() == StatusCode::kUnimplemented) {
        Unsupported(path + "/oneOf", exclusive.status().message());  // relaxed: generated as anyOf
      } else {
        return Status(exclusive.status().code(), exclusive.status().message() + " at " + path);
      }
    }
    std::vector<ExprId> alts;
    int i = 0;
    for (const Json& sub : branches) {
      std::string sub_path = path + "/" + key + "/" + std::to_string(i++);
      if (!HasConstraints(base)) {
        DI_ASSIGN_OR_RETURN(ExprId e, RefTo(sub, sub_path, depth));
        alts.push_back(e);
      } else {
        DI_ASSIGN_OR_RETURN(Json d, Deref(sub));
        auto merged = MergeSchemas(base, d);
        if (!merged.ok()) {
          if (merged.status().code() != StatusCode::kUnimplemented) {
            return Status(merged.status().code(), merged.status().message() + " at " + sub_path);
          }
          Unsupported(sub_path, merged.status().message());  // relaxed: the branch alone
          merged = d;
        }
        DI_ASSIGN_OR_RETURN(ExprId e, Build(*merged, sub_path, depth + 1));
        alts.push_back(e);
      }
    }
    return g_->Choice(std::move(alts));
  }
  std::vector<std::string> types;
  if (s.contains("type")) {
    const Json& t = s["type"];
    for (const Json& x : t.is_array() ? t : Json::array({t})) {
      if (!x.is_string() || !kTypes.count(x.get<std::string>())) {
        return InvalidArgument("bad type " + x.dump() + " at " + path + "/type");
      }
      types.push_back(x.get<std::string>());
    }
  } else {
    types = {"null", "boolean", "object", "array", "string", "number"};
  }
  if (s.contains("enum") || s.contains("const")) return BuildEnum(s, types, path);
  CheckKeywords(s, path);
  bool has_number = std::find(types.begin(), types.end(), "number") != types.end();
  std::vector<ExprId> alts;
  for (const std::string& t : types) {
    if (t == "integer" && has_number) continue;
    DI_ASSIGN_OR_RETURN(ExprId e, BuildType(t, s, path, depth));
    alts.push_back(e);
  }
  return g_->Choice(std::move(alts));
}

void SchemaConverter::CheckKeywords(const Json& s, const std::string& path) {
  for (auto it = s.begin(); it != s.end(); ++it) {
    const std::string& k = it.key();
    const Json& v = it.value();
    if (IsAnnotation(k) || kHandled.count(k)) continue;
    // Keywords that are fine with their trivial values.
    if ((k == "minContains" && v == Json(0)) || (k == "maxContains" && !s.contains("contains")) ||
        ((k == "unevaluatedProperties" || k == "unevaluatedItems") && v == Json(true))) {
      continue;
    }
    Unsupported(path, k);
  }
}

StatusOr<ExprId> SchemaConverter::BuildEnum(const Json& s, const std::vector<std::string>& types,
                                            const std::string& path) {
  Json values = s.contains("const") ? Json::array({s["const"]}) : s["enum"];
  if (!values.is_array()) return InvalidArgument("enum at " + path + "/enum is not an array");
  if (s.contains("const") && s.contains("enum") &&
      std::find(s["enum"].begin(), s["enum"].end(), s["const"]) == s["enum"].end()) {
    values = Json::array();
  }
  // Every other assertion holds or fails per value: a value stays when it
  // satisfies the schema's other keywords.
  std::vector<ExprId> alts;
  for (const Json& v : values) {
    if (!ValueHasType(v, types) || Excluded(s, v)) continue;
    DI_ASSIGN_OR_RETURN(std::optional<std::string> violated, ValueViolates(v, s));
    if (violated && violated->empty()) continue;  // fails a checked keyword
    if (violated) Unsupported(path, "enum/const with '" + *violated + "'");
    alts.push_back(g_->Literal(v.dump()));
  }
  return g_->Choice(std::move(alts));
}

namespace {

std::optional<std::string> Fails() { return std::string(); }

int64_t CodePoints(const std::string& s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

StatusOr<bool> MatchesPattern(const std::string& pattern, const Json& value) {
  DI_ASSIGN_OR_RETURN(std::unique_ptr<ByteMachine> m,
                      DenseMachine([&](Grammar* g) { return JsonStringPattern(g, pattern); }, "pattern"));
  if (!m) return false;
  uint32_t state = m->Start();
  for (char c : value.dump()) {
    state = m->Next(state, static_cast<uint8_t>(c));
    if (state == ByteMachine::kDead) return false;
  }
  return m->Final(state);
}

}  // namespace

// nullopt: `v` satisfies every other keyword of `s`; "": it fails one;
// otherwise the keyword that could not be checked.
StatusOr<std::optional<std::string>> SchemaConverter::ValueViolates(const Json& v, const Json& s) {
  static const std::set<std::string> kString = {"minLength", "maxLength",      "pattern",
                                                "format",    kPatternsKeyword, kNotPattern};
  static const std::set<std::string> kNumber = {"minimum",          "maximum",    "exclusiveMinimum",
                                                "exclusiveMaximum", "multipleOf", kNotIntegral};
  static const std::set<std::string> kArray = {
      "items",       "prefixItems", "additionalItems", "minItems",    "maxItems",
      "uniqueItems", "contains",    "minContains",     "maxContains", "unevaluatedItems"};
  static const std::set<std::string> kObject = {
      "properties",    "required",      "additionalProperties", "patternProperties",    "propertyNames",
      "minProperties", "maxProperties", "dependentRequired",    "unevaluatedProperties"};
  for (auto it = s.begin(); it != s.end(); ++it) {
    const std::string& k = it.key();
    const Json& kv = it.value();
    if (IsAnnotation(k) || k == "enum" || k == "const" || k == "type" || k == kNotIn) continue;
    if (kString.count(k)) {
      if (!v.is_string()) continue;
      std::string text = v.get<std::string>();
      if (k == "minLength" && kv.is_number() && CodePoints(text) < kv.get<double>()) return Fails();
      if (k == "maxLength" && kv.is_number() && CodePoints(text) > kv.get<double>()) return Fails();
      std::vector<std::pair<std::string, bool>> patterns;  // (pattern, must match)
      if (k == "pattern" && kv.is_string()) patterns.push_back({kv.get<std::string>(), true});
      if (k == "format" && kv.is_string()) {
        std::optional<std::string> re = FormatRegex(kv.get<std::string>());
        if (re) patterns.push_back({*re, true});
      }
      if ((k == kPatternsKeyword || k == kNotPattern) && kv.is_array()) {
        for (const Json& p : kv) {
          if (p.is_string()) patterns.push_back({p.get<std::string>(), k == kPatternsKeyword});
        }
      }
      for (const auto& [p, must] : patterns) {
        auto m = MatchesPattern(p, v);
        if (!m.ok()) return std::optional<std::string>(k);
        if (*m != must) return Fails();
      }
    } else if (kNumber.count(k)) {
      if (k == kNotIntegral) {
        if (v.is_number() && std::floor(v.get<double>()) == v.get<double>()) return Fails();
        continue;
      }
      if (!v.is_number() || kv.is_boolean()) continue;
      if (!kv.is_number()) return std::optional<std::string>(k);
      double x = v.get<double>(), b = kv.get<double>();
      bool strict_lo =
          k == "exclusiveMinimum" || (k == "minimum" && s.value("exclusiveMinimum", Json()) == Json(true));
      bool strict_hi =
          k == "exclusiveMaximum" || (k == "maximum" && s.value("exclusiveMaximum", Json()) == Json(true));
      if ((k == "minimum" || k == "exclusiveMinimum") && (strict_lo ? !(x > b) : !(x >= b))) return Fails();
      if ((k == "maximum" || k == "exclusiveMaximum") && (strict_hi ? !(x < b) : !(x <= b))) return Fails();
      if (k == "multipleOf") {
        // Exact for b = k / 2^j (as the grammar): x / b is then computed
        // without rounding whenever it is whole.
        double q = x / b;
        if (std::floor(std::ldexp(b, 6)) != std::ldexp(b, 6)) return std::optional<std::string>(k);
        if (std::floor(q) != q) return Fails();
      }
    } else if (kArray.count(k) || kObject.count(k)) {
      if (kArray.count(k) ? !v.is_array() : !v.is_object()) continue;
      if ((k == "minItems" || k == "minProperties") && kv.is_number() && v.size() < kv.get<double>())
        return Fails();
      if ((k == "maxItems" || k == "maxProperties") && kv.is_number() && v.size() > kv.get<double>())
        return Fails();
      if (k == "required" && kv.is_array()) {
        for (const Json& r : kv) {
          if (r.is_string() && !v.contains(r.get<std::string>())) return Fails();
        }
        continue;
      }
      if (k != "minItems" && k != "minProperties" && k != "maxItems" && k != "maxProperties") {
        return std::optional<std::string>(k);
      }
    } else {
      return std::optional<std::string>(k);
    }
  }
  return std::optional<std::string>();
}

bool SchemaConverter::ValueHasType(const Json& v, const std::vector<std::string>& types) {
  for (const std::string& t : types) {
    if ((t == "null" && v.is_null()) || (t == "boolean" && v.is_boolean()) ||
        (t == "object" && v.is_object()) || (t == "array" && v.is_array()) ||
        (t == "string" && v.is_string()) || (t == "number" && v.is_number()) ||
        (t == "integer" && (v.is_number_integer() ||
                            (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>())))) {
      return true;
    }
  }
  return false;
}

StatusOr<ExprId> SchemaConverter::BuildType(const std::string& t, const Json& s, const std::string& path,
                                            int depth) {
  if (t == "null") return Excluded(s, Json(nullptr)) ? g_->Nothing() : g_->Literal("null");
  if (t == "boolean") {
    std::vector<ExprId> alts;
    for (bool b : {true, false}) {
      if (!Excluded(s, Json(b))) alts.push_back(g_->Literal(b ? "true" : "false"));
    }
    return g_->Choice(std::move(alts));
  }
  if (t == "string") return BuildString(s, path);
  if (t == "integer" || t == "number") return BuildNumber(s, path, t == "integer");
  for (const Json& v : NotIn(s)) {
    if ((t == "object" && v.is_object()) || (t == "array" && v.is_array())) {
      Unsupported(path, "not enum/const of an " + t);
      break;
    }
  }
  if (t == "object") return BuildObject(s, path, depth);
  return BuildArray(s, path, depth);
}

StatusOr<int64_t> SchemaConverter::Count(const Json& s, const char* key, int64_t def, int64_t limit,
                                         const std::string& path) {
  if (!s.contains(key)) return def;
  const Json& v = s[key];
  if (!v.is_number() || v.get<double>() < 0 || std::floor(v.get<double>()) != v.get<double>()) {
    return Status(InvalidArgument(std::string(key) + " at " + path + "/" + key + " is not a count"));
  }
  if (v.get<double>() > static_cast<double>(limit)) {
    return Status(ResourceExhausted(std::string(key) + " at " + path + "/" + key + " above the limit " +
                                    std::to_string(limit)));
  }
  return static_cast<int64_t>(v.get<double>());
}

}  // namespace json_schema_internal

StatusOr<JsonSchemaGrammar> CompileJsonSchemaGrammar(std::string_view schema_text,
                                                     const JsonSchemaOptions& options) {
  Json root = Json::parse(schema_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return InvalidArgument("JSON schema is not valid JSON");
  if (!root.is_object() && !root.is_boolean()) {
    return InvalidArgument("JSON schema at # is not an object or boolean");
  }
  JsonSchemaGrammar out;
  try {
    DI_RETURN_IF_ERROR(json_schema_internal::CheckContradictoryBounds(root));
    json_schema_internal::SchemaConverter converter(root, options, &out.grammar);
    DI_ASSIGN_OR_RETURN(RuleId r, converter.Run());
    out.grammar.set_root(r);
    out.relaxed = converter.TakeRelaxed();
  } catch (const std::exception& e) {  // nlohmann type errors on malformed schemas
    return InvalidArgument(std::string("JSON schema: ") + e.what());
  }
  return out;
}

std::string FormatRelaxed(const std::vector<RelaxedAssertion>& relaxed) {
  std::string list;
  for (const RelaxedAssertion& r : relaxed)
    list += (list.empty() ? "" : "; ") + r.keyword + " at " + r.pointer;
  return list;
}

StatusOr<Grammar> JsonSchemaToGrammar(std::string_view schema_text, const JsonSchemaOptions& options) {
  DI_ASSIGN_OR_RETURN(JsonSchemaGrammar g, CompileJsonSchemaGrammar(schema_text, options));
  if (!g.relaxed.empty()) {
    DI_LOG_WARN("json schema (not strict): relaxed assertions: %s", FormatRelaxed(g.relaxed).c_str());
  }
  return std::move(g.grammar);
}

}  // namespace deepinfer::grammar
