// Matcher over hand-built IR: acceptance, brute-force masks, rollback.
#include "grammar/matcher.h"

#include <gtest/gtest.h>

#include "grammar/testing/test_util.h"

namespace deepinfer::grammar {
namespace {

using testing::AllStringsVocab;
using testing::CompileOrDie;
using testing::MaskMatchesProbe;
using testing::Matches;
using testing::RandomWalkChecked;

// S ::= "(" S ")" S | ""   (balanced parentheses, right-nested recursion)
Grammar Balanced() {
  Grammar g;
  RuleId s = g.AddRule("S");
  g.SetBody(s, g.Choice({g.Sequence({g.Literal("("), g.Ref(s), g.Literal(")"), g.Ref(s)}), g.Empty()}));
  g.set_root(s);
  return g;
}

// E ::= E "+" T | T ;  T ::= [0-9]+   (left recursion)
Grammar LeftRecursive() {
  Grammar g;
  RuleId e = g.AddRule("E");
  RuleId t = g.DefineRule("T", g.Plus(g.Bytes({{'0', '9'}})));
  g.SetBody(e, g.Choice({g.Sequence({g.Ref(e), g.Literal("+"), g.Ref(t)}), g.Ref(t)}));
  g.set_root(e);
  return g;
}

// A ::= B B "x" ; B ::= C? ; C ::= "y"*  (chains of nullable rules)
Grammar NullableChain() {
  Grammar g;
  RuleId c = g.DefineRule("C", g.Star(g.Literal("y")));
  RuleId b = g.DefineRule("B", g.Optional(g.Ref(c)));
  RuleId a = g.DefineRule("A", g.Sequence({g.Ref(b), g.Ref(b), g.Literal("x")}));
  g.set_root(a);
  return g;
}

TEST(MatcherTest, BalancedParentheses) {
  auto cg = CompileOrDie(Balanced(), AllStringsVocab("()", 3));
  for (const char* ok : {"", "()", "(())", "()()", "(()())()", "((((()))))"}) {
    EXPECT_TRUE(Matches(cg, ok)) << ok;
  }
  for (const char* bad : {"(", ")", "(()", "())", ")(", "(()))("}) {
    EXPECT_FALSE(Matches(cg, bad)) << bad;
  }
  for (uint32_t seed = 0; seed < 20; ++seed) RandomWalkChecked(cg, seed, 30);
}

TEST(MatcherTest, DeepNestingHasNoNativeRecursion) {
  auto cg = CompileOrDie(Balanced(), AllStringsVocab("()", 1));
  std::string deep(20000, '(');
  deep += std::string(20000, ')');
  EXPECT_TRUE(Matches(cg, deep));
  EXPECT_FALSE(Matches(cg, deep + ")"));
}

TEST(MatcherTest, LeftRecursion) {
  auto cg = CompileOrDie(LeftRecursive(), AllStringsVocab("1+", 3));
  for (const char* ok : {"1", "12", "1+2", "11+2+33", "0+0+0+0"}) EXPECT_TRUE(Matches(cg, ok)) << ok;
  for (const char* bad : {"", "+", "1+", "+1", "1++2"}) EXPECT_FALSE(Matches(cg, bad)) << bad;
  for (uint32_t seed = 0; seed < 20; ++seed) RandomWalkChecked(cg, seed, 20);
}

TEST(MatcherTest, NullableChain) {
  auto cg = CompileOrDie(NullableChain(), AllStringsVocab("xy", 3));
  for (const char* ok : {"x", "yx", "yyyx"}) EXPECT_TRUE(Matches(cg, ok)) << ok;
  for (const char* bad : {"", "y", "xy", "xx"}) EXPECT_FALSE(Matches(cg, bad)) << bad;
  for (uint32_t seed = 0; seed < 10; ++seed) RandomWalkChecked(cg, seed, 10);
}

TEST(MatcherTest, EosOnlyWhenAccepting) {
  Grammar g;
  g.set_root(g.DefineRule("root", g.Choice({g.Literal("a"), g.Literal("abc")})));
  auto vocab = AllStringsVocab("abc", 2);
  auto cg = CompileOrDie(g, vocab);
  GrammarMatcher m(cg);
  int32_t eos = vocab->eos_ids()[0];
  EXPECT_FALSE(m.AcceptToken(eos));
  EXPECT_TRUE(m.AcceptBytes("a"));
  EXPECT_TRUE(MaskMatchesProbe(m));
  EXPECT_TRUE(m.IsAccepting());
  EXPECT_FALSE(m.IsCompleted());  // "bc" may follow
  EXPECT_TRUE(m.AcceptBytes("bc"));
  EXPECT_TRUE(m.IsCompleted());
  EXPECT_TRUE(m.AcceptToken(eos));
  EXPECT_TRUE(m.IsTerminated());
  TokenBitmask mask(vocab->size());
  mask.SetAll();
  m.FillNextTokenBitmask(&mask);
  EXPECT_EQ(mask.count(), 0u);
  m.Rollback(2);
  EXPECT_FALSE(m.IsTerminated());
  EXPECT_TRUE(m.IsAccepting());
  EXPECT_TRUE(MaskMatchesProbe(m));
}

TEST(MatcherTest, RejectedTokenLeavesStateUnchanged) {
  auto vocab = AllStringsVocab("()", 3);
  auto cg = CompileOrDie(Balanced(), vocab);
  GrammarMatcher m(cg);
  EXPECT_TRUE(m.AcceptBytes("(("));
  EXPECT_FALSE(m.AcceptBytes(")))"));
  EXPECT_EQ(m.num_tokens(), 1u);
  EXPECT_TRUE(m.AcceptBytes("))"));
  EXPECT_TRUE(m.IsAccepting());
}

TEST(MatcherTest, SpecialTokensNeverAllowed) {
  Grammar g;
  g.set_root(g.DefineRule("root", g.Star(g.Bytes({{0, 255}}))));
  auto vocab = std::make_shared<Vocabulary>(std::vector<std::string>{"a", "<s>", "", "b"},
                                            std::vector<int32_t>{}, std::vector<int32_t>{1});
  auto cg = CompileOrDie(g, vocab);
  GrammarMatcher m(cg);
  TokenBitmask mask;
  m.FillNextTokenBitmask(&mask);
  ASSERT_EQ(mask.size(), 4u);
  EXPECT_EQ(mask.words()[0], 0b1001u);
  EXPECT_FALSE(m.AcceptToken(1));
  EXPECT_FALSE(m.AcceptToken(2));
}

TEST(MatcherTest, TokensStraddlingRuleBoundaries) {
  // root ::= "[" item ("," item)* "]" ; item ::= "ab" | "a"
  Grammar g;
  RuleId item = g.DefineRule("item", g.Choice({g.Literal("ab"), g.Literal("a")}));
  g.set_root(
      g.DefineRule("root", g.Sequence({g.Literal("["), g.Ref(item),
                                       g.Star(g.Sequence({g.Literal(","), g.Ref(item)})), g.Literal("]")})));
  auto cg = CompileOrDie(g, AllStringsVocab("[],ab", 3));
  for (uint32_t seed = 0; seed < 30; ++seed) RandomWalkChecked(cg, seed, 15);
}

TEST(MatcherTest, UnproductiveRulesArePruned) {
  // loop ::= "a" loop  (never ends) ; root ::= "b" | loop
  Grammar g;
  RuleId loop = g.AddRule("loop");
  g.SetBody(loop, g.Sequence({g.Literal("a"), g.Ref(loop)}));
  g.set_root(g.DefineRule("root", g.Choice({g.Literal("b"), g.Ref(loop)})));
  auto cg = CompileOrDie(g, AllStringsVocab("ab", 2));
  GrammarMatcher m(cg);
  EXPECT_FALSE(m.AcceptBytes("a"));
  EXPECT_TRUE(MaskMatchesProbe(m));

  Grammar only;
  RuleId l2 = only.AddRule("loop");
  only.SetBody(l2, only.Sequence({only.Literal("a"), only.Ref(l2)}));
  only.set_root(l2);
  Deadline d(5);
  EXPECT_FALSE(BuildAutomaton(only, BuildLimits{}, d).ok());
}

TEST(MatcherTest, RepetitionBudget) {
  BuildLimits limits;
  limits.max_nfa_states = 100000;
  Grammar g;
  ExprId x = g.Repeat(g.Repeat(g.Literal("abc"), 0, 5000), 0, 5000);
  g.set_root(g.DefineRule("root", x));
  Deadline d(5);
  auto a = BuildAutomaton(g, limits, d);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace deepinfer::grammar
