#include "grammar/json_schema.h"

#include <cmath>
#include <map>
#include <set>

#include "core/log.h"
#include "grammar/json_keys.h"
#include "grammar/json_primitives.h"
#include "grammar/json_schema_util.h"
#include "grammar/utf8.h"

namespace deepinfer::grammar {

using json_schema_internal::HasConstraints;
using json_schema_internal::IsAnnotation;
using json_schema_internal::Json;
using json_schema_internal::MergeSchemas;
using json_schema_internal::ResolveRef;
using json_schema_internal::Without;

std::string JsonSchemaOptions::CacheKey() const {
  return std::to_string(any_whitespace) + "," + std::to_string(max_whitespace) + "," +
         std::to_string(lenient) + "," + std::to_string(max_depth);
}

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
                                        "propertyNames"};
constexpr int64_t kMaxStringLength = 10000;
constexpr int64_t kMaxItems = 10000;
constexpr double kMaxIntegerBound = 1e17;
constexpr double kMaxNumberBound = 1e15;

class SchemaConverter {
 public:
  SchemaConverter(const Json& root, const JsonSchemaOptions& options, Grammar* g)
      : root_(root), options_(options), g_(g) {}

  StatusOr<RuleId> Run() {
    DI_ASSIGN_OR_RETURN(RuleId root, RuleFor(root_, "#", 0));
    if (!unsupported_.empty()) {
      std::string list;
      for (const std::string& u : unsupported_) list += (list.empty() ? "" : "; ") + u;
      if (!options_.lenient) return Unimplemented("unsupported JSON Schema features: " + list);
      DI_LOG_WARN("json schema (lenient): ignoring unsupported features: %s", list.c_str());
    }
    return root;
  }

 private:
  // One rule per distinct subschema; registered before its body is built so
  // recursive references terminate.
  StatusOr<RuleId> RuleFor(const Json& schema, const std::string& path, int depth) {
    std::string key = schema.dump();
    auto it = memo_.find(key);
    if (it != memo_.end()) return it->second;
    RuleId rule = g_->AddRule(path);
    memo_.emplace(std::move(key), rule);
    DI_ASSIGN_OR_RETURN(ExprId body, Build(schema, path, depth + 1));
    g_->SetBody(rule, body);
    return rule;
  }

  StatusOr<ExprId> RefTo(const Json& schema, const std::string& path, int depth) {
    DI_ASSIGN_OR_RETURN(RuleId r, RuleFor(schema, path, depth));
    return g_->Ref(r);
  }

  void Unsupported(const std::string& path, const std::string& what) {
    unsupported_.push_back("'" + what + "' at " + path);
  }

  ExprId Ws() {
    if (!options_.any_whitespace) return g_->Empty();
    return g_->Repeat(g_->Bytes({{' ', ' '}, {'\t', '\n'}, {'\r', '\r'}}), 0, options_.max_whitespace);
  }

  ExprId AnyValue() {
    if (any_value_ < 0) any_value_ = AnyJsonValueRule(g_, Ws());
    return g_->Ref(any_value_);
  }

  // Dereferences a top-level $ref (merging siblings) for allOf/anyOf branches.
  StatusOr<Json> Deref(const Json& s) {
    if (!s.is_object() || !s.contains("$ref")) return s;
    DI_ASSIGN_OR_RETURN(const Json* target, ResolveRef(root_, s["$ref"].get<std::string>()));
    Json rest = Without(s, "$ref");
    if (!HasConstraints(rest)) return *target;
    return MergeSchemas(*target, rest);
  }

