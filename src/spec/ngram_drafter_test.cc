#include "spec/ngram_drafter.h"

#include <gtest/gtest.h>

#include <vector>

namespace deepinfer {
namespace {

TEST(NgramDrafter, ProposesWhatFollowedTheLatestEarlierOccurrenceOfTheLongestSuffix) {
  NgramDrafter d;
  // Suffix "7 8 9" occurred at index 1 (followed by 4 5) and index 6 (followed by 1 2 3 ...).
  const std::vector<int32_t> s = {0, 7, 8, 9, 4, 5, 7, 8, 9, 1, 2, 3, 7, 8, 9};
  DraftProposal p = d.Propose(s, 3);
  EXPECT_EQ(p.tokens, (std::vector<int32_t>{1, 2, 3}));
  ASSERT_EQ(p.confidence.size(), 3u);
  // Two earlier occurrences of the 3-gram, one agrees with "1": (1+1)/(2+2) * 3/4.
  EXPECT_FLOAT_EQ(p.confidence[0], 0.5f * 0.75f);
  EXPECT_FLOAT_EQ(p.confidence[1], 0.5f * 0.75f * 0.9f);
}

TEST(NgramDrafter, StopsAtTheEndOfTheSequenceAndAtMaxTokens) {
  NgramDrafter d;
  const std::vector<int32_t> s = {5, 6, 1, 5, 6};
  EXPECT_EQ(d.Propose(s, 8).tokens, (std::vector<int32_t>{1, 5, 6}));
  EXPECT_EQ(d.Propose(s, 2).tokens, (std::vector<int32_t>{1, 5}));
  EXPECT_TRUE(d.Propose(s, 0).tokens.empty());
}

TEST(NgramDrafter, NoMatchNoProposal) {
  NgramDrafter d;
  EXPECT_TRUE(d.Propose(std::vector<int32_t>{1, 2, 3, 4, 5}, 4).tokens.empty());
  EXPECT_TRUE(d.Propose(std::vector<int32_t>{}, 4).tokens.empty());
  EXPECT_TRUE(d.Propose(std::vector<int32_t>{3}, 4).tokens.empty());
}

TEST(NgramDrafter, FallsBackToShorterSuffixes) {
  NgramDrafter::Options o;
  o.min_ngram = 1;
  NgramDrafter d(o);
  // No earlier "3 4"; the 1-gram "4" occurred at index 0, followed by 9.
  EXPECT_EQ(d.Propose(std::vector<int32_t>{4, 9, 3, 4}, 1).tokens, (std::vector<int32_t>{9}));
}

}  // namespace
}  // namespace deepinfer
