// Lark-like front end: accepted/rejected strings and errors.
#include "grammar/lark.h"

#include <gtest/gtest.h>

#include "grammar/testing/test_util.h"

namespace deepinfer::grammar {
namespace {

using testing::AllStringsVocab;
using testing::CompileOrDie;
using testing::Matches;
using testing::RandomWalkChecked;

struct Case {
  std::string grammar;
  std::vector<std::string> accept;
  std::vector<std::string> reject;
};

TEST(LarkTest, Table) {
  const std::vector<Case> cases = {
      {"start: \"a\" | \"bc\"", {"a", "bc"}, {"", "abc"}},
      {"start: pair (\",\" pair)*\npair: KEY \"=\" value\n?value: NUMBER | ESCAPED_STRING\n"
       "KEY: /[a-z_]+/\n%import common.NUMBER\n%import common.ESCAPED_STRING",
       {"a=1", "a=1,b_c=\"x\\\"y\"", "k=1.5e3"},
       {"a=", "A=1", "a=1,", "a=\"x"}},
      {"start: list\nlist: \"[\" [item (\",\" item)*] \"]\"\nitem: INT | list\n%import common (INT, WS)",
       {"[]", "[1]", "[1,[2,[]],3]"},
       {"[", "[1,]", "[,]"}},
      {"start: \"a\"..\"c\"+", {"a", "abcabc"}, {"d", ""}},
      {"start: x~3\nx: \"ab\"", {"ababab"}, {"abab"}},
      {"start: x~1..2\nx: \"ab\"", {"ab", "abab"}, {"", "ababab"}},
      {"// comment\nstart: a\n    | b  // continuation line\na: \"x\" -> alias_a\nb: \"y\"",
       {"x", "y"},
       {"xy"}},
      {"?start: e\n!e: e \"+\" t | t\nt.2: /[0-9]+/", {"1", "1+22+3"}, {"+", "1+"}},
      {"start: WORD \" \" CNAME\n%import common.WORD\n%import common.CNAME", {"hello _x1"}, {"hello 1x"}},
      {"start: SIGNED_NUMBER\n%import common.SIGNED_NUMBER", {"-1", "+2.5", "3e4", ".5"}, {"-", "e4"}},
  };
  int checked = 0;
  for (const Case& c : cases) {
    StatusOr<Grammar> g = LarkToGrammar(c.grammar);
    ASSERT_TRUE(g.ok()) << c.grammar << "\n" << g.status().ToString();
    auto cg = CompileOrDie(*g, AllStringsVocab("a", 1));
    ASSERT_NE(cg, nullptr);
    for (const std::string& s : c.accept) {
      EXPECT_TRUE(Matches(cg, s)) << c.grammar << "\nshould accept '" << s << "'";
      ++checked;
    }
    for (const std::string& s : c.reject) {
      EXPECT_FALSE(Matches(cg, s)) << c.grammar << "\nshould reject '" << s << "'";
      ++checked;
    }
  }
  EXPECT_GT(checked, 40);
}

TEST(LarkTest, Errors) {
  for (const char* bad :
       {"", "x: \"a\"", "start: y", "start \"a\"", "start: (\"a\"", "start: \"a\"]", "start: \"a\"i",
        "start: /a/i", "start: \"a\"\n%ignore WS", "start: A\n%import other.A",
        "start: X\n%import common.NOPE", "start: \"a\"~3..1"}) {
    EXPECT_FALSE(LarkToGrammar(bad).ok()) << bad;
  }
  auto r = LarkToGrammar("start: \"a\"\n%ignore \" \"");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
}

TEST(LarkTest, MasksMatchBruteForce) {
  auto g = LarkToGrammar("start: \"[\" [v (\",\" v)*] \"]\"\nv: INT | start\n%import common.INT");
  ASSERT_TRUE(g.ok());
  auto cg = CompileOrDie(*g, AllStringsVocab("[],1", 2));
  for (uint32_t seed = 0; seed < 10; ++seed) RandomWalkChecked(cg, seed, 15);
}

}  // namespace
}  // namespace deepinfer::grammar
