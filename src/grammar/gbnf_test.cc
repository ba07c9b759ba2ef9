// GBNF front end: accepted/rejected strings, errors, masks.
#include "grammar/gbnf.h"

#include <gtest/gtest.h>

#include "grammar/testing/test_util.h"

namespace deepinfer::grammar {
namespace {

using testing::AllStringsVocab;
using testing::CompileOrDie;
using testing::Matches;
using testing::RandomWalkChecked;

std::shared_ptr<const CompiledGrammar> CompileGbnf(
    const std::string& text, std::shared_ptr<const Vocabulary> vocab = AllStringsVocab("a", 1)) {
  StatusOr<Grammar> g = GbnfToGrammar(text);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  if (!g.ok()) return nullptr;
  return CompileOrDie(*g, std::move(vocab));
}

// A JSON grammar in the style of llama.cpp's grammars/json.gbnf.
const char* kJsonGbnf = R"(
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)";

TEST(GbnfTest, JsonGrammar) {
  auto cg = CompileGbnf(kJsonGbnf);
  ASSERT_NE(cg, nullptr);
  for (const char* ok : {"{}", "{\"a\":1}", "{\"a\": [1, 2.5, -3e5, \"x\\n\"], \"b\": {\"c\": null}}",
                         "{ \"k\": true }", "{\"u\":\"\\u00e9\xC3\xA9\"}", "{\"a\":[]}\n  "}) {
    EXPECT_TRUE(Matches(cg, ok)) << ok;
  }
  for (const char* bad : {"", "[]", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{'a':1}", "{\"a\":01x}",
                          "{\"a\":\"\x01\"}", "{\"a\":tru}"}) {
    EXPECT_FALSE(Matches(cg, bad)) << bad;
  }
}

struct Case {
  std::string grammar;
  std::vector<std::string> accept;
  std::vector<std::string> reject;
};

TEST(GbnfTest, Table) {
  const std::vector<Case> cases = {
      {"root ::= \"a\" | \"bc\"", {"a", "bc"}, {"", "b", "abc"}},
      {"root ::= [a-c]+ \"!\"?", {"a", "abc!", "cc"}, {"!", "d", "a!!"}},
      {"root ::= [^a-c]", {"d", "\xE2\x82\xAC"}, {"a", "b"}},
      {"root ::= x{2,3}\nx ::= \"ab\"", {"abab", "ababab"}, {"ab", "abababab"}},
      {"root ::= \"a\"{3}", {"aaa"}, {"aa", "aaaa"}},
      {"root ::= \"a\"{2,}", {"aa", "aaaaa"}, {"a"}},
      {"root ::= \"a\"{,2}", {"", "a", "aa"}, {"aaa"}},
      {"root ::= .+", {"x", "\xE4\xB8\xAD\xE6\x96\x87"}, {""}},
      {"root ::= \"\\x41\\u00e9\\U0001F600\\n\\t\\\\\\\"\"", {"A\xC3\xA9\xF0\x9F\x98\x80\n\t\\\""}, {"A"}},
      {"root ::= [\\]\\[\\-]+", {"][-"}, {"a"}},
      {"root ::= expr\nexpr ::= term ((\"+\" | \"-\") term)*\nterm ::= factor ((\"*\" | \"/\") factor)*\n"
       "factor ::= [0-9]+ | \"(\" expr \")\"",
       {"1", "1+2*3", "(1+2)*3", "((4))", "1-(2/3)"},
       {"", "1+", "(1", "1)", "+1", "1**2"}},
      {"root ::= list\nlist ::= item | item \",\" list\nitem ::= [a-z]+",
       {"a", "a,b", "abc,d,ef"},
       {"", "a,", ",a"}},
      {"root ::= s\ns ::= \"(\" s \")\" s |", {"", "()", "(()())"}, {"(", "())"}},
      {"root ::= a\n  | b  # alternative on a continuation line\na ::= \"x\"\nb ::= \"y\"",
       {"x", "y"},
       {"xy"}},
      {"root ::= (\"a\"\n   \"b\")", {"ab"}, {"a"}},
      {"root ::= left\nleft ::= left \"a\" | \"b\"", {"b", "ba", "baaa"}, {"a", "ab"}},
      {"root ::= [\\x00-\\x1F]", {std::string(1, '\0'), "\x1F"}, {" "}},
      {"root ::= \"\"", {""}, {"a"}},
      {"# leading comment\n\nroot ::= \"a\" # trailing\n\n# end", {"a"}, {"b"}},
      {"root ::= x-y_1\nx-y_1 ::= \"z\"", {"z"}, {""}},
  };
  int checked = 0;
  for (const Case& c : cases) {
    auto cg = CompileGbnf(c.grammar);
    ASSERT_NE(cg, nullptr) << c.grammar;
    for (const std::string& s : c.accept) {
      EXPECT_TRUE(Matches(cg, s)) << c.grammar << "\nshould accept '" << s << "'";
      ++checked;
    }
    for (const std::string& s : c.reject) {
      EXPECT_FALSE(Matches(cg, s)) << c.grammar << "\nshould reject '" << s << "'";
      ++checked;
    }
  }
  EXPECT_GT(checked, 70);
}

TEST(GbnfTest, Errors) {
  for (const char* bad :
       {"", "root", "root ::= undefined", "a ::= \"x\"", "root ::= \"x", "root ::= [a-", "root ::= (\"a\"",
        "root ::= \"a\")", "root ::= *", "root ::= \"a\" root2 ::= \"b\"", "root ::= \"a\"\nroot ::= \"b\"",
        "root ::= \"a\"{3,1}", "root ::= \"a\"{1000000}", "root ::= @", "root ::= [z-a]"}) {
    auto g = GbnfToGrammar(bad);
    EXPECT_FALSE(g.ok()) << bad;
  }
  auto g = GbnfToGrammar("root ::= \"a\"\nfoo ::= bar");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("undefined rule 'bar'"), std::string::npos);
  auto g2 = GbnfToGrammar("root ::= \"a\"\n\nx ::= ) ");
  ASSERT_FALSE(g2.ok());
  EXPECT_NE(g2.status().message().find("line 3"), std::string::npos) << g2.status().message();
}

TEST(GbnfTest, DeepNestingIsBounded) {
  std::string deep = "root ::= " + std::string(800, '(') + "\"a\"" + std::string(800, ')');
  auto cg = CompileGbnf(deep);
  ASSERT_NE(cg, nullptr);
  EXPECT_TRUE(Matches(cg, "a"));
  std::string deeper = "root ::= " + std::string(5000, '(') + "\"a\"" + std::string(5000, ')');
  EXPECT_FALSE(GbnfToGrammar(deeper).ok());
}

TEST(GbnfTest, MasksMatchBruteForce) {
  auto vocab = AllStringsVocab("{}\":1, a", 2);
  auto cg = CompileGbnf(kJsonGbnf, vocab);
  ASSERT_NE(cg, nullptr);
  for (uint32_t seed = 0; seed < 10; ++seed) RandomWalkChecked(cg, seed, 15);
  auto arith =
      CompileGbnf("root ::= e\ne ::= e \"+\" t | t\nt ::= \"(\" e \")\" | [0-9]", AllStringsVocab("(+)1", 3));
  for (uint32_t seed = 0; seed < 10; ++seed) RandomWalkChecked(arith, seed, 15);
}

}  // namespace
}  // namespace deepinfer::grammar
