// String profiles (string_profile.h): bounded strings are recognized with
// the right bounds, and every mask entry derived from a profile equals the
// entry the plain vocabulary walk computes (an independent code path).
#include "grammar/string_profile.h"

#include <gtest/gtest.h>

#include <optional>
#include <set>

#include "grammar/compiler.h"
#include "grammar/json_schema.h"
#include "grammar/testing/test_util.h"

namespace deepinfer::grammar {
namespace {

std::vector<CountedStringRule> CountedRules(const std::string& schema) {
  auto g = JsonSchemaToGrammar(schema);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  Deadline deadline(5.0);
  auto a = BuildAutomaton(*g, BuildLimits{}, deadline);
  EXPECT_TRUE(a.ok());
  std::vector<CountedStringRule> out;
  for (size_t r = 0; r < a->rule_start.size(); ++r) {
    auto c = JsonStringModel::Get().AnalyzeCounted(*a, static_cast<RuleId>(r));
    if (c) out.push_back(*c);
  }
  return out;
}

TEST(StringProfileTest, RecognizesBoundedStrings) {
  auto c = CountedRules(R"({"type":"string","minLength":2,"maxLength":5})");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].min, 2);
  EXPECT_EQ(c[0].max, 5);
  c = CountedRules(R"({"type":"string","maxLength":0})");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].max, 0);
  // Unbounded, pattern-restricted and non-string rules are not counted.
  EXPECT_TRUE(CountedRules(R"({"type":"string"})").empty());
  EXPECT_TRUE(CountedRules(R"({"type":"string","minLength":3})").empty());
  EXPECT_TRUE(CountedRules(R"({"type":"string","pattern":"^a{1,3}$"})").empty());
  EXPECT_TRUE(CountedRules(R"({"enum":["a","bb"]})").empty());
}

// CountStates of a schema's first string rule.
std::optional<CountedStringRule> FirstCountStates(const std::string& schema, GrammarAutomaton* a) {
  auto g = JsonSchemaToGrammar(schema);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  Deadline deadline(5.0);
  auto built = BuildAutomaton(*g, BuildLimits{}, deadline);
  EXPECT_TRUE(built.ok());
  *a = std::move(*built);
  for (size_t r = 0; r < a->rule_start.size(); ++r) {
    if (!a->rule_terminal[r] || a->DenseNext(a->rule_start[r], '"') == kNoState) continue;
    return JsonStringModel::Get().CountStates(*a, static_cast<RuleId>(r));
  }
  return std::nullopt;
}

uint32_t StateAfter(const GrammarAutomaton& a, const std::string& text);

TEST(StringProfileTest, CountStatesOfProducts) {
  GrammarAutomaton a;
  // A prefix pattern times a counter: after the prefix, the rule is U with
  // the count (agrees inside); before it, only `a` / `b` may follow, a
  // refusal with 39 characters left: beyond the slack bound.
  auto c = FirstCountStates(R"({"type":"string","pattern":"^ab","maxLength":40})", &a);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->max, 40);
  EXPECT_EQ(c->min, 2);
  EXPECT_EQ(c->slack, 0);
  uint32_t base = a.rule_start[a.state_rule[StateAfter(a, "ab")]];
  EXPECT_EQ(c->count[StateAfter(a, "ab") - base], 2);
  EXPECT_TRUE(c->agrees_inside[StateAfter(a, "ab") - base]);
  EXPECT_TRUE(c->agrees_inside[StateAfter(a, "abbbb") - base]);
  EXPECT_FALSE(c->agrees_inside[StateAfter(a, "a") - base]);
  // With maxLength 6 the refusals come with at most 6 characters left:
  // the slack, within which tokens are run.
  c = FirstCountStates(R"({"type":"string","pattern":"^ab","maxLength":6})", &a);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->slack, 6);
  base = a.rule_start[a.state_rule[StateAfter(a, "a")]];
  EXPECT_TRUE(c->agrees_inside[StateAfter(a, "a") - base]);
  // An unanchored pattern with a bound refuses other characters only when
  // fewer than its length are left.
  c = FirstCountStates(R"({"type":"string","pattern":"xy","maxLength":30})", &a);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->slack, 2);
  base = a.rule_start[a.state_rule[StateAfter(a, "")]];
  EXPECT_TRUE(c->agrees_inside[StateAfter(a, "") - base]);
  // Excluded values: the exclusion shows only at the closing quote.
  c = FirstCountStates(R"({"type":"string","not":{"enum":["ab"]},"maxLength":3})", &a);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->max, 3);
  base = a.rule_start[a.state_rule[StateAfter(a, "a")]];
  EXPECT_TRUE(c->agrees_inside[StateAfter(a, "a") - base]);
  EXPECT_TRUE(c->agrees_inside[StateAfter(a, "") - base]);
  // An unbounded string has no counter: every count reaches the body.
  EXPECT_FALSE(FirstCountStates(R"({"type":"string","pattern":"^ab"})", &a).has_value());
}

