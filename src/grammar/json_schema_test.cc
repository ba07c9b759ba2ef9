// JSON Schema front end: the valid/invalid instance suite in
// testdata/json_schema_cases.json (labels checked against python3-jsonschema
// by testdata/check_cases.py), errors, whitespace options, masks.
#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "core/sanitizers.h"
#include "grammar/testing/test_util.h"

namespace deepinfer::grammar {
namespace {

using Json = nlohmann::ordered_json;
using testing::AllStringsVocab;
using testing::CompileOrDie;
using testing::Matches;
using testing::RandomWalkChecked;

std::shared_ptr<const CompiledGrammar> CompileSchema(
    const std::string& schema, const JsonSchemaOptions& options = {},
    std::shared_ptr<const Vocabulary> vocab = AllStringsVocab("a", 1)) {
  StatusOr<Grammar> g = JsonSchemaToGrammar(schema, options);
  EXPECT_TRUE(g.ok()) << schema << ": " << g.status().ToString();
  if (!g.ok()) return nullptr;
  return CompileOrDie(*g, std::move(vocab));
}

Json LoadCases() {
  Json all = Json::array();
  for (const char* file : {"json_schema_cases.json", "json_schema_draft4_cases.json"}) {
    std::ifstream in(std::string(DI_SOURCE_DIR) + "/src/grammar/testdata/" + file);
    std::stringstream ss;
    ss << in.rdbuf();
    for (Json& c : Json::parse(ss.str())) all.push_back(std::move(c));
  }
  return all;
}

TEST(JsonSchemaTest, InstanceSuite) {
  Json cases = LoadCases();
  ASSERT_GT(cases.size(), 50u);
  int checked = 0;
  for (const Json& c : cases) {
    std::string name = c["name"].get<std::string>();
    auto cg = CompileSchema(c["schema"].dump());
    ASSERT_NE(cg, nullptr) << name;
    for (const Json& v : c.value("valid", Json::array())) {
      EXPECT_TRUE(Matches(cg, v.dump())) << name << ": should accept " << v.dump();
      ++checked;
    }
    for (const Json& v : c.value("valid_text", Json::array())) {
      EXPECT_TRUE(Matches(cg, v.get<std::string>())) << name << ": should accept " << v;
      ++checked;
    }
    for (const char* key : {"invalid", "invalid_format"}) {
      for (const Json& v : c.value(key, Json::array())) {
        EXPECT_FALSE(Matches(cg, v.dump())) << name << ": should reject " << v.dump();
        ++checked;
      }
    }
    for (const Json& v : c.value("invalid_text", Json::array())) {
      EXPECT_FALSE(Matches(cg, v.get<std::string>())) << name << ": should reject " << v;
      ++checked;
    }
  }
  EXPECT_GT(checked, 300);
}

TEST(JsonSchemaTest, UnsupportedKeywordsAreListed) {
  auto g = JsonSchemaToGrammar(
      R"({"type":"object","properties":{"a":{"not":{"items":{"type":"string"}}},
          "b":{"type":"array","items":{"type":"integer"},"uniqueItems":true}},"x-vendor":1,
          "unevaluatedProperties":false})");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kUnimplemented);
  const std::string& m = g.status().message();
  EXPECT_NE(m.find("not (of 'items') at #/properties/a/not"), std::string::npos) << m;
  EXPECT_NE(m.find("uniqueItems (items is not a finite set) at #/properties/b"), std::string::npos) << m;
  EXPECT_NE(m.find("unevaluatedProperties at #"), std::string::npos) << m;
  EXPECT_EQ(m.find("x-vendor"), std::string::npos) << m;  // annotations never fail
  for (const char* s : {R"({"type":"number","multipleOf":0.1})", R"({"if":{"multipleOf":2},"then":{}})",
                        R"({"type":"string","pattern":"a","maxLength":20000})",
                        R"({"$ref":"http://x/y.json"})", R"x({"type":"string","pattern":"(?=a)"})x",
                        R"({"type":"array","contains":{"const":1},"maxContains":2})"}) {
    auto r = JsonSchemaToGrammar(s);
    EXPECT_FALSE(r.ok()) << s;
    EXPECT_TRUE(r.status().code() == StatusCode::kUnimplemented ||
                r.status().code() == StatusCode::kResourceExhausted)
        << s << r.status().ToString();
  }
}

