// Objects and arrays of the JSON Schema front end (see json_schema_converter.h).
#include <algorithm>
#include <set>

#include "grammar/automaton.h"
#include "grammar/json_keys.h"
#include "grammar/json_schema_converter.h"
#include "grammar/utf8.h"

namespace deepinfer::grammar::json_schema_internal {

namespace {

// The DFA of a key's rest after its first differing character: any string
// characters, then the closing quote. The same for every schema: built once.
const GrammarAutomaton& KeyRestAutomaton() {
  static const GrammarAutomaton* const rest = [] {
    Grammar g;
    g.set_root(g.DefineRule("rest", g.Sequence({g.Star(JsonStringChar(&g)), g.Byte('"')})));
    Deadline deadline(60.0);
    auto a = BuildAutomaton(g, BuildLimits(), deadline);
    return new GrammarAutomaton(std::move(*a));  // a fixed grammar: cannot fail
  }();
  return *rest;
}

// Appends `next` over bytes 0..255 as maximal ranges (kNoState = no edge).
template <typename Next>
std::vector<ByteAutomaton::Edge> ByteRanges(Next&& next) {
  std::vector<ByteAutomaton::Edge> edges;
  for (int b = 0; b < 256; ++b) {
    uint32_t t = next(static_cast<uint8_t>(b));
    if (t == kNoState) continue;
    if (!edges.empty() && edges.back().target == t && edges.back().hi + 1 == b) {
      edges.back().hi = static_cast<uint8_t>(b);
    } else {
      edges.push_back({static_cast<uint8_t>(b), static_cast<uint8_t>(b), t});
    }
  }
  return edges;
}

}  // namespace

ExprId SchemaConverter::KeyNotIn(const std::vector<std::string>& names) {
  // The whole key is one terminal rule (bytes only), so the mask cache walks
  // it with the dense DFA instead of the Earley parser.
  std::string cache_key;
  for (const std::string& n : names) cache_key += Json(n).dump() + ",";
  auto memo = key_rules_.find(cache_key);
  if (memo != key_rules_.end()) return g_->Ref(memo->second);
  auto define = [&](ExprId body) {
    RuleId r = g_->DefineRule("json_key", g_->Sequence({g_->Byte('"'), body}));
    key_rules_.emplace(cache_key, r);
    return g_->Ref(r);
  };
  for (const std::string& n : names) {
    for (unsigned char c : n) {
      // Names needing escapes or non-ASCII: any key (documented gap: a
      // duplicate of such a name is not excluded).
      if (c < 0x20 || c >= 0x7F || c == '"' || c == '\\') {
        return define(g_->Sequence({g_->Star(JsonStringChar(g_)), g_->Byte('"')}));
      }
    }
  }
  // Trie of the names; node 0 = root.
  struct Node {
    std::map<uint8_t, uint32_t> children;
    bool terminal = false;
  };
  std::vector<Node> trie(1);
  for (const std::string& n : names) {
    uint32_t cur = 0;
    for (unsigned char c : n) {
      auto it = trie[cur].children.find(c);
      if (it == trie[cur].children.end()) {
        trie.push_back(Node());
        it = trie[cur].children.emplace(c, static_cast<uint32_t>(trie.size() - 1)).first;
      }
      cur = it->second;
    }
    trie[cur].terminal = true;
  }
  // One DFA, given to the IR as an explicit automaton: the trie's nodes,
  // then one shared copy of the rest (as grammar expressions each node had
  // its own copy, ~60 states apiece, and the rule's DFA stayed too large to
  // minimize). At a node, a child's character goes on in the trie, the
  // closing quote ends the key unless the node ends a name, and any other
  // character leaves the trie as it would start the rest. DEL (0x7F) does
  // not leave the trie (kept from the grammar form, whose first differing
  // character excluded it; it is allowed further on).
  const GrammarAutomaton& rest = KeyRestAutomaton();
  const uint32_t rest_begin = rest.rule_start[rest.root];
  const uint32_t rest_states = rest.rule_end[rest.root] - rest_begin;
  const uint32_t base = static_cast<uint32_t>(trie.size());
  auto rest_next = [&](uint32_t local, uint8_t b) -> uint32_t {
    uint32_t t = rest.DeterministicNext(rest_begin + local, b);
    return t == kNoState ? kNoState : base + (t - rest_begin);
  };
  ByteAutomaton key;
  for (const Node& n : trie) {
    key.edges.push_back(ByteRanges([&](uint8_t b) -> uint32_t {
      if (auto it = n.children.find(b); it != n.children.end()) return it->second;
      if ((b == '"' && n.terminal) || b == 0x7F) return kNoState;
      return rest_next(0, b);
    }));
    key.is_final.push_back(0);
  }
  for (uint32_t s = 0; s < rest_states; ++s) {
    key.edges.push_back(ByteRanges([&](uint8_t b) { return rest_next(s, b); }));
    key.is_final.push_back(rest.is_final[rest_begin + s]);
  }
  return define(g_->Automaton(std::move(key)));
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
  if (max_props && *max_props < std::max(min_props, n_required)) return g_->Nothing();  // see BuildString
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

// contains (minContains 1, no maxContains), items in `rest`, no prefix:
// the first item that matches `contains` splits the array,
//   R(0, c) = no match yet: an item matching items ∧ ¬contains, or the witness
//   R(1, c) = after it: any item of `items`
// with c the items so far (capped at maxItems, or saturating at minItems) so
// the item counts hold too. The ¬contains branch goes through the `not`
// rewrite (relaxed, and named, when it cannot be negated).
StatusOr<ExprId> SchemaConverter::ContainsItems(const Json& s, const Json& rest, const std::string& path,
                                                int depth) {
  DI_ASSIGN_OR_RETURN(int64_t min_items, Count(s, "minItems", 0, kMaxItems, path));
  std::optional<int64_t> max_items;
  if (s.contains("maxItems")) {
    DI_ASSIGN_OR_RETURN(int64_t m, Count(s, "maxItems", 0, INT32_MAX, path));
    max_items = m;
  }
  if ((max_items && *max_items > kMaxCountedProperties) || min_items > kMaxCountedProperties) {
    return NotFound("contains with item counts above " + std::to_string(kMaxCountedProperties));
  }
  const Json& c = s["contains"];
  DI_ASSIGN_OR_RETURN(ExprId other,
                      RefTo(Json{{"allOf", Json::array({rest, Json{{"not", c}}})}}, path + "/items", depth));
  DI_ASSIGN_OR_RETURN(ExprId witness,
                      RefTo(Json{{"allOf", Json::array({rest, c})}}, path + "/contains", depth));
  DI_ASSIGN_OR_RETURN(ExprId any, RefTo(rest, path + "/items", depth));
  ExprId ws = Ws();
  ExprId sep = g_->Sequence({ws, g_->Byte(','), ws});
  int64_t cap = max_items ? *max_items : std::max<int64_t>(min_items, 1);
  std::vector<RuleId> rules(2 * static_cast<size_t>(cap + 1));
  auto index = [&](int phase, int64_t count) { return static_cast<size_t>(phase * (cap + 1) + count); };
  for (RuleId& r : rules) r = g_->AddRule(path + "#contains");
  // Bodies after every rule exists (a saturated count refers to itself).
  for (int64_t count = 0; count <= cap; ++count) {
    for (int phase : {0, 1}) {
      std::vector<ExprId> alts;
      if (phase == 1 && count >= min_items) alts.push_back(g_->Empty());
      int64_t next = count + 1;
      if (!max_items || next <= *max_items) {
        if (!max_items) next = std::min(next, cap);
        ExprId lead = count > 0 ? sep : g_->Empty();
        if (phase == 0) {
          alts.push_back(g_->Sequence({lead, other, g_->Ref(rules[index(0, next)])}));
          alts.push_back(g_->Sequence({lead, witness, g_->Ref(rules[index(1, next)])}));
        } else {
          alts.push_back(g_->Sequence({lead, any, g_->Ref(rules[index(1, next)])}));
        }
      }
      g_->SetBody(rules[index(phase, count)], g_->Choice(std::move(alts)));
    }
  }
  return g_->Sequence({g_->Byte('['), ws, g_->Ref(rules[index(0, 0)]), ws, g_->Byte(']')});
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
  bool contains = s.contains("contains") && s.value("minContains", Json(1)) != Json(0);
  if (contains) {
    if (!prefix.empty() || s.contains("maxContains") || s.value("minContains", Json(1)) != Json(1) ||
        s.value("uniqueItems", Json(false)) == Json(true)) {
      Unsupported(path, "contains with prefixItems, uniqueItems or min/maxContains other than 1");
    } else {
      auto built = ContainsItems(s, rest, path, depth);
      if (built.ok() || built.status().code() != StatusCode::kNotFound) return built;
      Unsupported(path, built.status().message());
    }
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

}  // namespace deepinfer::grammar::json_schema_internal