// The state of a schema's string rule after its opening quote and `text`.
uint32_t StateAfter(const GrammarAutomaton& a, const std::string& text) {
  for (size_t r = 0; r < a.rule_start.size(); ++r) {
    uint32_t s = a.rule_start[r];
    if (!a.rule_terminal[r] || a.DenseNext(s, '"') == kNoState) continue;
    s = a.DenseNext(s, '"');
    for (char c : text) {
      if (s != kNoState) s = a.DenseNext(s, static_cast<uint8_t>(c));
    }
    return s;
  }
  return kNoState;
}

bool AgreesWithBody(const std::string& schema, const std::string& text) {
  auto g = JsonSchemaToGrammar(schema);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  Deadline deadline(5.0);
  auto a = BuildAutomaton(*g, BuildLimits{}, deadline);
  EXPECT_TRUE(a.ok());
  uint32_t s = StateAfter(*a, text);
  EXPECT_NE(s, kNoState) << schema << " after " << text;
  std::vector<std::pair<uint32_t, uint32_t>> agreed;
  const JsonStringModel& model = JsonStringModel::Get();
  return s != kNoState && model.AgreesInside(*a, s, model.body(), &agreed);
}

TEST(StringProfileTest, AgreesInsideWhereOnlyTheCloseDiffers) {
  // Any character may follow; only whether `"` may close differs from U.
  EXPECT_TRUE(AgreesWithBody(R"({"type":"string","minLength":3})", ""));
  EXPECT_TRUE(AgreesWithBody(R"({"type":"string","pattern":"ab"})", "xa"));
  EXPECT_TRUE(AgreesWithBody(R"({"type":"string","pattern":"_n$"})", "q_"));
  EXPECT_TRUE(AgreesWithBody(R"({"type":"string","pattern":"^x-"})", "x-"));
  // Characters are restricted: `^x-` after `"` allows only `x`; a bounded
  // string refuses characters past its maximum; `[a-z]+` refuses digits.
  EXPECT_FALSE(AgreesWithBody(R"({"type":"string","pattern":"^x-"})", ""));
  EXPECT_FALSE(AgreesWithBody(R"({"type":"string","maxLength":2})", ""));
  EXPECT_FALSE(AgreesWithBody(R"({"type":"string","pattern":"^[a-z]+$"})", "a"));
}

// Tokens that exercise every U state: quotes, escapes (\" \\ \n \u00e9),
// 2-byte UTF-8 split across tokens, control bytes, key-name prefixes.
std::shared_ptr<const Vocabulary> StringVocab() {
  std::string alphabet = "ab\"\\nu0e";
  alphabet += '\xc3';
  alphabet += '\xa9';
  alphabet += '\x01';
  auto base = testing::AllStringsVocab(alphabet, 3);
  std::vector<std::string> tokens;
  for (size_t id = 0; id + 1 < base->size(); ++id) tokens.push_back(base->token(static_cast<int32_t>(id)));
  for (const char* t :
       {"abab", "\\u00e9a", "aaaaaa\"", "ba\":", "\",\"ab", "ab\"", "\xc3\xa9\xc3\xa9\xc3\xa9",
        // For the patternProperties regions below (prefix `a-`, suffix `_n`).
        "-", "_", "a-", "_n", "_n\"", "a-a\"", "-_n\":", "\"a-", "\"a-_n\""}) {
    tokens.push_back(t);
  }
  tokens.push_back("<eos>");
  int32_t eos = static_cast<int32_t>(tokens.size() - 1);
  return std::make_shared<Vocabulary>(std::move(tokens), std::vector<int32_t>{eos});
}