TEST(JsonSchemaTest, NotStrictReportsRelaxedAssertions) {
  JsonSchemaOptions opts;
  opts.strict = false;
  auto g = CompileJsonSchemaGrammar(
      R"({"type":"object","properties":{"ids":{"type":"array","items":{"type":"integer"},"uniqueItems":true},
          "x":{"type":"number","multipleOf":0.01}}})",
      opts);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_EQ(g->relaxed.size(), 2u);
  EXPECT_EQ(g->relaxed[0].pointer, "#/properties/ids");
  EXPECT_NE(g->relaxed[0].keyword.find("uniqueItems"), std::string::npos);
  EXPECT_EQ(g->relaxed[1].pointer, "#/properties/x");
  EXPECT_NE(g->relaxed[1].keyword.find("multipleOf"), std::string::npos);
  // Strict (the default) refuses the same schema, naming both.
  auto strict = CompileJsonSchemaGrammar(
      R"({"type":"object","properties":{"ids":{"type":"array","items":{"type":"integer"},"uniqueItems":true}}})");
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.status().message().find("#/properties/ids"), std::string::npos);
  // Exactly enforceable schemas report nothing relaxed.
  auto exact = CompileJsonSchemaGrammar(
      R"({"type":"object","minProperties":1,"x-kubernetes-map-type":"atomic"})", opts);
  ASSERT_TRUE(exact.ok());
  EXPECT_TRUE(exact->relaxed.empty());
}

TEST(JsonSchemaTest, InvalidSchemasNameThePointer) {
  struct Case {
    const char* schema;
    const char* pointer;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"type":"object","properties":{"a":{"type":"string","minLength":5,"maxLength":2}}})",
            "#/properties/a"},
           {R"({"properties":{"a":{"$ref":"#/$defs/missing"}}})", "#/properties/a"},
           {R"({"items":{"$ref":"#nowhere"}})", "#/items"},
           {R"({"properties":{"a":{"type":"strin"}}})", "#/properties/a/type"},
           {R"({"properties":{"a":{"minimum":"3"}}})", "#/properties/a/minimum"},
           {R"({"properties":{"a":{"multipleOf":0}}})", "#/properties/a/multipleOf"},
           {R"({"type":"object","required":["a","b"],"maxProperties":1})", "#"},
           {R"({"properties":{"a/b":{"type":"array","minItems":-1}}})", "#/properties/a~1b/minItems"}}) {
    auto r = JsonSchemaToGrammar(c.schema);
    ASSERT_FALSE(r.ok()) << c.schema;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.schema << r.status().ToString();
    EXPECT_NE(r.status().message().find(c.pointer), std::string::npos)
        << c.schema << ": " << r.status().message();
  }
  for (const char* s : {"42", R"("a")", "[]", "null"}) {
    auto r = JsonSchemaToGrammar(s);
    ASSERT_FALSE(r.ok()) << s;
    EXPECT_NE(r.status().message().find("at #"), std::string::npos) << r.status().message();
  }
  // Satisfiable-looking but empty: an allOf of disjoint types matches
  // nothing, which the automaton build reports instead of an empty mask.
  auto empty = JsonSchemaToGrammar(R"({"allOf":[{"type":"string"},{"type":"integer"}]})");
  ASSERT_TRUE(empty.ok());
  Deadline d(5);
  auto a = BuildAutomaton(*empty, BuildLimits{}, d);
  EXPECT_FALSE(a.ok());
}

TEST(JsonSchemaTest, LenientModeIgnoresUnsupported) {
  JsonSchemaOptions opts;
  opts.strict = false;
  auto cg = CompileSchema(R"({"type":"array","items":{"type":"integer"},"uniqueItems":true})", opts);
  ASSERT_NE(cg, nullptr);
  EXPECT_TRUE(Matches(cg, "[1,1]"));  // uniqueness is not enforced in lenient mode
}