  StatusOr<ExprId> Build(const Json& s, const std::string& path, int depth) {
    if (depth > options_.max_depth) {
      return ResourceExhausted("JSON schema nested deeper than " + std::to_string(options_.max_depth) +
                               " at " + path);
    }
    if (s.is_boolean()) return s.get<bool>() ? AnyValue() : g_->Nothing();
    if (!s.is_object()) return InvalidArgument("schema at " + path + " is not an object");
    if (s.contains("$ref")) {
      if (!s["$ref"].is_string()) return InvalidArgument("$ref at " + path + " is not a string");
      std::string ref = s["$ref"].get<std::string>();
      DI_ASSIGN_OR_RETURN(const Json* target, ResolveRef(root_, ref));
      Json rest = Without(s, "$ref");
      if (!HasConstraints(rest)) return RefTo(*target, ref, depth);
      DI_ASSIGN_OR_RETURN(Json merged, MergeSchemas(*target, rest));
      return Build(merged, path, depth + 1);
    }
    if (s.contains("allOf")) {
      if (!s["allOf"].is_array()) return InvalidArgument("allOf at " + path + " is not an array");
      Json merged = Without(s, "allOf");
      for (const Json& sub : s["allOf"]) {
        DI_ASSIGN_OR_RETURN(Json d, Deref(sub));
        auto m = MergeSchemas(merged, d);
        if (!m.ok()) return Status(m.status().code(), m.status().message() + " at " + path);
        merged = std::move(*m);
      }
      return Build(merged, path, depth + 1);
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!s.contains(key)) continue;
      if (!s[key].is_array()) return InvalidArgument(std::string(key) + " at " + path + " is not an array");
      // oneOf is generated as anyOf: exclusivity between branches is not
      // enforced (see docs/structured-output.md).
      Json base = Without(s, key);
      std::vector<ExprId> alts;
      int i = 0;
      for (const Json& sub : s[key]) {
        std::string sub_path = path + "/" + key + "/" + std::to_string(i++);
        if (!HasConstraints(base)) {
          DI_ASSIGN_OR_RETURN(ExprId e, RefTo(sub, sub_path, depth));
          alts.push_back(e);
        } else {
          DI_ASSIGN_OR_RETURN(Json d, Deref(sub));
          DI_ASSIGN_OR_RETURN(Json merged, MergeSchemas(base, d));
          DI_ASSIGN_OR_RETURN(ExprId e, Build(merged, sub_path, depth + 1));
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
          return InvalidArgument("bad type " + x.dump() + " at " + path);
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

  void CheckKeywords(const Json& s, const std::string& path) {
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string& k = it.key();
      const Json& v = it.value();
      if (IsAnnotation(k) || kHandled.count(k)) continue;
      // Keywords that are fine with their trivial values.
      if ((k == "uniqueItems" && v == Json(false)) ||
          ((k == "minProperties" || k == "minContains") && v == Json(0)) ||
          ((k == "patternProperties" || k == "dependentRequired" || k == "dependentSchemas" ||
            k == "dependencies") &&
           v.is_object() && v.empty()) ||
          (k == "multipleOf" && v == Json(1) && s.value("type", Json()) == Json("integer"))) {
        continue;
      }
      Unsupported(path, k);
    }
  }

  StatusOr<ExprId> BuildEnum(const Json& s, const std::vector<std::string>& types, const std::string& path) {
    Json values = s.contains("const") ? Json::array({s["const"]}) : s["enum"];
    if (!values.is_array()) return InvalidArgument("enum at " + path + " is not an array");
    if (s.contains("const") && s.contains("enum") &&
        std::find(s["enum"].begin(), s["enum"].end(), s["const"]) == s["enum"].end()) {
      values = Json::array();
    }
    std::vector<ExprId> alts;
    for (const Json& v : values) {
      if (!ValueHasType(v, types)) continue;
      alts.push_back(g_->Literal(v.dump()));
    }
    return g_->Choice(std::move(alts));
  }

  static bool ValueHasType(const Json& v, const std::vector<std::string>& types) {
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

  StatusOr<ExprId> BuildType(const std::string& t, const Json& s, const std::string& path, int depth) {
    if (t == "null") return g_->Literal("null");
    if (t == "boolean") return g_->Choice({g_->Literal("true"), g_->Literal("false")});
    if (t == "string") return BuildString(s, path);
    if (t == "integer" || t == "number") return BuildNumber(s, path, t == "integer");
    if (t == "object") return BuildObject(s, path, depth);
    return BuildArray(s, path, depth);
  }

  StatusOr<int64_t> Count(const Json& s, const char* key, int64_t def, int64_t limit,
                          const std::string& path) {
    if (!s.contains(key)) return def;
    const Json& v = s[key];
    if (!v.is_number() || v.get<double>() < 0 || std::floor(v.get<double>()) != v.get<double>()) {
      return Status(InvalidArgument(std::string(key) + " at " + path + " is not a count"));
    }
    if (v.get<double>() > static_cast<double>(limit)) {
      return Status(
          ResourceExhausted(std::string(key) + " at " + path + " above the limit " + std::to_string(limit)));
    }
    return static_cast<int64_t>(v.get<double>());
  }

  StatusOr<ExprId> BuildString(const Json& s, const std::string& path) {
    DI_ASSIGN_OR_RETURN(int64_t min_len, Count(s, "minLength", 0, kMaxStringLength, path));
    std::optional<int64_t> max_len;
    if (s.contains("maxLength")) {
      DI_ASSIGN_OR_RETURN(int64_t m, Count(s, "maxLength", 0, kMaxStringLength, path));
      max_len = m;
    }
    std::optional<std::string> pattern;
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string()) return InvalidArgument("pattern at " + path + " is not a string");
      pattern = s["pattern"].get<std::string>();
    }
    if (s.contains("format") && s["format"].is_string()) {
      std::optional<std::string> f = FormatRegex(s["format"].get<std::string>());
      if (f && pattern) {
        Unsupported(path, "format together with pattern");
      } else if (f) {
        pattern = f;
      }
    }
    if (pattern) {
      if (min_len > 0 || max_len) Unsupported(path, "pattern/format together with min/maxLength");
      return StringRule("p:" + *pattern, [&]() -> StatusOr<ExprId> {
        auto e = JsonStringPattern(g_, *pattern);
        if (!e.ok()) return Status(e.status().code(), "pattern at " + path + ": " + e.status().message());
        return *e;
      });
    }
    if (max_len && *max_len < min_len) return g_->Nothing();
    std::string key = "n:" + std::to_string(min_len) + ":" + (max_len ? std::to_string(*max_len) : "");
    return StringRule(key, [&]() -> StatusOr<ExprId> { return JsonString(g_, min_len, max_len); });
  }

  // Every string is its own rule, whatever surrounds it (a property, an
  // anyOf branch, a type union): the rule is then a terminal rule whose
  // automaton is the same in every schema, so its mask-cache entries are
  // shared across schemas (mask_cache.h) and can be warmed up or derived
  // from the reference string profiles (string_profile.h).
  template <typename BuildFn>
  StatusOr<ExprId> StringRule(const std::string& key, BuildFn&& build) {
    auto it = string_rules_.find(key);
    if (it != string_rules_.end()) return g_->Ref(it->second);
    DI_ASSIGN_OR_RETURN(ExprId body, build());
    RuleId r = g_->DefineRule("json_string", body);
    string_rules_.emplace(key, r);
    return g_->Ref(r);
  }

  StatusOr<ExprId> BuildNumber(const Json& s, const std::string& path, bool integer) {
    std::optional<double> lo, hi;
    bool lo_strict = false, hi_strict = false;
    for (const char* k : {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}) {
      if (!s.contains(k)) continue;
      if (!s[k].is_number()) {
        Unsupported(path, std::string(k) + " that is not a number (draft-04 form?)");
        continue;
      }
      double v = s[k].get<double>();
      std::string key = k;
      bool is_min = key == "minimum" || key == "exclusiveMinimum";
      bool strict = key.rfind("exclusive", 0) == 0;
      if (is_min && (!lo || v > *lo || (v == *lo && strict))) {
        lo = v;
        lo_strict = strict;
      }
      if (!is_min && (!hi || v < *hi || (v == *hi && strict))) {
        hi = v;
        hi_strict = strict;
      }
    }
    if (integer) {
      if (!lo && !hi) return JsonInteger(g_);
      std::optional<int64_t> ilo, ihi;
      if (lo) {
        if (std::fabs(*lo) > kMaxIntegerBound) {
          Unsupported(path, "integer bound beyond 1e17");
          return JsonInteger(g_);
        }
        double c = std::ceil(*lo);
        ilo = static_cast<int64_t>(lo_strict && c == *lo ? c + 1 : c);
      }
      if (hi) {
        if (std::fabs(*hi) > kMaxIntegerBound) {
          Unsupported(path, "integer bound beyond 1e17");
          return JsonInteger(g_);
        }
        double f = std::floor(*hi);
        ihi = static_cast<int64_t>(hi_strict && f == *hi ? f - 1 : f);
      }
      if (ilo && ihi && *ilo > *ihi) return g_->Nothing();
      return IntegerRange(g_, ilo, ihi);
    }
    if (!lo && !hi) return JsonNumber(g_);
    if (lo && *lo == 0 && !hi) return NonNegativeNumber(g_, lo_strict);  // keeps exponents
    // Integer-valued bounds: a decimal-range automaton (no exponent; see
    // NumberRange). Fractional bounds are not expressible that way.
    auto integral = [](double v) { return std::floor(v) == v && std::fabs(v) <= kMaxNumberBound; };
    if ((lo && !integral(*lo)) || (hi && !integral(*hi))) {
      Unsupported(path, "number bounds that are not integers of magnitude <= 1e15");
      return JsonNumber(g_);
    }
    if (lo && hi && (*lo > *hi || (*lo == *hi && (lo_strict || hi_strict)))) return g_->Nothing();
    auto as_int = [](std::optional<double> v) -> std::optional<int64_t> {
      if (!v) return std::nullopt;
      return static_cast<int64_t>(*v);
    };
    return NumberRange(g_, as_int(lo), lo_strict, as_int(hi), hi_strict);
  }

  // Additional-property keys: any JSON string except the declared names
  // (exact for ASCII names; see KeyNotIn).
  ExprId KeyNotIn(const std::vector<std::string>& names);

  StatusOr<ExprId> BuildObject(const Json& s, const std::string& path, int depth);
  StatusOr<ExprId> BuildArray(const Json& s, const std::string& path, int depth);

  const Json& root_;
  const JsonSchemaOptions& options_;
  Grammar* g_;
  std::map<std::string, RuleId> memo_;
  RuleId any_value_ = -1;
  std::map<std::string, RuleId> key_rules_;
  std::map<std::string, RuleId> string_rules_;
  std::vector<std::string> unsupported_;
};

ExprId SchemaConverter::KeyNotIn(const std::vector<std::string>& names) {
  // The whole key is one terminal rule (bytes only), so the mask cache walks
  // it with the dense DFA instead of the Earley parser.
  std::string cache_key;
  for (const std::string& n : names) cache_key += Json(n).dump() + ",";
  auto memo = key_rules_.find(cache_key);
  if (memo != key_rules_.end()) return g_->Ref(memo->second);
  ExprId rest = g_->Sequence({g_->Star(JsonStringChar(g_)), g_->Byte('"')});
  auto define = [&](ExprId body) {
    RuleId r = g_->DefineRule("json_key", g_->Sequence({g_->Byte('"'), body}));
    key_rules_.emplace(cache_key, r);
    return g_->Ref(r);
  };
  for (const std::string& n : names) {
    for (unsigned char c : n) {
      // Names needing escapes or non-ASCII: any key (documented gap: a
      // duplicate of such a name is not excluded).
      if (c < 0x20 || c >= 0x7F || c == '"' || c == '\\') return define(rest);
    }
  }
  // Trie of the names; node 0 = root. Children get larger indices than
  // their parent, so one reverse pass builds expressions bottom-up.
  struct Node {
    std::map<uint8_t, int> children;
    bool terminal = false;
  };
  std::vector<Node> trie(1);
  for (const std::string& n : names) {
    int cur = 0;
    for (unsigned char c : n) {
      auto it = trie[cur].children.find(c);
      if (it == trie[cur].children.end()) {
        trie.push_back(Node());
        it = trie[cur].children.emplace(c, static_cast<int>(trie.size() - 1)).first;
      }
      cur = it->second;
    }
    trie[cur].terminal = true;
  }
  // A first character that no name continues with, then any content.
  // Non-ASCII and escapes always differ (names are printable ASCII here).
  ExprId differ_other =
      g_->Sequence({g_->Choice({Utf8Class(g_, {{0x80, kMaxCodepoint}}), JsonEscape(g_)}), rest});
  std::vector<ExprId> expr(trie.size());
  for (size_t i = trie.size(); i-- > 0;) {
    const Node& n = trie[i];
    std::vector<ExprId> alts;
    if (!n.terminal) alts.push_back(g_->Byte('"'));
    std::vector<ByteRange> ascii = {{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0x7E}};
    std::vector<ByteRange> differ;
    for (ByteRange r : ascii) {
      for (int b = r.lo; b <= r.hi; ++b) {
        if (!n.children.count(static_cast<uint8_t>(b))) {
          differ.push_back({static_cast<uint8_t>(b), static_cast<uint8_t>(b)});
        }
      }
    }
    for (auto [c, child] : n.children) alts.push_back(g_->Sequence({g_->Byte(c), expr[child]}));
    alts.push_back(g_->Sequence({g_->Bytes(differ), rest}));
    alts.push_back(differ_other);
    expr[i] = g_->Choice(std::move(alts));
  }
  return define(expr[0]);
}

// Properties in schema order. With optional properties the comma placement
// is handled by two rule families (linear size, no 2^n alternatives):
//   F_i = the first present property is at index >= i
//   T_i = properties from index i on, after at least one was written
StatusOr<ExprId> SchemaConverter::BuildObject(const Json& s, const std::string& path, int depth) {
  struct Prop {
    std::string name;
    ExprId pair;
    bool required;
  };
  ExprId ws = Ws();
  ExprId sep = g_->Sequence({ws, g_->Byte(','), ws});
  std::set<std::string> required;
  if (s.contains("required")) {
    if (!s["required"].is_array()) return InvalidArgument("required at " + path + " is not an array");
    for (const Json& r : s["required"]) {
      if (!r.is_string()) return InvalidArgument("required at " + path + " has a non-string");
      required.insert(r.get<std::string>());
    }
  }
  Json additional = s.contains("additionalProperties") ? s["additionalProperties"] : Json(true);
  bool additional_allowed = !(additional.is_boolean() && !additional.get<bool>());
  // patternProperties / propertyNames: key regions (json_keys.h).
  Json pattern_props = s.value("patternProperties", Json::object());
  if (!pattern_props.is_object()) {
    return InvalidArgument("patternProperties at " + path + " is not an object");
  }
  const Json* property_names = s.contains("propertyNames") ? &s["propertyNames"] : nullptr;
  if (property_names &&
      (*property_names == Json(true) ||
       (property_names->is_object() && !json_schema_internal::HasConstraints(*property_names)))) {
    property_names = nullptr;
  }
  std::optional<JsonKeyLanguages> keys;
  std::vector<std::string> patterns;
  for (auto it = pattern_props.begin(); it != pattern_props.end(); ++it) patterns.push_back(it.key());
  if (!patterns.empty() || property_names) {
    auto k = JsonKeyLanguages::Build(patterns, property_names);
    if (k.ok()) {
      keys = std::move(*k);
    } else if (k.status().code() == StatusCode::kUnimplemented) {
      Unsupported(path, k.status().message());
    } else {
      return Status(k.status().code(), k.status().message() + " at " + path);
    }
  }
  // The schema a property's value must satisfy (nullopt: the name may not
  // appear): its declared schema or additionalProperties, and every
  // patternProperties schema whose pattern matches the name.
  auto value_schema = [&](const std::string& name,
                          const Json* declared_schema) -> StatusOr<std::optional<Json>> {
    if (keys && !keys->NameAllowed(name)) return std::optional<Json>();
    std::vector<int> matching;
    if (keys) matching = keys->Matching(name);
    if (!declared_schema && matching.empty() && !additional_allowed) return std::optional<Json>();
    Json v = declared_schema ? *declared_schema : matching.empty() ? additional : Json(true);
    for (int i : matching) {
      auto m = MergeSchemas(v, pattern_props[patterns[i]]);
      if (!m.ok()) {
        return Status(m.status().code(), m.status().message() + " at " + path + "/patternProperties");
      }
      v = std::move(*m);
    }
    return std::optional<Json>(std::move(v));
  };
  auto make_pair = [&](const std::string& name, const Json& sub,
                       const std::string& sub_path) -> StatusOr<ExprId> {
    DI_ASSIGN_OR_RETURN(ExprId value, RefTo(sub, sub_path, depth));
    return g_->Sequence({g_->Literal(Json(name).dump()), ws, g_->Byte(':'), ws, value});
  };
  std::vector<Prop> props;
  std::set<std::string> declared;
  if (s.contains("properties")) {
    if (!s["properties"].is_object()) return InvalidArgument("properties at " + path + " is not an object");
    for (auto it = s["properties"].begin(); it != s["properties"].end(); ++it) {
      declared.insert(it.key());
      DI_ASSIGN_OR_RETURN(std::optional<Json> v, value_schema(it.key(), &it.value()));
      if (!v) {  // propertyNames forbids it
        if (required.count(it.key())) return g_->Nothing();
        continue;
      }
      DI_ASSIGN_OR_RETURN(ExprId pair, make_pair(it.key(), *v, path + "/properties/" + it.key()));
      props.push_back({it.key(), pair, required.count(it.key()) > 0});
    }
  }
  for (const std::string& r : required) {  // required but not declared
    if (declared.count(r)) continue;
    DI_ASSIGN_OR_RETURN(std::optional<Json> v, value_schema(r, nullptr));
    if (!v) return g_->Nothing();
    DI_ASSIGN_OR_RETURN(ExprId pair, make_pair(r, *v, path + "/additionalProperties"));
    props.push_back({r, pair, true});
    declared.insert(r);
  }
  ExprId extra = g_->Nothing();
  std::vector<std::string> names(declared.begin(), declared.end());
  if (keys) {
    // One alternative per key region, each with its value schema.
    auto regions = keys->Regions(names, g_);
    if (!regions.ok()) return Status(regions.status().code(), regions.status().message() + " at " + path);
    std::vector<ExprId> alts;
    for (const JsonKeyLanguages::Region& region : *regions) {
      Json v = region.patterns.empty() ? additional : Json(true);
      if (region.patterns.empty() && !additional_allowed) continue;
      for (int i : region.patterns) {
        auto m = MergeSchemas(v, pattern_props[patterns[i]]);
        if (!m.ok()) {
          return Status(m.status().code(), m.status().message() + " at " + path + "/patternProperties");
        }
        v = std::move(*m);
      }
      DI_ASSIGN_OR_RETURN(ExprId value, RefTo(v, path + "/patternProperties", depth));
      RuleId key_rule = g_->DefineRule("json_key", region.key);  // a terminal rule of its own
      alts.push_back(g_->Sequence({g_->Ref(key_rule), ws, g_->Byte(':'), ws, value}));
    }
    extra = g_->Choice(std::move(alts));
    additional_allowed = g_->expr(extra).kind != ExprKind::kNothing;
  } else if (additional_allowed) {
    DI_ASSIGN_OR_RETURN(ExprId value, RefTo(additional, path + "/additionalProperties", depth));
    extra = g_->Sequence({KeyNotIn(names), ws, g_->Byte(':'), ws, value});  // key rule includes quotes
  }
  ExprId extra_tail = additional_allowed ? g_->Star(g_->Sequence({sep, extra})) : g_->Empty();
  size_t n = props.size();
  bool all_required = true;
  for (const Prop& p : props) all_required &= p.required;
  ExprId body;
  if (all_required) {
    std::vector<ExprId> seq;
    for (size_t i = 0; i < n; ++i) {
      if (i > 0) seq.push_back(sep);
      seq.push_back(props[i].pair);
    }
    if (n > 0) {
      seq.push_back(extra_tail);
    } else if (additional_allowed) {
      seq.push_back(g_->Optional(g_->Sequence({extra, extra_tail})));
    }
    body = g_->Sequence(std::move(seq));
  } else {
    std::vector<RuleId> tail(n + 1), first(n + 1);
    tail[n] = g_->DefineRule(path + "#tail", extra_tail);
    first[n] = g_->DefineRule(path + "#first", additional_allowed
                                                   ? g_->Optional(g_->Sequence({extra, g_->Ref(tail[n])}))
                                                   : g_->Empty());
    for (size_t i = n; i-- > 0;) {
      ExprId with_sep = g_->Sequence({sep, props[i].pair});
      tail[i] = g_->DefineRule(
          path + "#tail",
          g_->Sequence({props[i].required ? with_sep : g_->Optional(with_sep), g_->Ref(tail[i + 1])}));
      ExprId starts_here = g_->Sequence({props[i].pair, g_->Ref(tail[i + 1])});
      first[i] =
          g_->DefineRule(path + "#first",
                         props[i].required ? starts_here : g_->Choice({starts_here, g_->Ref(first[i + 1])}));
    }
    body = g_->Ref(first[0]);
  }
  return g_->Sequence({g_->Byte('{'), ws, body, ws, g_->Byte('}')});
}

StatusOr<ExprId> SchemaConverter::BuildArray(const Json& s, const std::string& path, int depth) {
  std::vector<const Json*> prefix;
  Json rest = true;
  if (s.contains("prefixItems")) {
    if (!s["prefixItems"].is_array()) return InvalidArgument("prefixItems at " + path + " is not an array");
    for (const Json& p : s["prefixItems"]) prefix.push_back(&p);
    if (s.contains("items")) rest = s["items"];
  } else if (s.contains("items") && s["items"].is_array()) {  // draft-07 tuple form
    for (const Json& p : s["items"]) prefix.push_back(&p);
    if (s.contains("additionalItems")) rest = s["additionalItems"];
  } else if (s.contains("items")) {
    rest = s["items"];
  }
  DI_ASSIGN_OR_RETURN(int64_t min_items, Count(s, "minItems", 0, kMaxItems, path));
  std::optional<int64_t> max_items;
  if (s.contains("maxItems")) {
    DI_ASSIGN_OR_RETURN(int64_t m, Count(s, "maxItems", 0, INT32_MAX, path));
    max_items = m;
  }
  bool rest_allowed = !(rest.is_boolean() && !rest.get<bool>());
  int64_t k = static_cast<int64_t>(prefix.size());
  if (!rest_allowed) max_items = max_items ? std::min<int64_t>(*max_items, k) : k;
  if (max_items && *max_items < min_items) return g_->Nothing();
  ExprId ws = Ws();
  ExprId sep = g_->Sequence({ws, g_->Byte(','), ws});
  int64_t cut = max_items ? std::min<int64_t>(k, *max_items) : k;
  // Elements(j) for j >= k: [sep] item (sep item){...}, bounded by min/max.
  ExprId elements = g_->Empty();
  if (rest_allowed && (!max_items || *max_items > k)) {
    DI_ASSIGN_OR_RETURN(ExprId item, RefTo(rest, path + "/items", depth));
    int64_t need = std::max<int64_t>(0, min_items - k - 1);
    int32_t more_max = max_items ? static_cast<int32_t>(*max_items - k - 1) : Grammar::kUnbounded;
    if (more_max != Grammar::kUnbounded && static_cast<int64_t>(more_max) > kMaxItems) {
      more_max = Grammar::kUnbounded;  // huge maxItems: not worth expanding
      if (max_items) Unsupported(path, "maxItems above " + std::to_string(kMaxItems));
    }
    ExprId run = g_->Sequence({k > 0 ? sep : g_->Empty(), item,
                               g_->Repeat(g_->Sequence({sep, item}), static_cast<int32_t>(need), more_max)});
    elements = k >= min_items ? g_->Optional(run) : run;
  }
  for (int64_t j = cut; j-- > 0;) {
    DI_ASSIGN_OR_RETURN(ExprId item, RefTo(*prefix[j], path + "/prefixItems/" + std::to_string(j), depth));
    ExprId piece = g_->Sequence({j > 0 ? sep : g_->Empty(), item, elements});
    elements = j >= min_items ? g_->Optional(piece) : piece;
  }
  if (min_items > cut && !(rest_allowed && (!max_items || *max_items > k))) return g_->Nothing();
  return g_->Sequence({g_->Byte('['), ws, elements, ws, g_->Byte(']')});
}

}  // namespace

StatusOr<Grammar> JsonSchemaToGrammar(std::string_view schema_text, const JsonSchemaOptions& options) {
  Json root = Json::parse(schema_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return InvalidArgument("JSON schema is not valid JSON");
  Grammar g;
  try {
    SchemaConverter converter(root, options, &g);
    DI_ASSIGN_OR_RETURN(RuleId r, converter.Run());
    g.set_root(r);
  } catch (const std::exception& e) {  // nlohmann type errors on malformed schemas
    return InvalidArgument(std::string("JSON schema: ") + e.what());
  }
  return g;
}

}  // namespace deepinfer::grammar
