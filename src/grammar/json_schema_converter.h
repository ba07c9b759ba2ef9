// SchemaConverter: the JSON Schema front end's walk over one schema
// (internal; json_schema.h is the API). One rule per distinct subschema,
// built on demand so recursive $refs terminate. Split by concern:
// json_schema.cc (dispatch, applicators, enum, the API),
// json_schema_scalars.cc (strings, numbers), json_schema_containers.cc
// (objects, arrays). Not thread-safe; one converter per compile.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "grammar/grammar.h"
#include "grammar/json_primitives.h"
#include "grammar/json_schema.h"
#include "grammar/json_schema_rewrite.h"
#include "grammar/json_schema_util.h"

namespace deepinfer::grammar::json_schema_internal {

inline constexpr int64_t kMaxStringLength = 10000;
inline constexpr int64_t kMaxItems = 10000;
inline constexpr double kMaxIntegerBound = 1e17;
inline constexpr double kMaxNumberBound = 1e15;
inline constexpr int64_t kMaxMultipleOf = 100000;
inline constexpr int64_t kMaxCountedProperties = 64;
inline constexpr size_t kMaxUniqueItemValues = 8;
inline constexpr size_t kMaxGrammarExprs = 2000000;

// A JSON pointer token: '~' and '/' escaped (RFC 6901).
std::string PointerToken(const std::string& s);

class SchemaConverter {
 public:
  SchemaConverter(const Json& root, const JsonSchemaOptions& options, Grammar* g)
      : root_(root), options_(options), g_(g), ref_overrides_siblings_(RefOverridesSiblings(root)) {}

  StatusOr<RuleId> Run();

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
    if (!HasConstraints(rest) || ref_overrides_siblings_) return *target;
    return MergeSchemas(*target, rest);
  }

  StatusOr<ExprId> Build(const Json& s, const std::string& path, int depth);

  void CheckKeywords(const Json& s, const std::string& path);

  // Values excluded by a negated enum/const (rewrite of `not`).
  static Json NotIn(const Json& s) {
    return s.contains(kNotIn) && s[kNotIn].is_array() ? s[kNotIn] : Json::array();
  }
  static bool Excluded(const Json& s, const Json& v) {
    Json not_in = NotIn(s);
    return std::find(not_in.begin(), not_in.end(), v) != not_in.end();
  }

  StatusOr<ExprId> BuildEnum(const Json& s, const std::vector<std::string>& types, const std::string& path);

  StatusOr<std::optional<std::string>> ValueViolates(const Json& v, const Json& s);
  static bool ValueHasType(const Json& v, const std::vector<std::string>& types);

  StatusOr<ExprId> BuildType(const std::string& t, const Json& s, const std::string& path, int depth);

  StatusOr<int64_t> Count(const Json& s, const char* key, int64_t def, int64_t limit,
                          const std::string& path);

  StatusOr<ExprId> BuildString(const Json& s, const std::string& path);

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
  StatusOr<ExprId> ContainsItems(const Json& s, const Json& rest, const std::string& path, int depth);
  StatusOr<ExprId> UniqueItems(const Json& s, const Json& items, const std::string& path);
  StatusOr<ExprId> BuildArray(const Json& s, const std::string& path, int depth);

  // Drafts 04-07 ($schema names one): keywords beside $ref are ignored.
  static bool RefOverridesSiblings(const Json& root) {
    if (!root.is_object() || !root.contains("$schema") || !root["$schema"].is_string()) return false;
    const std::string id = root["$schema"].get<std::string>();
    for (const char* d : {"draft-04", "draft-05", "draft-06", "draft-07"}) {
      if (id.find(d) != std::string::npos) return true;
    }
    return false;
  }

  const Json& root_;
  const JsonSchemaOptions& options_;
  Grammar* g_;
  std::map<std::string, RuleId> memo_;
  RuleId any_value_ = -1;
  std::map<std::string, RuleId> key_rules_;
  std::map<std::string, RuleId> string_rules_;
  std::vector<RelaxedAssertion> relaxed_;
  bool ref_overrides_siblings_;
};

}  // namespace deepinfer::grammar::json_schema_internal
