#include "kv/prefix_cache.h"

#include <gtest/gtest.h>

#include <vector>

namespace deepinfer {
namespace {

constexpr int32_t kBlock = 4;

std::vector<int32_t> Range(int32_t from, int32_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) v[i] = from + i;
  return v;
}

std::span<const int32_t> Block(const std::vector<int32_t>& t, int i) {
  return std::span<const int32_t>(t).subspan(static_cast<size_t>(i) * kBlock, kBlock);
}

// Caches tokens' full blocks in blocks[0..] and returns the chain.
std::vector<ChainLink> InsertChain(PrefixCache& cache, const std::vector<int32_t>& tokens,
                                   const std::vector<BlockId>& blocks) {
  std::vector<ChainLink> chain;
  ChainLink parent;
  for (size_t i = 0; i < blocks.size(); ++i) {
    auto link = cache.InsertFull(parent, Block(tokens, static_cast<int>(i)), blocks[i]);
    EXPECT_TRUE(link.has_value());
    parent = *link;
    chain.push_back(parent);
  }
  return chain;
}

TEST(PrefixCacheTest, MatchesFullBlocksAlongTheChain) {
  PrefixCache cache(kBlock, true);
  auto tokens = Range(100, 12);
  InsertChain(cache, tokens, {7, 3, 5});
  PrefixMatch m = cache.Match(tokens, 12);
  EXPECT_EQ(m.blocks, (std::vector<BlockId>{7, 3, 5}));
  EXPECT_EQ(m.num_tokens, 12);
  EXPECT_EQ(m.full_chain.size(), 3u);
  EXPECT_EQ(m.query_tokens, 12);

  // A longer query that diverges in the third block reuses the first two.
  auto other = tokens;
  other[9] = -5;
  m = cache.Match(other, 100);
  EXPECT_EQ(m.blocks.size(), 3u);  // two full blocks + the third matched in part (tokens 8..8)
  EXPECT_EQ(m.num_tokens, 9);
  EXPECT_EQ(m.full_chain.size(), 2u);
}

TEST(PrefixCacheTest, SameBlockTokensAfterADifferentPrefixDoNotMatch) {
  PrefixCache cache(kBlock, true);
  std::vector<int32_t> a = {1, 2, 3, 4, 9, 9, 9, 9};
  std::vector<int32_t> b = {5, 6, 7, 8, 9, 9, 9, 9};
  InsertChain(cache, a, {0, 1});
  EXPECT_EQ(cache.Match(b, 8).num_tokens, 0);
}

TEST(PrefixCacheTest, MaxTokensCapsTheMatchInsideABlock) {
  PrefixCache cache(kBlock, true);
  auto tokens = Range(0, 8);
  InsertChain(cache, tokens, {0, 1});
  // Capped at 7 (the caller must compute at least the last token): block 1 is used in part.
  PrefixMatch m = cache.Match(tokens, 7);
  EXPECT_EQ(m.blocks, (std::vector<BlockId>{0, 1}));
  EXPECT_EQ(m.num_tokens, 7);
  EXPECT_EQ(m.full_chain.size(), 1u);
}

TEST(PrefixCacheTest, HashCollisionsAreVerifiedAndNeverReturnWrongBlocks) {
  // Every block hashes to the same key.
  PrefixCache cache(kBlock, true, [](uint64_t, std::span<const int32_t>) { return uint64_t{42}; });
  auto a = Range(0, 4);
  auto b = Range(50, 4);
  ASSERT_TRUE(cache.InsertFull(ChainLink{}, a, 0).has_value());
  EXPECT_FALSE(cache.InsertFull(ChainLink{}, b, 1).has_value());  // collides: stays uncached
  EXPECT_FALSE(cache.Contains(1));
  EXPECT_EQ(cache.Match(b, 4).num_tokens, 0);
  EXPECT_EQ(cache.Match(a, 4).num_tokens, 4);

  // Identical content under another parent also collides and is rejected on lookup.
  auto chain = InsertChain(cache, a, {0});
  std::vector<int32_t> aa = {0, 1, 2, 3, 0, 1, 2, 3};
  EXPECT_FALSE(cache.InsertFull(chain[0], Block(aa, 1), 2).has_value());
  EXPECT_EQ(cache.Match(aa, 8).num_tokens, 4);
}

TEST(PrefixCacheTest, DuplicateContentReturnsTheExistingEntry) {
  PrefixCache cache(kBlock, true);
  auto tokens = Range(0, 4);
  auto first = cache.InsertFull(ChainLink{}, tokens, 0);
  auto again = cache.InsertFull(ChainLink{}, tokens, 1);  // computed twice by two sequences
  ASSERT_TRUE(first && again);
  EXPECT_EQ(first->entry, again->entry);
  EXPECT_FALSE(cache.Contains(1));
}

TEST(PrefixCacheTest, EvictsLeastRecentlyReleasedFirst) {
  PrefixCache cache(kBlock, true);
  auto a = Range(0, 4), b = Range(10, 4), c = Range(20, 4);
  cache.InsertFull(ChainLink{}, a, 0);
  cache.InsertFull(ChainLink{}, b, 1);
  cache.InsertFull(ChainLink{}, c, 2);
  cache.MarkIdle(0);
  cache.MarkIdle(1);
  cache.MarkIdle(2);
  cache.MarkInUse(0);  // a hit on block 0 ...
  cache.MarkIdle(0);   // ... and its release makes it the most recent
  EXPECT_EQ(cache.num_idle(), 3);
  EXPECT_EQ(*cache.EvictLru(), 1);
  EXPECT_EQ(*cache.EvictLru(), 2);
  EXPECT_EQ(*cache.EvictLru(), 0);
  EXPECT_FALSE(cache.EvictLru().has_value());
  EXPECT_EQ(cache.num_entries(), 0);
  EXPECT_EQ(cache.Match(a, 4).num_tokens, 0);
}

TEST(PrefixCacheTest, ChildOfAnEvictedParentIsUnreachableEvenWithTheSameKey) {
  PrefixCache cache(kBlock, true);
  auto tokens = Range(0, 8);
  InsertChain(cache, tokens, {0, 1});
  cache.MarkIdle(0);
  cache.MarkIdle(1);
  cache.MarkInUse(1);
  ASSERT_EQ(*cache.EvictLru(), 0);  // parent evicted; child 1 is an orphan
  // The same first block recomputed into block 5 has the same chain key but a
  // new entry id, so the orphan (whose parent id is gone) is not matched.
  ASSERT_TRUE(cache.InsertFull(ChainLink{}, Block(tokens, 0), 5).has_value());
  PrefixMatch m = cache.Match(tokens, 8);
  EXPECT_EQ(m.blocks, (std::vector<BlockId>{5}));
  EXPECT_EQ(m.num_tokens, 4);
}

TEST(PrefixCacheTest, PartialBlocksMatchByLongestCommonPrefix) {
  PrefixCache cache(kBlock, true);
  auto chain = InsertChain(cache, Range(0, 4), {0});
  std::vector<int32_t> tail = {7, 8, 9};
  EXPECT_TRUE(cache.InsertPartial(chain[0].entry, tail, 1));
  EXPECT_FALSE(cache.InsertPartial(chain[0].entry, std::vector<int32_t>{7, 8}, 2));  // covered by block 1
  std::vector<int32_t> query = {0, 1, 2, 3, 7, 8, 6, 6};
  PrefixMatch m = cache.Match(query, 8);
  EXPECT_EQ(m.blocks, (std::vector<BlockId>{0, 1}));
  EXPECT_EQ(m.num_tokens, 6);
}

TEST(PrefixCacheTest, DisabledCacheStoresAndFindsNothing) {
  PrefixCache cache(kBlock, false);
  auto tokens = Range(0, 8);
  EXPECT_FALSE(cache.InsertFull(ChainLink{}, Block(tokens, 0), 0).has_value());
  EXPECT_FALSE(cache.InsertPartial(kRootEntry, std::vector<int32_t>{1}, 1));
  EXPECT_EQ(cache.Match(tokens, 8).num_tokens, 0);
  EXPECT_EQ(cache.num_entries(), 0);
}

TEST(PrefixCacheTest, HitRatioCountsTokens) {
  PrefixCache cache(kBlock, true);
  cache.RecordQuery(10, 0);
  cache.RecordQuery(10, 5);
  EXPECT_EQ(cache.stats().query_tokens, 20);
  EXPECT_DOUBLE_EQ(cache.stats().HitRatio(), 0.25);
}

}  // namespace
}  // namespace deepinfer
