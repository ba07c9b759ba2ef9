// JSON Schema front end: the valid/invalid instance suite in
// testdata/json_schema_cases.json (labels checked against python3-jsonschema
// by testdata/check_cases.py), errors, whitespace options, masks.
#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

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
  std::ifstream in(std::string(DI_SOURCE_DIR) + "/src/grammar/testdata/json_schema_cases.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return Json::parse(ss.str());
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
      R"({"type":"object","properties":{"a":{"not":{"type":"string"}},
          "b":{"type":"array","uniqueItems":true}},"minProperties":2})");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kUnimplemented);
  const std::string& m = g.status().message();
  EXPECT_NE(m.find("'not' at #/properties/a"), std::string::npos) << m;
  EXPECT_NE(m.find("'uniqueItems' at #/properties/b"), std::string::npos) << m;
  EXPECT_NE(m.find("'minProperties' at #"), std::string::npos) << m;
  for (const char* s :
       {R"({"type":"number","maximum":5.5})", R"({"minProperties":2})", R"({"if":{},"then":{}})",
        R"({"type":"string","pattern":"a","maxLength":3})", R"({"type":"integer","multipleOf":3})",
        R"({"$ref":"http://x/y.json"})", R"x({"type":"string","pattern":"(?=a)"})x"}) {
    auto r = JsonSchemaToGrammar(s);
    EXPECT_FALSE(r.ok()) << s;
    EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented) << s << r.status().ToString();
  }
}

TEST(JsonSchemaTest, LenientModeIgnoresUnsupported) {
  JsonSchemaOptions opts;
  opts.lenient = true;
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

TEST(JsonSchemaTest, MasksMatchBruteForce) {
  auto vocab = AllStringsVocab("{}[]\":,a1-", 2);
  for (
      const char* s :
      {R"({"type":"object","properties":{"a":{"type":"integer"},"aa":{"type":"string"}},"additionalProperties":false})",
       R"({"type":"array","items":{"type":"integer","minimum":-1,"maximum":11},"maxItems":3})",
       R"({"type":"object","properties":{"a":{"type":"array","items":{"$ref":"#"}}}})",
       R"({"enum":["a","aa",1,[1]]})",
       R"({"type":"object","properties":{"a":{"type":"integer"}},"patternProperties":{"^a":{"maximum":9},"1$":{"type":"string"}},"additionalProperties":{"type":"integer","minimum":-1}})",
       R"({"type":"object","propertyNames":{"pattern":"^a1?$"},"additionalProperties":{"type":"number","exclusiveMinimum":-1,"maximum":1}})"}) {
    auto cg = CompileSchema(s, {}, vocab);
    ASSERT_NE(cg, nullptr);
    for (uint32_t seed = 0; seed < 6; ++seed) RandomWalkChecked(cg, seed, 12);
  }
}

}  // namespace
}  // namespace deepinfer::grammar
