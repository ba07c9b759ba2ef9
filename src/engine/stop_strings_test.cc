// StopStringMatcher: streamed text with stop strings split across pieces.
#include "engine/stop_strings.h"

#include <gtest/gtest.h>

namespace deepinfer {
namespace {

TEST(StopStringMatcherTest, HoldsBackAPossibleStartAndCutsAtTheMatch) {
  StopStringMatcher m({"END", "##"});
  EXPECT_EQ(m.Push("hello E"), "hello ");  // "E" could start "END"
  EXPECT_EQ(m.Push("N"), "");              // "EN" still could
  EXPECT_EQ(m.Push("D and more"), "");     // matched: nothing after the cut
  EXPECT_TRUE(m.matched());
  EXPECT_EQ(m.Push("x"), "");
  EXPECT_EQ(m.Flush(), "");
}

TEST(StopStringMatcherTest, ReleasesHeldTextWhenTheStartDoesNotContinue) {
  StopStringMatcher m({"END"});
  EXPECT_EQ(m.Push("E"), "");
  EXPECT_EQ(m.Push("x"), "Ex");
  EXPECT_EQ(m.Push("EN"), "");
  EXPECT_EQ(m.Flush(), "EN");  // generation ended without a match
  EXPECT_FALSE(m.matched());
}

TEST(StopStringMatcherTest, EarliestMatchWinsAndTextBeforeItInTheSamePieceIsKept) {
  StopStringMatcher m({"cd", "b"});
  std::string out = m.Push("abcd");
  EXPECT_EQ(out, "a");
  EXPECT_TRUE(m.matched());
}

TEST(StopStringMatcherTest, NoStopStringsPassesEverythingThrough) {
  StopStringMatcher m({"", ""});
  EXPECT_EQ(m.Push("abc"), "abc");
  EXPECT_EQ(m.Flush(), "");
}

}  // namespace
}  // namespace deepinfer