TEST(StringProfileTest, DerivedEntriesEqualTheWalk) {
  auto vocab = StringVocab();
  GrammarCompiler compiler(vocab);
  for (
      const char* schema : {
          R"({"type":"string","minLength":2,"maxLength":4})",
          R"({"type":"string","maxLength":1})",
          R"({"type":"string","minLength":1,"maxLength":7})",
          R"({"type":"string"})",
          // Additional-property keys next to declared names (a trie inside a string).
          R"({"type":"object","properties":{"ab":{"type":"integer"},"a":{"type":"null"},"ba":{"type":"string","maxLength":3}}})",
          // Strings whose extra state shows only at the closing quote (read
          // against U with AgreesInside): minLength alone, unanchored and
          // end-anchored patterns, patternProperties key regions (a prefix,
          // a suffix, and their complements) next to a declared name.
          R"({"type":"string","minLength":3})",
          R"({"type":"string","pattern":"ab"})",
          R"({"type":"string","pattern":"e\u00e9$"})",
          R"({"type":"string","pattern":"^a[^b]"})",
          R"({"type":"object","properties":{"ab":{"type":"integer"}},"patternProperties":{"^a-":{"type":"string"},"_n$":{"type":"integer"}},"additionalProperties":false})",
          R"({"type":"object","patternProperties":{"b":{"type":"null"}},"propertyNames":{"minLength":2}})",
          // Products with a character counter (CountStates, AgreesInside
          // with the count): a prefix, an unanchored and an end-anchored
          // pattern, excluded values and a format, each with length bounds.
          R"({"type":"string","pattern":"^ab","maxLength":6})",
          R"({"type":"string","pattern":"^a","minLength":2,"maxLength":9})",
          R"({"type":"string","pattern":"ab","maxLength":5})",
          R"({"type":"string","pattern":"ab","maxLength":9})",
          R"({"type":"string","pattern":"b\u00e9a","minLength":4,"maxLength":12})",
          R"({"type":"string","pattern":"e$","minLength":1,"maxLength":4})",
          R"({"type":"string","not":{"enum":["ab","ba","a\"b"]},"maxLength":4})",
          R"({"type":"string","format":"uuid","maxLength":40})",
          // Products refusing or walking most first bytes (ComputeInsideMask
          // copies only the profile-read ranges then).
          R"({"type":"string","pattern":"^[ab]+$","maxLength":6})",
          R"({"type":"string","pattern":"^[a\u00e9]*e$","minLength":2,"maxLength":8})",
          R"({"type":"string","format":"uri-reference","maxLength":12})",
          R"({"type":"string","format":"email","maxLength":10})",
      }) {
    auto compiled = compiler.CompileJsonSchema(schema);
    ASSERT_TRUE(compiled.ok()) << schema;
    testing::ExpectMasksEqualPlainWalk(**compiled, vocab, schema);
  }
}

// A bounded string too long for dense tables (maxLength 1500: ~36k states)
// is still a counted rule, and its derived masks equal the plain (Earley)
// walk's at the first, middle and last counts.
TEST(StringProfileTest, LongBoundedStringWithoutDenseTables) {
  auto vocab = StringVocab();
  GrammarCompiler compiler(vocab);
  auto compiled = compiler.CompileJsonSchema(R"({"type":"string","minLength":2,"maxLength":1500})");
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  const GrammarAutomaton& a = (*compiled)->automaton();
  RuleId rule = -1;
  for (size_t r = 0; r < a.rule_start.size(); ++r) {
    if (a.RuleDeterministic(static_cast<RuleId>(r)) && a.rule_end[r] - a.rule_start[r] > 32768) {
      rule = static_cast<RuleId>(r);
    }
  }
  ASSERT_GE(rule, 0) << "expected one deterministic rule beyond the dense limit";
  EXPECT_FALSE(a.rule_terminal[rule]);
  auto counted = JsonStringModel::Get().AnalyzeCounted(a, rule);
  ASSERT_TRUE(counted.has_value());
  EXPECT_EQ(counted->min, 2);
  EXPECT_EQ(counted->max, 1500);
  CompiledGrammar plain(a, vocab);
  uint32_t s = a.DeterministicNext(a.rule_start[rule], '"');
  for (int k = 0; k <= 1500 && s != kNoState; ++k) {
    if (k <= 3 || k == 750 || k >= 1497) {
      EXPECT_EQ(testing::AcceptedIds((*compiled)->MaskAt(s)), testing::AcceptedIds(plain.MaskAt(s))) << k;
      EXPECT_EQ((*compiled)->MaskAt(s).uncertain, plain.MaskAt(s).uncertain) << k;
    }
    if (k < 1500) s = a.DeterministicNext(s, 'a');
  }
}

TEST(StringProfileTest, BoundedStringMasksMatchBruteForce) {
  auto vocab = StringVocab();
  GrammarCompiler compiler(vocab);
  auto compiled = compiler.CompileJsonSchema(R"({"type":"array","items":{"type":"string","maxLength":3}})");
  ASSERT_TRUE(compiled.ok());
  GrammarMatcher m(*compiled);
  // ["a\"é","", "ab"] byte by byte, checking the mask at every step.
  std::string text = "[\"a\\\"\xc3\xa9\",\"\",\"ab\"]";
  for (char c : text) {
    ASSERT_TRUE(testing::MaskMatchesProbe(m)) << "before byte '" << c << "'";
    ASSERT_TRUE(m.AcceptBytes(std::string(1, c)));
  }
  EXPECT_TRUE(m.IsAccepting());
  // A fourth character is refused.
  EXPECT_FALSE(testing::Matches(*compiled, "[\"abab\"]"));
}

}  // namespace
}  // namespace deepinfer::grammar