TEST(JsonSchemaTest, MalformedSchemas) {
  for (const char* s : {"{", "[1", R"({"type":"strin"})", R"({"$ref":"#/$defs/missing"})",
                        R"({"type":"object","required":"a"})", R"({"type":"string","minLength":-1})",
                        R"({"type":"array","items":{"type":"string"},"minItems":1e9})", "42"}) {
    auto r = JsonSchemaToGrammar(s);
    EXPECT_FALSE(r.ok()) << s;
  }
}

TEST(JsonSchemaTest, AnyWhitespaceIsBounded) {
  JsonSchemaOptions opts;
  opts.any_whitespace = true;
  opts.max_whitespace = 8;
  auto cg = CompileSchema(
      R"({"type":"object","properties":{"a":{"type":"array","items":{"type":"integer"}}},"required":["a"]})",
      opts);
  ASSERT_NE(cg, nullptr);
  EXPECT_TRUE(Matches(cg, "{\"a\":[1,2]}"));
  EXPECT_TRUE(Matches(cg, "{ \"a\" : [ 1 , 2 ] }"));
  EXPECT_TRUE(Matches(cg, "{\n  \"a\": [\n    1,\n    2\n  ]\n}"));
  EXPECT_FALSE(Matches(cg, "{         \"a\":[1]}"));  // 9 > max_whitespace
  auto compact = CompileSchema(R"({"type":"object","properties":{"a":{"type":"integer"}}})");
  EXPECT_FALSE(Matches(compact, "{ \"a\":1}"));
  EXPECT_TRUE(Matches(compact, "{\"a\":1}"));
}

TEST(JsonSchemaTest, RecursionAndDepthLimits) {
  // A $ref cycle with no base case matches nothing: an error, not a hang.
  auto cyc = JsonSchemaToGrammar(
      R"({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})");
  if (cyc.ok()) {
    Deadline d(5);
    EXPECT_FALSE(BuildAutomaton(*cyc, BuildLimits{}, d).ok());
  }
  std::string deep;
  for (int i = 0; i < 500; ++i) deep += R"({"type":"array","items":)";
  deep += "true";
  for (int i = 0; i < 500; ++i) deep += "}";
  auto r = JsonSchemaToGrammar(deep);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
}

// Formats python3-jsonschema only checks with optional packages (not
// installed here): hand-labelled from the grammars in RFC 3339 appendix A
// (duration), RFC 1123 (hostname) and RFC 3986 (uri, uri-reference).
TEST(JsonSchemaTest, FormatsWithoutAPythonChecker) {
  struct Case {
    const char* format;
    std::vector<std::string> valid, invalid;
  };
  for (const Case& c :
       std::vector<Case>{{"duration",
                          {"P1D", "PT1H", "P1W", "P1Y2M", "P1Y2M3DT4H5M6S", "PT36H", "P0D"},
                          {"P", "PT", "P1H", "1D", "P1D2Y", "PT1.5S", "P1WT1H", ""}},
                         {"hostname",
                          {"localhost", "a.example", "xn--bcher-kva.test", "a-b.c", "1.2.3"},
                          {"-a.com", "a..b", "a_b", "a-.b", "", ".a", std::string(64, 'a')}},
                         {"uri",
                          {"https://example.test/a?b=c#d", "urn:isbn:123", "mailto:a@b.test", "x:%20"},
                          {"example.test", "/relative", "http://a b", "x:%zz", ""}},
                         {"uri-reference",
                          {"/relative/path", "../up", "", "https://a.test", "?q=1"},
                          {"a b", "%g0", "<x>"}}}) {
    auto cg = CompileSchema(Json{{"type", "string"}, {"format", c.format}}.dump());
    ASSERT_NE(cg, nullptr) << c.format;
    for (const std::string& v : c.valid) EXPECT_TRUE(Matches(cg, Json(v).dump())) << c.format << ": " << v;
    for (const std::string& v : c.invalid) EXPECT_FALSE(Matches(cg, Json(v).dump())) << c.format << ": " << v;
  }
}

