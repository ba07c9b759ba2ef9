#include "grammar/json_schema.h"

#include <cmath>
#include <map>
#include <set>

#include "core/log.h"
#include "grammar/json_constrained.h"
#include "grammar/json_keys.h"
#include "grammar/json_primitives.h"
#include "grammar/json_schema_rewrite.h"
#include "grammar/json_schema_util.h"
#include "grammar/utf8.h"

namespace deepinfer::grammar {

using json_schema_internal::HasConstraints;
using json_schema_internal::IsAnnotation;
using json_schema_internal::Json;
using json_schema_internal::kNotIn;
using json_schema_internal::kNotPattern;
using json_schema_internal::kPatternsKeyword;
using json_schema_internal::MergeSchemas;
using json_schema_internal::ResolveRef;
using json_schema_internal::Without;

std::string JsonSchemaOptions::CacheKey() const {
  return std::to_string(any_whitespace) + "," + std::to_string(max_whitespace) + "," +
         std::to_string(strict) + "," + std::to_string(max_depth);
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
                                        "propertyNames",
                                        "minProperties",
                                        "maxProperties",
                                        "multipleOf",
                                        "uniqueItems",
                                        "then",
                                        "else",
                                        kNotIn,
                                        kNotPattern,
                                        kPatternsKeyword};
constexpr int64_t kMaxStringLength = 10000;
constexpr int64_t kMaxItems = 10000;
constexpr double kMaxIntegerBound = 1e17;
constexpr double kMaxNumberBound = 1e15;
constexpr int64_t kMaxMultipleOf = 100000;
constexpr int64_t kMaxCountedProperties = 64;
constexpr size_t kMaxUniqueItemValues = 8;

// A JSON pointer token: '~' and '/' escaped (RFC 6901).
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

class SchemaConverter {
 public:
  SchemaConverter(const Json& root, const JsonSchemaOptions& options, Grammar* g)
      : root_(root), options_(options), g_(g) {}

