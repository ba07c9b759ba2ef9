// HF pre-tokenizer semantics: Split behaviours and invert, Digits, ByteLevel.
#include "tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

#include "tokenizer/unicode.h"

namespace deepinfer {
namespace {

using Behavior = PreTokenizerStep::Behavior;
using Pieces = std::vector<std::string>;

PreTokenizerStep Split(const std::string& pattern, Behavior behavior, bool invert = false,
                       bool literal = false) {
  PreTokenizerStep s;
  s.kind = PreTokenizerStep::Kind::kSplit;
  s.pattern = pattern;
  s.behavior = behavior;
  s.invert = invert;
  s.pattern_is_literal = literal;
  return s;
}

PreTokenizerStep ByteLevel(bool add_prefix_space, bool use_regex) {
  PreTokenizerStep s;
  s.kind = PreTokenizerStep::Kind::kByteLevel;
  s.add_prefix_space = add_prefix_space;
  s.use_regex = use_regex;
  return s;
}

Pieces RunSteps(std::vector<PreTokenizerStep> steps, const std::string& text) {
  steps.push_back(ByteLevel(false, false));
  auto pt = PreTokenizer::Create(steps);
  EXPECT_TRUE(pt.ok()) << pt.status().ToString();
  if (!pt.ok()) return {};
  return pt->Run(text);
}

// The examples of HF tokenizers' SplitDelimiterBehavior documentation.
TEST(PreTokenizerTest, SplitBehaviors) {
  const std::string text = "the-final--countdown";
  EXPECT_EQ(RunSteps({Split("-", Behavior::kIsolated)}, text),
            Pieces({"the", "-", "final", "-", "-", "countdown"}));
  EXPECT_EQ(RunSteps({Split("-", Behavior::kRemoved)}, text), Pieces({"the", "final", "countdown"}));
  EXPECT_EQ(RunSteps({Split("-", Behavior::kMergedWithPrevious)}, text),
            Pieces({"the-", "final-", "-", "countdown"}));
  EXPECT_EQ(RunSteps({Split("-", Behavior::kMergedWithNext)}, text),
            Pieces({"the", "-final", "-", "-countdown"}));
  EXPECT_EQ(RunSteps({Split("-", Behavior::kContiguous)}, text),
            Pieces({"the", "-", "final", "--", "countdown"}));
  // invert: the pattern describes the pieces to keep.
  EXPECT_EQ(RunSteps({Split("[a-z]+", Behavior::kRemoved, /*invert=*/true)}, text),
            Pieces({"the", "final", "countdown"}));
  // A literal pattern is not a regex.
  EXPECT_EQ(RunSteps({Split(".", Behavior::kIsolated, false, /*literal=*/true)}, "a.b"),
            Pieces({"a", ".", "b"}));
}

TEST(PreTokenizerTest, DigitsAndByteLevel) {
  PreTokenizerStep digits;
  digits.kind = PreTokenizerStep::Kind::kDigits;
  EXPECT_EQ(RunSteps({digits}, "a123b"), Pieces({"a", "123", "b"}));
  digits.individual_digits = true;
  EXPECT_EQ(RunSteps({digits}, "a123b"), Pieces({"a", "1", "2", "3", "b"}));

  auto gpt2 = PreTokenizer::Create({ByteLevel(/*add_prefix_space=*/true, /*use_regex=*/true)});
  ASSERT_TRUE(gpt2.ok());
  // U+0120 "Ġ" stands for the space byte.
  EXPECT_EQ(gpt2->Run("hello world's"), Pieces({"\xC4\xA0hello", "\xC4\xA0world", "'s"}));
}

TEST(PreTokenizerTest, InvalidUtf8SurvivesEveryPreset) {
  const std::string text = "ab\xFF\xC3 12\x80x \xE2\x96";
  for (const char* pre :
       {"default", "gpt-2", "llama3", "qwen2", "deepseek-llm", "deepseek-coder", "deepseek-v3"}) {
    auto steps = PreTokenizer::StepsForGgufPre(pre);
    ASSERT_TRUE(steps.ok()) << pre;
    auto pt = PreTokenizer::Create(*steps);
    ASSERT_TRUE(pt.ok()) << pre << ": " << pt.status().ToString();
    std::string joined;
    for (const auto& piece : pt->Run(text)) joined += unicode::ByteLevelDecode(piece);
    EXPECT_EQ(joined, text) << pre;
  }
}

TEST(PreTokenizerTest, BadRegexIsAnError) {
  auto pt = PreTokenizer::Create({Split("(", Behavior::kIsolated), ByteLevel(false, false)});
  ASSERT_FALSE(pt.ok());
  EXPECT_EQ(pt.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(pt.status().message().find("step 0"), std::string::npos) << pt.status().message();
  EXPECT_FALSE(PreTokenizer::Create({Split("a", Behavior::kIsolated)}).ok());  // no ByteLevel step
}

}  // namespace
}  // namespace deepinfer