// Bad input never crashes: every schema of the suites with one value
// replaced by an odd one (wrong types, huge or negative numbers, empty
// containers), compiled strict and not strict, must give a status.
TEST(JsonSchemaTest, MutatedSchemasNeverCrash) {
  Json schemas = Json::array();
  for (const Json& c : LoadCases()) schemas.push_back(c["schema"]);
  std::ifstream in(std::string(DI_SOURCE_DIR) + "/src/grammar/testdata/heldout_schemas.json");
  std::stringstream ss;
  ss << in.rdbuf();
  for (const Json& c : Json::parse(ss.str())) schemas.push_back(c["schema"]);
  const std::vector<Json> odd = {Json(-1),    Json(0),       Json(1e300),          Json(2.5),
                                 Json("x"),   Json::array(), Json::object(),       Json(true),
                                 Json(false), Json(nullptr), Json::array({1, "a"})};
  // Under the sanitizers (the CI suite) 3 mutations per schema, not 8: this
  // loop was a third of the ASan suite's time there, and fuzz_grammar
  // mutates schemas at length under the same checkers.
  const int mutations = kUnderSanitizer ? 3 : 8;
  std::mt19937 rng(5);
  int compiled = 0, refused = 0;
  for (const Json& schema : schemas) {
    for (int n = 0; n < mutations; ++n) {
      // A random value node of the schema, reached by a random walk.
      Json mutated = schema;
      Json* node = &mutated;
      for (int d = 0; d < 6 && node->is_structured() && !node->empty(); ++d) {
        auto it = node->begin();
        std::advance(it, static_cast<long>(rng() % node->size()));
        node = &*it;
      }
      *node = odd[rng() % odd.size()];
      for (bool strict : {true, false}) {
        JsonSchemaOptions opts;
        opts.strict = strict;
        auto g = JsonSchemaToGrammar(mutated.dump(), opts);
        if (!g.ok()) {
          ++refused;
          continue;
        }
        Deadline d(5);
        compiled += BuildAutomaton(*g, BuildLimits{}, d).ok();
      }
    }
  }
  EXPECT_GT(compiled, 500 * mutations / 8);
  EXPECT_GT(refused, 50 * mutations / 8);
}

TEST(JsonSchemaTest, MasksMatchBruteForce) {
  // Digits 0-3: enough for every number below to continue from any prefix.
  auto vocab = AllStringsVocab("{}[]\":,a-.0123", 2);
  for (
      const char* s :
      {R"({"type":"object","properties":{"a":{"type":"integer"},"aa":{"type":"string"}},"additionalProperties":false})",
       R"({"type":"array","items":{"type":"integer","minimum":-1,"maximum":11},"maxItems":3})",
       R"({"type":"object","properties":{"a":{"type":"array","items":{"$ref":"#"}}}})",
       R"({"enum":["a","aa",1,[1]]})",
       R"({"type":"object","properties":{"a":{"type":"integer"}},"patternProperties":{"^a":{"maximum":9},"1$":{"type":"string"}},"additionalProperties":{"type":"integer","minimum":-1}})",
       R"({"type":"object","propertyNames":{"pattern":"^a1?$"},"additionalProperties":{"type":"number","exclusiveMinimum":-1,"maximum":1}})",
       // Product automata (byte_machine.h) and the rewritten applicators.
       R"({"type":"object","additionalProperties":{"type":"integer","multipleOf":3,"maximum":20},"minProperties":1,"maxProperties":2})",
       R"({"type":"array","items":{"type":"number","exclusiveMinimum":-1.5,"maximum":11.25},"maxItems":3})",
       R"({"type":"array","items":{"type":"string","pattern":"^a+1?$","maxLength":3,"not":{"enum":["a1"]}}})",
       R"({"type":"array","items":{"enum":["a",1,"-"]},"uniqueItems":true})",
       R"({"type":"array","items":{"enum":["a",1,"-"]},"contains":{"const":1},"maxItems":3})",
       R"({"type":"object","properties":{"a":{"type":"integer"},"aa":{"type":"string"}},"dependentRequired":{"a":["aa"]},"oneOf":[{"required":["a"]},{"required":["aa"]}]})"}) {
    auto cg = CompileSchema(s, {}, vocab);
    ASSERT_NE(cg, nullptr);
    for (uint32_t seed = 0; seed < 6; ++seed) RandomWalkChecked(cg, seed, 12);
  }
}

}  // namespace
}  // namespace deepinfer::grammar
