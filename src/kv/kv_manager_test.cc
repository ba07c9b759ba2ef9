#include "kv/kv_manager.h"

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

KvManager MakeKv(int32_t num_blocks, bool prefix_cache = true) {
  return KvManager(
      KvConfig{.num_blocks = num_blocks, .block_size = kBlock, .enable_prefix_cache = prefix_cache});
}

// Runs a whole prompt through a new sequence as one prefill and caches it.
void Prefill(KvManager& kv, SeqId seq, const std::vector<int32_t>& prompt) {
  PrefixMatch hit = kv.MatchPrefix(prompt);
  ASSERT_TRUE(kv.Allocate(seq, static_cast<int64_t>(prompt.size()) - hit.num_tokens, &hit).ok());
  kv.CacheFullBlocks(seq, prompt);
}

TEST(KvManagerTest, ConfigValidation) {
  EXPECT_FALSE((KvConfig{.num_blocks = 0}).Validate().ok());
  EXPECT_FALSE((KvConfig{.num_blocks = 4, .block_size = 0}).Validate().ok());
  EXPECT_TRUE((KvConfig{.num_blocks = 4}).Validate().ok());
}

TEST(KvManagerTest, TableGrowsOneBlockPerBlockSizeTokens) {
  KvManager kv = MakeKv(8);
  ASSERT_TRUE(kv.Allocate(1, 5).ok());
  EXPECT_EQ(kv.BlockTable(1).size(), 2u);
  ASSERT_TRUE(kv.Allocate(1, 3).ok());
  EXPECT_EQ(kv.BlockTable(1).size(), 2u);
  ASSERT_TRUE(kv.Allocate(1, 1).ok());
  EXPECT_EQ(kv.BlockTable(1).size(), 3u);
  EXPECT_EQ(kv.NumTokens(1), 9);
  EXPECT_DOUBLE_EQ(kv.UsageRatio(), 3.0 / 8);
  kv.CheckInvariants();
}

TEST(KvManagerTest, AllocationIsAllOrNothing) {
  KvManager kv = MakeKv(3);
  ASSERT_TRUE(kv.Allocate(1, 8).ok());
  EXPECT_FALSE(kv.CanAllocate(2, 5));
  Status s = kv.Allocate(2, 5);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_FALSE(kv.HasSequence(2));
  EXPECT_EQ(kv.MaxAllocatableTokens(2, 100), 4);
  EXPECT_EQ(kv.MaxAllocatableTokens(1, 100), 4);  // fills the third block
  kv.CheckInvariants();
}

TEST(KvManagerTest, FreeWithoutPrefixCacheReturnsEveryBlock) {
  KvManager kv = MakeKv(4, /*prefix_cache=*/false);
  Prefill(kv, 1, Range(0, 10));
  kv.Free(1, Range(0, 10));
  EXPECT_EQ(kv.pool().num_free(), 4);
  EXPECT_EQ(kv.MatchPrefix(Range(0, 10)).num_tokens, 0);
  kv.CheckInvariants();
}

TEST(KvManagerTest, SecondIdenticalBlockAlignedPromptComputesOnlyTheLastToken) {
  KvManager kv = MakeKv(8);
  auto prompt = Range(0, 8);
  Prefill(kv, 1, prompt);
  kv.Free(1, prompt);
  EXPECT_EQ(kv.UsageRatio(), 0.0);  // cached but unreferenced blocks are not "used"
  EXPECT_EQ(kv.NumAvailableBlocks(), 8);

  PrefixMatch hit = kv.MatchPrefix(prompt);
  EXPECT_EQ(hit.num_tokens, 7);
  ASSERT_TRUE(kv.Allocate(2, 1, &hit).ok());
  // The last token is written into a private copy of the cached last block.
  auto copies = kv.TakePendingCopies();
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].src, hit.blocks[1]);
  EXPECT_EQ(kv.BlockTable(2)[0], hit.blocks[0]);
  EXPECT_EQ(kv.BlockTable(2)[1], copies[0].dst);
  EXPECT_EQ(kv.prefix_cache().stats().hit_tokens, 7);
  kv.CheckInvariants();
}