  StatusOr<RuleId> Run() {
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

  std::vector<RelaxedAssertion> TakeRelaxed() { return std::move(relaxed_); }

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
    for (const RelaxedAssertion& r : relaxed_) {
      if (r.keyword == what && r.pointer == path) return;
    }
    relaxed_.push_back({what, path});
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
    if (!s.is_object()) return InvalidArgument("schema at " + path + " is not an object or boolean");
    if (s.contains("$ref")) {
      if (!s["$ref"].is_string()) return InvalidArgument("$ref at " + path + " is not a string");
      std::string ref = s["$ref"].get<std::string>();
      auto target = ResolveRef(root_, ref);
      if (!target.ok()) return Status(target.status().code(), target.status().message() + " at " + path);
      Json rest = Without(s, "$ref");
      if (!HasConstraints(rest)) return RefTo(**target, ref, depth);
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

  void CheckKeywords(const Json& s, const std::string& path) {
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

  // Values excluded by a negated enum/const (rewrite of `not`).
  static Json NotIn(const Json& s) {
    return s.contains(kNotIn) && s[kNotIn].is_array() ? s[kNotIn] : Json::array();
  }
  static bool Excluded(const Json& s, const Json& v) {
    Json not_in = NotIn(s);
    return std::find(not_in.begin(), not_in.end(), v) != not_in.end();
  }

  StatusOr<ExprId> BuildEnum(const Json& s, const std::vector<std::string>& types, const std::string& path) {
    Json values = s.contains("const") ? Json::array({s["const"]}) : s["enum"];
    if (!values.is_array()) return InvalidArgument("enum at " + path + "/enum is not an array");
    if (s.contains("const") && s.contains("enum") &&
        std::find(s["enum"].begin(), s["enum"].end(), s["const"]) == s["enum"].end()) {
      values = Json::array();
    }
    // Every other assertion holds or fails per value: a value stays when it
    // satisfies the schema's other keywords (checked for the common ones;
    // others are relaxed, see docs).
    std::vector<ExprId> alts;
    for (const Json& v : values) {
      if (!ValueHasType(v, types) || Excluded(s, v)) continue;
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

  StatusOr<int64_t> Count(const Json& s, const char* key, int64_t def, int64_t limit,
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

  StatusOr<ExprId> BuildString(const Json& s, const std::string& path) {
    StringConstraints c;
    DI_ASSIGN_OR_RETURN(c.min_len, Count(s, "minLength", 0, kMaxStringLength, path));
    if (s.contains("maxLength")) {
      DI_ASSIGN_OR_RETURN(int64_t m, Count(s, "maxLength", 0, kMaxStringLength, path));
      c.max_len = m;
    }
    if (c.max_len && *c.max_len < c.min_len) {
      return InvalidArgument("minLength > maxLength at " + path + ": no string satisfies the schema");
    }
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string())
        return InvalidArgument("pattern at " + path + "/pattern is not a string");
      c.patterns.push_back(s["pattern"].get<std::string>());
    }
    if (s.contains("format") && s["format"].is_string()) {
      std::optional<std::string> f = FormatRegex(s["format"].get<std::string>());
      if (f) c.patterns.push_back(*f);
    }
    auto strings = [](const Json& s, const char* key) {
      std::vector<std::string> out;
      if (s.contains(key) && s[key].is_array()) {
        for (const Json& x : s[key]) {
          if (x.is_string()) out.push_back(x.get<std::string>());
        }
      }
      return out;
    };
    for (const std::string& p : strings(s, kPatternsKeyword)) c.patterns.push_back(p);
    c.not_patterns = strings(s, kNotPattern);
    c.not_values = strings(s, kNotIn);
    std::string key = Json{
        {"min", c.min_len},
        {"max", c.max_len ? Json(*c.max_len) : Json()},
        {"p", c.patterns},
        {"np", c.not_patterns},
        {"nv",
         c.not_values}}.dump();
    auto built = StringRule(key, [&]() { return ConstrainedJsonString(g_, c); });
    if (built.ok() || (built.status().code() != StatusCode::kUnimplemented &&
                       built.status().code() != StatusCode::kResourceExhausted)) {
      if (!built.ok())
        return Status(built.status().code(), "pattern at " + path + ": " + built.status().message());
      return built;
    }
    // Relaxed: a pattern the regex front end cannot take, or a product too
    // large; keep the length bounds alone.
    Unsupported(path, "pattern/format (" + built.status().message() + ")");
    return StringRule("n:" + std::to_string(c.min_len) + ":" + (c.max_len ? std::to_string(*c.max_len) : ""),
                      [&]() -> StatusOr<ExprId> { return JsonString(g_, c.min_len, c.max_len); });
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

  StatusOr<ExprId> BuildNumber(const Json& s, const std::string& path, bool integer);

  // Additional-property keys: any JSON string except the declared names
  // (exact for ASCII names; see KeyNotIn).
  ExprId KeyNotIn(const std::vector<std::string>& names);

  StatusOr<ExprId> BuildObject(const Json& s, const std::string& path, int depth);
  struct Member {
    std::string name;
    ExprId pair;  // "name": value
    bool required;
  };
  ExprId UncountedMembers(const std::vector<Member>& props, ExprId extra, bool additional_allowed, ExprId sep,
                          const std::string& path);
  ExprId CountedMembers(const std::vector<Member>& props, ExprId extra, bool additional_allowed, ExprId sep,
                        int64_t min_props, std::optional<int64_t> max_props, const std::string& path);
  StatusOr<ExprId> UniqueItems(const Json& s, const Json& items, const std::string& path);
  StatusOr<ExprId> BuildArray(const Json& s, const std::string& path, int depth);

  const Json& root_;
  const JsonSchemaOptions& options_;
  Grammar* g_;
  std::map<std::string, RuleId> memo_;
  RuleId any_value_ = -1;
  std::map<std::string, RuleId> key_rules_;
  std::map<std::string, RuleId> string_rules_;
  std::vector<RelaxedAssertion> relaxed_;
};

StatusOr<ExprId> SchemaConverter::BuildNumber(const Json& s, const std::string& path, bool integer) {
  std::optional<double> lo, hi;
  bool lo_strict = false, hi_strict = false;
  // Draft-04: exclusiveMinimum / exclusiveMaximum are booleans that make
  // minimum / maximum strict.
  bool d4_lo = s.value("exclusiveMinimum", Json()) == Json(true);
  bool d4_hi = s.value("exclusiveMaximum", Json()) == Json(true);
  for (const char* k : {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}) {
    if (!s.contains(k)) continue;
    std::string key = k;
    bool exclusive = key.rfind("exclusive", 0) == 0;
    if (exclusive && s[k].is_boolean()) continue;
    if (!s[k].is_number()) return InvalidArgument(key + " at " + path + "/" + key + " is not a number");
    double v = s[k].get<double>();
    bool is_min = key == "minimum" || key == "exclusiveMinimum";
    bool strict = exclusive || (key == "minimum" && d4_lo) || (key == "maximum" && d4_hi);
    if (is_min && (!lo || v > *lo || (v == *lo && strict))) {
      lo = v;
      lo_strict = strict;
    }
    if (!is_min && (!hi || v < *hi || (v == *hi && strict))) {
      hi = v;
      hi_strict = strict;
    }
  }
  int64_t multiple = 0;  // 0: none
  if (s.contains("multipleOf")) {
    const Json& m = s["multipleOf"];
    if (!m.is_number() || m.get<double>() <= 0) {
      return InvalidArgument("multipleOf at " + path + "/multipleOf is not a positive number");
    }
    double k = m.get<double>();
    if (std::floor(k) == k && k <= static_cast<double>(kMaxMultipleOf)) {
      multiple = static_cast<int64_t>(k);
    } else {
      Unsupported(path, "multipleOf that is not a whole number up to " + std::to_string(kMaxMultipleOf));
    }
  }
  Json not_in = NotIn(s);
  if (integer) {
    std::optional<int64_t> ilo, ihi;
    if ((lo && std::fabs(*lo) > kMaxIntegerBound) || (hi && std::fabs(*hi) > kMaxIntegerBound)) {
      Unsupported(path, "integer bound beyond 1e17");
      return JsonInteger(g_);
    }
    if (lo) {
      double c = std::ceil(*lo);
      ilo = static_cast<int64_t>(lo_strict && c == *lo ? c + 1 : c);
    }
    if (hi) {
      double f = std::floor(*hi);
      ihi = static_cast<int64_t>(hi_strict && f == *hi ? f - 1 : f);
    }
    if (ilo && ihi && *ilo > *ihi) return g_->Nothing();
    IntegerConstraints c{ilo, ihi, multiple > 1 ? multiple : 1, {}};
    for (const Json& v : not_in) {
      if (v.is_number_integer()) c.excluded.push_back(v.get<int64_t>());
      if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() &&
          std::fabs(v.get<double>()) < kMaxNumberBound) {
        c.excluded.push_back(static_cast<int64_t>(v.get<double>()));
      }
    }
    auto e = ConstrainedJsonInteger(g_, c);
    if (e.ok() || e.status().code() != StatusCode::kResourceExhausted) return e;
    Unsupported(path, "multipleOf / not enum (" + e.status().message() + ")");
    return IntegerRange(g_, ilo, ihi);
  }
  if (lo && hi && (*lo > *hi || (*lo == *hi && (lo_strict || hi_strict)))) return g_->Nothing();
  std::vector<Decimal> excluded;
  for (const Json& v : not_in) {
    if (!v.is_number()) continue;
    std::optional<Decimal> d = DecimalOf(v.get<double>(), 15);
    if (d) {
      excluded.push_back(*d);
    } else {
      Unsupported(path, "not enum/const of a number with more than 15 digits");
    }
  }
  bool simple = multiple == 0 && excluded.empty();
  if (simple && !lo && !hi) return JsonNumber(g_);
  if (simple && lo && *lo == 0 && !hi) return NonNegativeNumber(g_, lo_strict);  // keeps exponents
  auto integral = [](double v) { return std::floor(v) == v && std::fabs(v) <= kMaxNumberBound; };
  if (simple && (!lo || integral(*lo)) && (!hi || integral(*hi))) {
    // Integer-valued bounds: a decimal-range pattern (no exponent; NumberRange).
    auto as_int = [](std::optional<double> v) -> std::optional<int64_t> {
      if (!v) return std::nullopt;
      return static_cast<int64_t>(*v);
    };
    return NumberRange(g_, as_int(lo), lo_strict, as_int(hi), hi_strict);
  }
  // Fractional bounds, multipleOf, excluded values: exact digit automata.
  NumberConstraints c;
  c.lo_strict = lo_strict;
  c.hi_strict = hi_strict;
  c.multiple_of = multiple;
  c.excluded = std::move(excluded);
  for (auto [bound, out] : {std::pair{&lo, &c.lo}, std::pair{&hi, &c.hi}}) {
    if (!*bound) continue;
    *out = DecimalOf(**bound, 15);
    if (!*out) {
      Unsupported(path, "number bounds with more than 15 significant digits or magnitude >= 1e15");
      return JsonNumber(g_);
    }
  }
  auto e = ConstrainedJsonNumber(g_, c);
  if (e.ok() || e.status().code() != StatusCode::kResourceExhausted) return e;
  Unsupported(path, "number bounds / multipleOf (" + e.status().message() + ")");
  return JsonNumber(g_);
}

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

// Properties in schema order (members: UncountedMembers / CountedMembers).
StatusOr<ExprId> SchemaConverter::BuildObject(const Json& s, const std::string& path, int depth) {
  using Prop = Member;
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
      DI_ASSIGN_OR_RETURN(ExprId pair,
                          make_pair(it.key(), *v, path + "/properties/" + PointerToken(it.key())));
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
  DI_ASSIGN_OR_RETURN(int64_t min_props, Count(s, "minProperties", 0, INT32_MAX, path));
  std::optional<int64_t> max_props;
  if (s.contains("maxProperties")) {
    DI_ASSIGN_OR_RETURN(int64_t m, Count(s, "maxProperties", 0, INT32_MAX, path));
    max_props = m;
  }
  size_t n = props.size();
  int64_t n_required = 0;
  for (const Prop& p : props) n_required += p.required;
  // Counts that the property layout already implies need no counting.
  if (min_props <= n_required) min_props = 0;
  if (max_props && !additional_allowed && *max_props >= static_cast<int64_t>(n)) max_props.reset();
  if (max_props && *max_props < std::max(min_props, n_required)) {
    return InvalidArgument("minProperties/required > maxProperties at " + path +
                           ": no object satisfies the schema");
  }
  if ((max_props && *max_props > kMaxCountedProperties) || min_props > kMaxCountedProperties) {
    Unsupported(path, "min/maxProperties above " + std::to_string(kMaxCountedProperties));
    min_props = 0;
    max_props.reset();
  }
  ExprId body;
  if (min_props > 0 || max_props) {
    body = CountedMembers(props, extra, additional_allowed, sep, min_props, max_props, path);
  } else {
    body = UncountedMembers(props, extra, additional_allowed, sep, path);
  }
  return g_->Sequence({g_->Byte('{'), ws, body, ws, g_->Byte('}')});
}

// Properties in schema order. With optional properties the comma placement
// is handled by two rule families (linear size, no 2^n alternatives):
//   F_i = the first present property is at index >= i
//   T_i = properties from index i on, after at least one was written
ExprId SchemaConverter::UncountedMembers(const std::vector<Member>& props, ExprId extra,
                                         bool additional_allowed, ExprId sep, const std::string& path) {
  ExprId extra_tail = additional_allowed ? g_->Star(g_->Sequence({sep, extra})) : g_->Empty();
  size_t n = props.size();
  bool all_required = true;
  for (const Member& p : props) all_required &= p.required;
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
    return g_->Sequence(std::move(seq));
  }
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
    first[i] = g_->DefineRule(
        path + "#first", props[i].required ? starts_here : g_->Choice({starts_here, g_->Ref(first[i + 1])}));
  }
  return g_->Ref(first[0]);
}

// min/maxProperties: the same walk over the declared properties with the
// number of members written so far as part of the state,
//   R(i, c) = the members from declared index i on, c members already written
// (c capped at maxProperties, or saturating at minProperties when there is
// no maximum: only "c >= min" matters then). Additional members come last,
// bounded by what is left of the counts. (n + 1) * (cap + 1) rules.
ExprId SchemaConverter::CountedMembers(const std::vector<Member>& props, ExprId extra,
                                       bool additional_allowed, ExprId sep, int64_t min_props,
                                       std::optional<int64_t> max_props, const std::string& path) {
  size_t n = props.size();
  int64_t cap = max_props ? *max_props : std::max<int64_t>(min_props, 1);
  auto index = [&](size_t i, int64_t c) { return i * static_cast<size_t>(cap + 1) + static_cast<size_t>(c); };
  std::vector<RuleId> rules((n + 1) * static_cast<size_t>(cap + 1));
  for (int64_t c = 0; c <= cap; ++c) {
    int64_t need = std::max<int64_t>(0, min_props - c);
    std::optional<int64_t> room;
    if (max_props) room = *max_props - c;
    ExprId body;
    if (!additional_allowed || (room && *room == 0)) {
      body = need == 0 ? g_->Empty() : g_->Nothing();
    } else {
      ExprId first = c > 0 ? g_->Sequence({sep, extra}) : extra;
      int32_t more_max = room ? static_cast<int32_t>(*room - 1) : Grammar::kUnbounded;
      ExprId run =
          g_->Sequence({first, g_->Repeat(g_->Sequence({sep, extra}),
                                          static_cast<int32_t>(std::max<int64_t>(0, need - 1)), more_max)});
      body = need == 0 ? g_->Optional(run) : run;
    }
    rules[index(n, c)] = g_->DefineRule(path + "#count", body);
  }
  for (size_t i = n; i-- > 0;) {
    for (int64_t c = 0; c <= cap; ++c) {
      int64_t next = c + 1;
      ExprId take = g_->Nothing();
      if (!max_props || next <= *max_props) {
        if (!max_props) next = std::min(next, cap);
        ExprId pair = c > 0 ? g_->Sequence({sep, props[i].pair}) : props[i].pair;
        take = g_->Sequence({pair, g_->Ref(rules[index(i + 1, next)])});
      }
      ExprId body = props[i].required ? take : g_->Choice({take, g_->Ref(rules[index(i + 1, c)])});
      rules[index(i, c)] = g_->DefineRule(path + "#count", body);
    }
  }
  return g_->Ref(rules[index(0, 0)]);
}

// uniqueItems over a finite item set (an enum/const, booleans, null): the
// arrays of distinct values, one rule per set of values already used
// (2^m rules for m values). Returns Nothing-free kNotFound when the item
// schema is not such a set (the caller relaxes the keyword).
StatusOr<ExprId> SchemaConverter::UniqueItems(const Json& s, const Json& items, const std::string& path) {
  DI_ASSIGN_OR_RETURN(Json it, Deref(items));
  if (!it.is_object()) return NotFound("items is not a finite set");
  std::vector<std::string> types = {"null", "boolean", "object", "array", "string", "number"};
  for (auto k = it.begin(); k != it.end(); ++k) {
    if (!IsAnnotation(k.key()) && k.key() != "enum" && k.key() != "const" && k.key() != "type") {
      return NotFound("items has '" + k.key() + "'");
    }
  }
  if (it.contains("type")) {
    types.clear();
    const Json& t = it["type"];
    for (const Json& x : t.is_array() ? t : Json::array({t})) {
      if (x.is_string()) types.push_back(x.get<std::string>());
    }
  }
  Json candidates;
  if (it.contains("const")) {
    candidates = Json::array({it["const"]});
  } else if (it.contains("enum") && it["enum"].is_array()) {
    candidates = it["enum"];
  } else if (!types.empty() && std::all_of(types.begin(), types.end(), [](const std::string& t) {
               return t == "boolean" || t == "null";
             })) {
    candidates = Json::array();
    for (const std::string& t : types) {
      if (t == "null") candidates.push_back(nullptr);
      if (t == "boolean") candidates.insert(candidates.end(), {true, false});
    }
  } else {
    return NotFound("items is not a finite set");
  }
  std::vector<std::string> values;
  for (const Json& v : candidates) {
    std::string text = v.dump();
    if (ValueHasType(v, types) && std::find(values.begin(), values.end(), text) == values.end()) {
      values.push_back(text);
    }
  }
  if (values.size() > kMaxUniqueItemValues) return NotFound("items has more than 8 values");
  DI_ASSIGN_OR_RETURN(int64_t min_items, Count(s, "minItems", 0, kMaxItems, path));
  int64_t max_items = static_cast<int64_t>(values.size());
  if (s.contains("maxItems")) {
    DI_ASSIGN_OR_RETURN(int64_t m, Count(s, "maxItems", 0, INT32_MAX, path));
    max_items = std::min(max_items, m);
  }
  if (min_items > max_items) return g_->Nothing();
  ExprId ws = Ws();
  ExprId sep = g_->Sequence({ws, g_->Byte(','), ws});
  size_t m = values.size();
  std::vector<RuleId> rest(size_t{1} << m);
  for (size_t used = rest.size(); used-- > 0;) {
    int64_t count = __builtin_popcountll(used);
    std::vector<ExprId> alts;
    if (count >= min_items) alts.push_back(g_->Empty());
    if (count < max_items) {
      for (size_t v = 0; v < m; ++v) {
        if (used & (size_t{1} << v)) continue;
        ExprId item = g_->Literal(values[v]);
        alts.push_back(
            g_->Sequence({count > 0 ? sep : g_->Empty(), item, g_->Ref(rest[used | (size_t{1} << v)])}));
      }
    }
    rest[used] = g_->DefineRule(path + "#unique", g_->Choice(std::move(alts)));
  }
  return g_->Sequence({g_->Byte('['), ws, g_->Ref(rest[0]), ws, g_->Byte(']')});
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
  if (s.value("uniqueItems", Json(false)) == Json(true)) {
    if (!prefix.empty()) {
      Unsupported(path, "uniqueItems with prefixItems");
    } else {
      auto unique = UniqueItems(s, rest, path);
      if (unique.ok() || unique.status().code() != StatusCode::kNotFound) return unique;
      Unsupported(path, "uniqueItems (" + unique.status().message() + ")");
    }
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

StatusOr<JsonSchemaGrammar> CompileJsonSchemaGrammar(std::string_view schema_text,
                                                     const JsonSchemaOptions& options) {
  Json root = Json::parse(schema_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return InvalidArgument("JSON schema is not valid JSON");
  if (!root.is_object() && !root.is_boolean()) {
    return InvalidArgument("JSON schema at # is not an object or boolean");
  }
  JsonSchemaGrammar out;
  try {
    SchemaConverter converter(root, options, &out.grammar);
    DI_ASSIGN_OR_RETURN(RuleId r, converter.Run());
    out.grammar.set_root(r);
    out.relaxed = converter.TakeRelaxed();
  } catch (const std::exception& e) {  // nlohmann type errors on malformed schemas
    return InvalidArgument(std::string("JSON schema: ") + e.what());
  }
  return out;
}

StatusOr<Grammar> JsonSchemaToGrammar(std::string_view schema_text, const JsonSchemaOptions& options) {
  DI_ASSIGN_OR_RETURN(JsonSchemaGrammar g, CompileJsonSchemaGrammar(schema_text, options));
  if (!g.relaxed.empty()) {
    std::string list;
    for (const RelaxedAssertion& r : g.relaxed)
      list += (list.empty() ? "" : "; ") + r.keyword + " at " + r.pointer;
    DI_LOG_WARN("json schema (not strict): relaxed assertions: %s", list.c_str());
  }
  return std::move(g.grammar);
}

}  // namespace deepinfer::grammar
