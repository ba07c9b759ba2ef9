// Finish-soon (completion.h): the shortest completion ends the parse, and no
// shorter one exists (checked by enumerating every string over the
// grammar's alphabet), across recursion, left recursion and JSON schemas.
#include "grammar/completion.h"

#include <gtest/gtest.h>

#include <random>

#include "grammar/compiler.h"
#include "grammar/gbnf.h"
#include "grammar/regex.h"
#include "grammar/testing/test_util.h"

namespace deepinfer::grammar {
namespace {

using testing::AllStringsVocab;
using testing::CompileOrDie;

// Length of the shortest string over `alphabet` that completes `prefix`
// (brute force, breadth first), or -1 if none up to max_len.
int BruteForceShortest(const std::shared_ptr<const CompiledGrammar>& g, const std::string& prefix,
                       const std::string& alphabet, int max_len) {
  std::vector<std::string> level = {""};
  for (int len = 0; len <= max_len; ++len) {
    std::vector<std::string> next;
    for (const std::string& s : level) {
      GrammarMatcher m(g);
      if (!m.AcceptBytes(prefix + s)) continue;
      if (m.IsAccepting()) return len;
      for (char c : alphabet) next.push_back(s + c);
    }
    level = std::move(next);
  }
  return -1;
}

TEST(CompletionTest, ShortestAgainstBruteForce) {
  struct Case {
    const char* gbnf;
    std::string alphabet;
  };
  const Case cases[] = {
      {R"g(root ::= "a" "b" ("c" | "de") "f")g", "abcdef"},
      {R"g(root ::= "(" root ")" | "x")g", "()x"},
      {R"g(root ::= root "+" num | num
num ::= [0-9] | "1" [0-9] [0-9])g",
       "+109"},
      {R"g(root ::= item ("," item)* "."
item ::= "[" item? "]" | "ab" "c"?)g",
       "[],.abc"},
  };
  std::mt19937 rng(7);
  for (const Case& c : cases) {
    auto g = GbnfToGrammar(c.gbnf);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    auto cg = CompileOrDie(*g, AllStringsVocab(c.alphabet, 1));
    // Random valid prefixes: walks under the mask.
    for (int walk = 0; walk < 12; ++walk) {
      GrammarMatcher m(cg);
      std::string prefix;
      int steps = static_cast<int>(rng() % 7);
      for (int i = 0; i < steps; ++i) {
        std::vector<char> ok;
        for (char ch : c.alphabet) {
          if (m.AcceptBytes(std::string(1, ch))) {
            ok.push_back(ch);
            m.Rollback(1);
          }
        }
        if (ok.empty()) break;
        char ch = ok[rng() % ok.size()];
        ASSERT_TRUE(m.AcceptBytes(std::string(1, ch)));
        prefix += ch;
      }
      std::string done = m.ShortestCompletion();
      EXPECT_EQ(m.num_tokens(), prefix.size()) << "state changed";
      GrammarMatcher check(cg);
      ASSERT_TRUE(check.AcceptBytes(prefix + done)) << c.gbnf << " '" << prefix << "' + '" << done << "'";
      EXPECT_TRUE(check.IsAccepting()) << c.gbnf << " '" << prefix << "' + '" << done << "'";
      int shortest = BruteForceShortest(cg, prefix, c.alphabet, 6);
      if (shortest >= 0) {
        EXPECT_EQ(static_cast<int>(done.size()), shortest) << c.gbnf << " '" << prefix << "'";
      }
    }
  }
}

TEST(CompletionTest, JsonSchemaFinish) {
  GrammarCompiler compiler(AllStringsVocab("{}\":,ab0", 1));
  auto cg = compiler.CompileJsonSchema(
      R"({"type":"object","properties":{"a":{"type":"integer"},"bb":{"type":"string","minLength":2}},"required":["a","bb"]})");
  ASSERT_TRUE(cg.ok());
  GrammarMatcher m(*cg);
  // From the start: every required property with its shortest value (the
  // smallest byte where several are equally short: ' ' in strings).
  EXPECT_EQ(m.ShortestCompletion(), R"({"a":0,"bb":"  "})");
  ASSERT_TRUE(m.AcceptBytes(R"({"a":-12,"bb":"x)"));
  EXPECT_EQ(m.ShortestCompletion(), R"( "})");
  ASSERT_TRUE(m.AcceptBytes(R"(yz")"));
  EXPECT_EQ(m.ShortestCompletion(), "}");
  EXPECT_EQ(m.ShortestCompletion(0), "");  // byte cap
  ASSERT_TRUE(m.AcceptBytes("}"));
  EXPECT_EQ(m.ShortestCompletion(), "");  // may end now
}

TEST(CompletionTest, DistancesOfAFixedGrammar) {
  auto g = RegexToGrammar("ab(cd|e)*f");
  ASSERT_TRUE(g.ok());
  auto cg = CompileOrDie(*g, AllStringsVocab("a", 1));
  const GrammarAutomaton& a = cg->automaton();
  // The start state needs "abf": 3 bytes.
  EXPECT_EQ(cg->completion_distances()[a.rule_start[a.root]], 3u);
}

}  // namespace
}  // namespace deepinfer::grammar
