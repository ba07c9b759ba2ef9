// Regex front end: accepted/rejected strings, std::regex cross-check,
// UTF-8 classes, errors, masks.
#include "grammar/regex.h"

#include <gtest/gtest.h>

#include <random>
#include <regex>

#include "grammar/testing/test_util.h"

namespace deepinfer::grammar {
namespace {

using testing::AllStringsVocab;
using testing::CompileOrDie;
using testing::Matches;
using testing::RandomWalkChecked;

std::shared_ptr<const CompiledGrammar> CompileRegex(
    const std::string& pattern, std::shared_ptr<const Vocabulary> vocab = AllStringsVocab("ab", 1)) {
  StatusOr<Grammar> g = RegexToGrammar(pattern);
  EXPECT_TRUE(g.ok()) << pattern << ": " << g.status().ToString();
  if (!g.ok()) return nullptr;
  return CompileOrDie(*g, std::move(vocab));
}

struct Case {
  std::string pattern;
  std::vector<std::string> accept;
  std::vector<std::string> reject;
};

TEST(RegexTest, Table) {
  const std::vector<Case> cases = {
      {"abc", {"abc"}, {"", "ab", "abcd", "abd"}},
      {"a|b|cd", {"a", "b", "cd"}, {"", "c", "ab", "acd"}},
      {"a*", {"", "a", "aaaa"}, {"b", "ab"}},
      {"a+b?", {"a", "ab", "aaab"}, {"", "b", "abb"}},
      {"(ab)+", {"ab", "abab"}, {"", "a", "aba"}},
      {"(?:ab|c){2}", {"abab", "abc", "cc", "cab"}, {"ab", "abcab"}},
      {"a{2,3}", {"aa", "aaa"}, {"a", "aaaa"}},
      {"a{2,}", {"aa", "aaaaaa"}, {"a"}},
      {"a{0}b", {"b"}, {"ab"}},
      {"a{,2}", {"a{,2}"}, {"aa"}},  // not a quantifier: literal braces
      {"a*?b+?c??", {"b", "abc", "aabbc"}, {"", "ac"}},
      {"[abc]", {"a", "b", "c"}, {"d", "", "ab"}},
      {"[^abc]", {"d", "z", "\xC3\xA9", "\n"}, {"a", "", "dd"}},
      {"[a-cx-z]+", {"abcxyz", "zz"}, {"d", "w"}},
      {"[-a]", {"-", "a"}, {"b"}},
      {"[a-]", {"-", "a"}, {"b"}},
      {"[\\]\\\\]", {"]", "\\"}, {"a"}},
      {"\\d+", {"0", "12345"}, {"", "a", "1a"}},
      {"\\D", {"a", "-"}, {"1"}},
      {"\\w+", {"abc_09XYZ"}, {"-", "a b"}},
      {"\\W", {"-", " "}, {"a", "_"}},
      {"\\s", {" ", "\t", "\n", "\xC2\xA0", "\xE3\x80\x80"}, {"a"}},
      {"\\S+", {"ab"}, {" ", "a b"}},
      {"[\\d\\s]+", {"1 2", "  "}, {"a"}},
      {"\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\\\\\/", {".*+?()[]{}|\\/"}, {}},
      {"\\x41\\u0042\\u{43}", {"ABC"}, {"abc"}},
      {"\\t\\n\\r\\f\\v\\0", {std::string("\t\n\r\f\v") + '\0'}, {}},
      {"\\uD83D\\uDE00", {"\xF0\x9F\x98\x80"}, {"\xED\xA0\xBD"}},
      {"[\\u00e0-\\u00ff]", {"\xC3\xA0", "\xC3\xBF"}, {"a", "\xC3\x9F"}},
      {"[\\u0400-\\u04FF]+", {"\xD0\x9F\xD1\x80\xD0\xB8"}, {"abc"}},
      {"[\\u{10000}-\\u{10FFFF}]", {"\xF0\x90\x80\x80", "\xF4\x8F\xBF\xBF"}, {"\xEF\xBF\xBF"}},
      {".", {"a", "\xE4\xB8\xAD", "\xF0\x9F\x98\x80"}, {"\n", "\r", "", "ab"}},
      {"\xE4\xB8\xAD\xE6\x96\x87", {"\xE4\xB8\xAD\xE6\x96\x87"}, {"\xE4\xB8\xAD"}},
      {"^abc$", {"abc"}, {"xabc"}},
      {"^(a|b)$", {"a", "b"}, {"ab"}},
      {"(a|)b", {"ab", "b"}, {"a"}},
      {"()", {""}, {"a"}},
      {"(((a)))", {"a"}, {""}},
      {"(?<year>\\d{4})-(?<m>\\d{2})", {"2024-01"}, {"24-01"}},
      {"[0-9]{3}-[0-9]{4}", {"555-1234"}, {"5551234", "55-1234"}},
      {"(\\+|-)?\\d+(\\.\\d+)?([eE][+-]?\\d+)?", {"1", "-1.5", "+3e10", "2.5E-3"}, {"1.", ".5", "e5"}},
      {"[A-Z][a-z]*( [A-Z][a-z]*)*", {"Hello", "Hello World"}, {"hello", "Hello  World"}},
      {"(true|false|null)", {"true", "false", "null"}, {"nul", "True"}},
      {"[^]", {"a", "\n"}, {""}},
      {"[]a", {}, {"a", ""}},
      {"\\cJ", {"\n"}, {"c"}},
      {"a{1,3}?", {"a", "aaa"}, {"aaaa"}},
  };
  int checked = 0;
  for (const Case& c : cases) {
    StatusOr<Grammar> g = RegexToGrammar(c.pattern);
    if (c.accept.empty()) {
      // Patterns matching nothing fail to build (grammar matches no string).
      if (!g.ok()) continue;
      Deadline d(5);
      EXPECT_FALSE(BuildAutomaton(*g, BuildLimits{}, d).ok()) << c.pattern;
      continue;
    }
    auto cg = CompileRegex(c.pattern);
    ASSERT_NE(cg, nullptr) << c.pattern;
    for (const std::string& s : c.accept) {
      EXPECT_TRUE(Matches(cg, s)) << "/" << c.pattern << "/ should accept '" << s << "'";
      ++checked;
    }
    for (const std::string& s : c.reject) {
      EXPECT_FALSE(Matches(cg, s)) << "/" << c.pattern << "/ should reject '" << s << "'";
      ++checked;
    }
  }
  EXPECT_GT(checked, 130);
}

TEST(RegexTest, Errors) {
  struct Bad {
    const char* pattern;
    StatusCode code;
  };
  for (const Bad& b : std::vector<Bad>{
           {"(ab", StatusCode::kInvalidArgument},
           {"ab)", StatusCode::kInvalidArgument},
           {"*a", StatusCode::kInvalidArgument},
           {"[abc", StatusCode::kInvalidArgument},
           {"[z-a]", StatusCode::kInvalidArgument},
           {"a{3,1}", StatusCode::kInvalidArgument},
           {"\\", StatusCode::kInvalidArgument},
           {"(a)\\1", StatusCode::kUnimplemented},
           {"a(?=b)", StatusCode::kUnimplemented},
           {"a(?!b)", StatusCode::kUnimplemented},
           {"(?<=a)b", StatusCode::kUnimplemented},
           {"\\bword", StatusCode::kUnimplemented},
           {"\\p{L}", StatusCode::kUnimplemented},
           {"(?i)abc", StatusCode::kUnimplemented},
           {"a^b", StatusCode::kUnimplemented},
           {"a$b", StatusCode::kUnimplemented},
           {"a{1000000}", StatusCode::kResourceExhausted},
           {"\xFF", StatusCode::kInvalidArgument},
       }) {
    StatusOr<Grammar> g = RegexToGrammar(b.pattern);
    ASSERT_FALSE(g.ok()) << b.pattern;
    EXPECT_EQ(g.status().code(), b.code) << b.pattern << ": " << g.status().ToString();
  }
}

TEST(RegexTest, DeepGroupsAreBoundedNotRecursive) {
  std::string deep = std::string(900, '(') + "a" + std::string(900, ')');
  auto cg = CompileRegex(deep);
  ASSERT_NE(cg, nullptr);
  EXPECT_TRUE(Matches(cg, "a"));
  std::string deeper = std::string(5000, '(') + "a" + std::string(5000, ')');
  EXPECT_EQ(RegexToGrammar(deeper).status().code(), StatusCode::kResourceExhausted);
}

// Found by fuzz_grammar: stacked quantifiers used to double the automaton
// per '+' and blow through the time limit.
TEST(RegexTest, StackedQuantifiersCollapse) {
  auto cg = CompileRegex("[+0n]++++++++++++++++++++++++0+++++}x*****?????");
  ASSERT_NE(cg, nullptr);
  EXPECT_TRUE(Matches(cg, "+0}"));
  EXPECT_TRUE(Matches(cg, "n+00}xx"));
  EXPECT_FALSE(Matches(cg, "0}"));
  auto nested = CompileRegex("((a+)?)*b");
  ASSERT_NE(nested, nullptr);
  EXPECT_TRUE(Matches(nested, "b"));
  EXPECT_TRUE(Matches(nested, "aab"));
}

// Random regexes over {a,b,c}, compared with std::regex (ECMAScript).
std::string RandomRegex(std::mt19937& rng, int depth) {
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  std::string atom;
  switch (depth > 2 ? pick(4) : pick(7)) {
    case 0:
      atom = std::string(1, "abc"[pick(3)]);
      break;
    case 1:
      atom = "[ab]";
      break;
    case 2:
      atom = "[^a]";
      break;
    case 3:
      atom = ".";
      break;
    case 4:
      atom = "(" + RandomRegex(rng, depth + 1) + ")";
      break;
    case 5:
      atom = "(?:" + RandomRegex(rng, depth + 1) + "|" + RandomRegex(rng, depth + 1) + ")";
      break;
    default:
      atom = RandomRegex(rng, depth + 1) + RandomRegex(rng, depth + 1);
      break;
  }
  switch (pick(8)) {
    case 0:
      return atom + "*";
    case 1:
      return atom + "+";
    case 2:
      return atom + "?";
    case 3:
      return atom + "{1,2}";
    case 4:
      return atom + "{2}";
    default:
      return atom;
  }
}

TEST(RegexTest, AgreesWithStdRegex) {
  std::mt19937 rng(42);
  int compared = 0;
  for (int i = 0; i < 150; ++i) {
    std::string pattern = RandomRegex(rng, 0);
    auto cg = CompileRegex(pattern);
    ASSERT_NE(cg, nullptr) << pattern;
    std::regex re(pattern, std::regex::ECMAScript);
    for (int k = 0; k < 40; ++k) {
      std::string s;
      int len = static_cast<int>(rng() % 7);
      for (int j = 0; j < len; ++j) s += "abcd"[rng() % 4];
      EXPECT_EQ(Matches(cg, s), std::regex_match(s, re)) << "/" << pattern << "/ on '" << s << "'";
      ++compared;
    }
  }
  EXPECT_EQ(compared, 6000);
}

TEST(RegexTest, MasksMatchBruteForce) {
  auto vocab = AllStringsVocab("ab1.-", 2);
  for (const char* p : {"(a|b)*1", "[ab]{2,4}-?\\d", "a+\\.b+", "(ab|a)(b1|1)*", "-?\\d{1,3}"}) {
    auto cg = CompileRegex(p, vocab);
    ASSERT_NE(cg, nullptr);
    for (uint32_t seed = 0; seed < 8; ++seed) RandomWalkChecked(cg, seed, 10);
  }
}

TEST(RegexTest, SearchModeAndJsonEscaping) {
  Grammar g;
  RegexOptions opts;
  opts.search = true;
  opts.json_string_content = true;
  auto e = ParseRegex("^a\"b", opts, &g);
  ASSERT_TRUE(e.ok());
  g.set_root(g.DefineRule("root", *e));
  auto cg = CompileOrDie(g, AllStringsVocab("a", 1));
  EXPECT_TRUE(Matches(cg, "a\\\"b"));
  EXPECT_TRUE(Matches(cg, "a\\\"bxyz"));
  EXPECT_FALSE(Matches(cg, "a\"b"));
  EXPECT_FALSE(Matches(cg, "xa\\\"b"));
}

}  // namespace
}  // namespace deepinfer::grammar