TEST(KvManagerTest, SecondIdenticalUnalignedPromptReusesThePartialBlock) {
  KvManager kv = MakeKv(8);
  auto prompt = Range(0, 10);
  Prefill(kv, 1, prompt);
  kv.Free(1, prompt);  // blocks 0,1 full; block 2 cached as a partial entry (2 tokens)
  PrefixMatch hit = kv.MatchPrefix(prompt);
  EXPECT_EQ(hit.num_tokens, 9);
  ASSERT_TRUE(kv.Allocate(2, 1, &hit).ok());
  EXPECT_EQ(kv.TakePendingCopies().size(), 1u);
  EXPECT_EQ(kv.NumTokens(2), 10);
  kv.CheckInvariants();
}

TEST(KvManagerTest, SharedSystemPromptIsReusedAcrossRequests) {
  KvManager kv = MakeKv(16);
  auto system = Range(1000, 8);
  auto a = system, b = system;
  for (int32_t t : Range(1, 6)) a.push_back(t);
  for (int32_t t : Range(50, 9)) b.push_back(t);
  Prefill(kv, 1, a);
  PrefixMatch hit = kv.MatchPrefix(b);  // while request 1 still runs
  EXPECT_EQ(hit.num_tokens, 8);
  ASSERT_TRUE(kv.Allocate(2, static_cast<int64_t>(b.size()) - 8, &hit).ok());
  EXPECT_EQ(kv.BlockTable(1)[0], kv.BlockTable(2)[0]);
  EXPECT_EQ(kv.BlockTable(1)[1], kv.BlockTable(2)[1]);
  EXPECT_EQ(kv.pool().RefCount(kv.BlockTable(1)[0]), 2);
  EXPECT_TRUE(kv.TakePendingCopies().empty());  // block-aligned: nothing shared is written
  kv.CheckInvariants();
}

TEST(KvManagerTest, IdleCachedBlocksAreEvictedLruWhenThePoolRunsOut) {
  KvManager kv = MakeKv(4);
  auto a = Range(0, 8), b = Range(100, 8);
  Prefill(kv, 1, a);
  kv.Free(1, a);
  Prefill(kv, 2, b);
  kv.Free(2, b);
  EXPECT_EQ(kv.prefix_cache().num_idle(), 4);
  EXPECT_EQ(kv.pool().num_free(), 0);
  // A new sequence needing 2 blocks evicts prompt a's blocks (released first),
  // tail before head; prompt b stays fully cached.
  ASSERT_TRUE(kv.Allocate(3, 8).ok());
  EXPECT_EQ(kv.MatchPrefix(a).num_tokens, 0);
  EXPECT_EQ(kv.MatchPrefix(b).num_tokens, 7);
  kv.CheckInvariants();
}

TEST(KvManagerTest, AdoptingIdleBlocksTakesThemOutOfTheAvailableCount) {
  KvManager kv = MakeKv(3);
  auto a = Range(0, 9);
  Prefill(kv, 1, a);
  kv.Free(1);  // no tokens given: full blocks were cached by Prefill, block 2 is freed
  PrefixMatch hit = kv.MatchPrefix(a);
  EXPECT_EQ(hit.num_tokens, 8);
  // Adopting 2 idle blocks leaves 1 available: 1 more token fits, 5 do not.
  EXPECT_TRUE(kv.CanAllocate(2, 1, &hit));
  EXPECT_FALSE(kv.CanAllocate(2, 5, &hit));
  ASSERT_TRUE(kv.Allocate(2, 1, &hit).ok());
  kv.CheckInvariants();
}

