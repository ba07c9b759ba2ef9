// Byte-class tries (byte_class_trie.h): the partition is exactly "same
// transition from every state", the trie holds every token once under its
// class string, and masks walked over it equal the plain byte walk.
#include "grammar/byte_class_trie.h"

#include <gtest/gtest.h>

#include <set>

#include "grammar/compiler.h"
#include "grammar/json_schema.h"
#include "grammar/testing/test_util.h"

namespace deepinfer::grammar {
namespace {

GrammarAutomaton SchemaAutomaton(const std::string& schema) {
  auto g = JsonSchemaToGrammar(schema);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  Deadline deadline(5.0);
  auto a = BuildAutomaton(*g, BuildLimits{}, deadline);
  EXPECT_TRUE(a.ok());
  return std::move(*a);
}

// The schema's string rule: the terminal rule that opens with a quote.
RuleId StringRule(const GrammarAutomaton& a) {
  for (size_t r = 0; r < a.rule_start.size(); ++r) {
    if (a.rule_terminal[r] && a.DenseNext(a.rule_start[r], '"') != kNoState) return static_cast<RuleId>(r);
  }
  ADD_FAILURE() << "no string rule";
  return 0;
}

TEST(ByteClassTrieTest, PartitionIsExactAndCoarsest) {
  GrammarAutomaton a = SchemaAutomaton(R"({"type":"string","pattern":"^[a-c ]{1,3}x$"})");
  const RuleId rule = StringRule(a);
  const uint32_t begin = a.rule_start[rule];
  auto classes = RuleByteClasses(a, rule, 256);
  ASSERT_TRUE(classes.has_value());
  // `holds`: the start, closed under every byte but the backslash.
  ASSERT_EQ(classes->holds.size(), a.rule_end[rule] - begin);
  EXPECT_TRUE(classes->holds[0]);
  for (uint32_t s = begin; s < a.rule_end[rule]; ++s) {
    if (!classes->holds[s - begin]) continue;
    for (int b = 0; b < 256; ++b) {
      uint32_t next = a.DenseNext(s, static_cast<uint8_t>(b));
      if (b != '\\' && next != kNoState) {
        EXPECT_TRUE(classes->holds[next - begin]) << s << " " << b;
      }
    }
  }
  for (int b = 0; b < 256; ++b) {
    for (int c = 0; c < 256; ++c) {
      bool same_everywhere = b != '\\' && c != '\\';
      for (uint32_t s = begin; s < a.rule_end[rule]; ++s) {
        if (!classes->holds[s - begin]) continue;
        same_everywhere &= a.DenseNext(s, static_cast<uint8_t>(b)) == a.DenseNext(s, static_cast<uint8_t>(c));
      }
      if (b == c) same_everywhere = true;
      EXPECT_EQ(classes->class_of[b] == classes->class_of[c], same_everywhere) << b << " " << c;
    }
  }
  EXPECT_EQ(classes->run_class, classes->class_of['\\']);
  // Hand-derived: a, b, c and space are one class; x, the quote, the
  // backslash and every other byte (which fails everywhere) are the others.
  EXPECT_EQ(classes->class_of['a'], classes->class_of[' ']);
  EXPECT_NE(classes->class_of['a'], classes->class_of['x']);
  EXPECT_EQ(classes->class_of['z'], classes->class_of[0xff]);
  EXPECT_EQ(classes->size(), 5u);
  EXPECT_FALSE(RuleByteClasses(a, rule, 2).has_value());  // more classes than allowed
  // From the state after `"a`, the same closure minus the start.
  uint32_t after_a = a.DenseNext(a.DenseNext(begin, '"'), 'a');
  auto later = RuleByteClasses(a, rule, 256, after_a);
  ASSERT_TRUE(later.has_value());
  EXPECT_FALSE(later->holds[0]);
  EXPECT_TRUE(later->holds[after_a - begin]);
  // With `\s` excluded, escapes such as `\t` and `\u0020` are refused
  // inside: the states after a backslash are left out, and splitting the
  // hex digits no longer splits the letters.
  GrammarAutomaton b = SchemaAutomaton(R"({"type":"string","pattern":"^[^\\s]+$"})");
  const RuleId no_space = StringRule(b);
  auto spaces = RuleByteClasses(b, no_space, 256);
  ASSERT_TRUE(spaces.has_value());
  size_t left_out = 0;
  for (uint8_t h : spaces->holds) left_out += !h;
  EXPECT_GT(left_out, 0u);
  EXPECT_EQ(spaces->class_of['a'], spaces->class_of['x']);
  EXPECT_EQ(spaces->class_of['0'], spaces->class_of['x']);
  EXPECT_NE(spaces->class_of[' '], spaces->class_of['x']);
}

TEST(ByteClassTrieTest, EveryTokenOnceUnderItsClassString) {
  GrammarAutomaton a = SchemaAutomaton(R"({"type":"string","pattern":"^[ab]+$"})");
  auto classes = RuleByteClasses(a, StringRule(a), 256);
  ASSERT_TRUE(classes.has_value());
  auto vocab = testing::AllStringsVocab("ab\"c", 3);
  auto trie = ByteClassTrie::Build(*vocab, *classes, 1000);
  ASSERT_NE(trie, nullptr);
  // Paths rebuilt from preorder depths; every token's class string must be
  // the path of the node it is listed under.
  std::vector<uint8_t> path;
  std::multiset<uint32_t> seen;
  for (uint32_t n = 1; n < trie->num_nodes(); ++n) {
    path.resize(trie->node_depth(n) - 1);
    path.push_back(trie->node_class(n));
    EXPECT_LE(trie->token_begin(n), trie->token_begin(n + 1));
    for (uint32_t k = trie->token_begin(n); k < trie->token_begin(n + 1); ++k) {
      std::string_view tok = vocab->sorted_token(trie->token(k));
      std::vector<uint8_t> want;
      for (char c : tok) want.push_back(classes->class_of[static_cast<uint8_t>(c)]);
      EXPECT_EQ(want, path) << tok;
      seen.insert(trie->token(k));
    }
  }
  EXPECT_EQ(seen.size(), vocab->sorted_ids().size());
  EXPECT_EQ(std::set<uint32_t>(seen.begin(), seen.end()).size(), seen.size());
  // a and b share a class, so the 2- and 3-byte strings over them share
  // nodes: fewer nodes than the byte trie's.
  EXPECT_LT(trie->num_nodes(), 4u + 16u + 64u);
  EXPECT_EQ(ByteClassTrie::Build(*vocab, *classes, 3), nullptr);  // node budget
}

TEST(ByteClassTrieTest, MasksEqualTheByteWalk) {
  // Letters, space, quotes, escapes and split 2-byte UTF-8 (é = c3 a9);
  // enough letters in one class that the class trie stays small enough to
  // be built (CompiledGrammar wants one node per 8 tokens at most).
  std::string alphabet = "abcdefg \"\\nxu02";
  alphabet += '\xc3';
  alphabet += '\xa9';
  alphabet += '\xe2';  // U+2028 (e2 80 a8), a line separator and a space
  alphabet += '\x80';
  alphabet += '\xa8';
  auto vocab = testing::AllStringsVocab(alphabet, 3);
  GrammarCompiler compiler(vocab);
  for (const char* schema : {
           R"({"type":"string","pattern":"^[a-g ]+$"})",
           R"({"type":"string","pattern":"^[a-g ]{2,5}$"})",
           R"({"type":"string","pattern":"^[a-g \u00e9]+x?$"})",
           R"({"type":"array","items":{"type":"string","pattern":"^[a-g ]{1,3}$"}})",
           // Excluded characters: escapes (`\\n`, `\\u0020`) are refused
           // inside, so the backslash's subtree is run byte by byte.
           R"({"type":"string","pattern":"^[^\\s]+$"})",
           R"({"type":"string","pattern":"^ab.+"})",
       }) {
    auto compiled = compiler.CompileJsonSchema(schema);
    ASSERT_TRUE(compiled.ok()) << schema << ": " << compiled.status().ToString();
    const GrammarAutomaton& a = (*compiled)->automaton();
    int tries = 0;
    for (size_t r = 0; r < a.rule_start.size(); ++r) {
      tries += (*compiled)->HasClassTrie(static_cast<RuleId>(r));
    }
    // The path under test is taken (the patterns are broad enough on this
    // vocabulary: CompiledGrammar only builds tries for long walks).
    EXPECT_GE(tries, 1) << schema;
    testing::ExpectMasksEqualPlainWalk(**compiled, vocab, schema);
  }
}

}  // namespace
}  // namespace deepinfer::grammar