TEST(KvManagerTest, ForkCopiesTheSharedPartialBlockOnFirstWrite) {
  KvManager kv = MakeKv(8);
  ASSERT_TRUE(kv.Allocate(1, 6).ok());  // blocks {0, 1}; block 1 holds 2 tokens
  ASSERT_TRUE(kv.Fork(1, 2).ok());
  EXPECT_FALSE(kv.Fork(1, 2).ok());
  EXPECT_EQ(kv.pool().RefCount(0), 2);
  EXPECT_EQ(kv.pool().RefCount(1), 2);
  EXPECT_EQ(kv.NumBlocksNeeded(2, 1), 1);  // the copy
  ASSERT_TRUE(kv.Allocate(2, 1).ok());
  auto copies = kv.TakePendingCopies();
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].src, 1);
  EXPECT_EQ(kv.BlockTable(2), (std::vector<BlockId>{0, copies[0].dst}));
  // The parent is now the only owner of block 1 and writes in place.
  ASSERT_TRUE(kv.Allocate(1, 1).ok());
  EXPECT_TRUE(kv.TakePendingCopies().empty());
  EXPECT_EQ(kv.BlockTable(1), (std::vector<BlockId>{0, 1}));
  EXPECT_EQ(kv.pool().RefCount(0), 2);
  kv.Free(1);
  kv.Free(2);
  EXPECT_EQ(kv.pool().num_free(), 8);
  kv.CheckInvariants();
}

TEST(KvManagerTest, ForkAtABlockBoundaryNeedsNoCopy) {
  KvManager kv = MakeKv(8);
  ASSERT_TRUE(kv.Allocate(1, 8).ok());
  ASSERT_TRUE(kv.Fork(1, 2).ok());
  ASSERT_TRUE(kv.Allocate(1, 1).ok());
  ASSERT_TRUE(kv.Allocate(2, 1).ok());
  EXPECT_TRUE(kv.TakePendingCopies().empty());
  EXPECT_NE(kv.BlockTable(1)[2], kv.BlockTable(2)[2]);
  kv.CheckInvariants();
}

TEST(KvManagerTest, RollbackReleasesBlocksThatBecomeEmpty) {
  KvManager kv = MakeKv(8);
  ASSERT_TRUE(kv.Allocate(1, 7).ok());
  ASSERT_TRUE(kv.Allocate(1, 3).ok());  // speculative: 1 + 2 drafts -> 10 tokens, 3 blocks
  EXPECT_EQ(kv.BlockTable(1).size(), 3u);
  kv.Rollback(1, 2);  // both drafts rejected
  EXPECT_EQ(kv.NumTokens(1), 8);
  EXPECT_EQ(kv.BlockTable(1).size(), 2u);
  EXPECT_EQ(kv.pool().num_free(), 6);
  kv.Rollback(1, 0);
  EXPECT_EQ(kv.NumTokens(1), 8);
  kv.CheckInvariants();
}

TEST(KvManagerTest, WritingAfterRollingBackIntoACachedBlockCopiesIt) {
  KvManager kv = MakeKv(8);
  auto tokens = Range(0, 8);
  Prefill(kv, 1, tokens);  // both blocks cached
  kv.Rollback(1, 2);
  ASSERT_TRUE(kv.Allocate(1, 2).ok());
  auto copies = kv.TakePendingCopies();
  ASSERT_EQ(copies.size(), 1u);  // the cached content stays intact for others
  EXPECT_EQ(kv.MatchPrefix(Range(0, 9)).num_tokens, 8);
  kv.CheckInvariants();
}

TEST(KvManagerTest, HashCollisionLeavesTheBlockUncachedAndNothingBreaks) {
  KvManager kv(KvConfig{.num_blocks = 8, .block_size = kBlock},
               [](uint64_t, std::span<const int32_t>) { return uint64_t{7}; });
  auto a = Range(0, 5), b = Range(100, 5);
  Prefill(kv, 1, a);
  Prefill(kv, 2, b);  // same key as a's first block: not cached
  kv.Free(1, a);
  kv.Free(2, b);
  EXPECT_EQ(kv.MatchPrefix(a).num_tokens, 4);
  EXPECT_EQ(kv.MatchPrefix(b).num_tokens, 0);
  kv.CheckInvariants();
}

TEST(KvManagerDeathTest, MisuseIsABug) {
  KvManager kv = MakeKv(4);
  EXPECT_DEATH(kv.Free(99), "unknown KV sequence");
  ASSERT_TRUE(kv.Allocate(1, 2).ok());
  EXPECT_DEATH(kv.Rollback(1, 3), "check failed");
}

}  // namespace
}  // namespace deepinfer
