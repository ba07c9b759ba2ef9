// Per-layer (hybrid sliding-window) mode of KvManager: window-bounded
// accounting checked against numbers computed by hand from the window rule
// (a windowed layer keeps the blocks holding positions >= s - W + 1, s = the
// latest claim's start) and against the pool's own counters.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "kv/kv_manager.h"

namespace deepinfer {
namespace {

constexpr int32_t kBlock = 4;

// Three layers: full, window 6, full.
KvManager MakeHybrid(int32_t pages, std::vector<int64_t> windows = {0, 6, 0}) {
  return KvManager(KvConfig{.num_blocks = pages, .block_size = kBlock, .layer_windows = std::move(windows)});
}

int64_t Resident(const std::vector<BlockId>& table) {
  return std::count_if(table.begin(), table.end(), [](BlockId b) { return b != kNoBlock; });
}

int64_t InUse(const KvManager& kv, const std::string& group) {
  for (const auto& g : kv.GroupUsages()) {
    if (g.name == group) return g.units_in_use;
  }
  ADD_FAILURE() << "no group " << group;
  return -1;
}

TEST(KvManagerWindowTest, ConfigRejectsNegativeWindows) {
  EXPECT_FALSE((KvConfig{.num_blocks = 4, .layer_windows = {0, -1}}).Validate().ok());
}

TEST(KvManagerWindowTest, PrefillThenReleaseBelowTheWindow) {
  KvManager kv = MakeHybrid(64);
  EXPECT_TRUE(kv.per_layer());
  ASSERT_TRUE(kv.Allocate(1, 10).ok());  // positions 0..9: 3 blocks in each layer
  const auto& t = kv.LayerBlockTables(1);
  ASSERT_EQ(t.size(), 3u);
  for (const auto& table : t) EXPECT_EQ(Resident(table), 3);
  EXPECT_EQ(kv.pool().num_referenced(), 9);
  // Claim at s = 10: window 6 reads keys >= 5, so block 0 (0..3) goes; block 1 (4..7) stays.
  ASSERT_TRUE(kv.Allocate(1, 1).ok());
  EXPECT_EQ(kv.LayerBlockTables(1)[1][0], kNoBlock);
  EXPECT_EQ(Resident(kv.LayerBlockTables(1)[1]), 2);
  EXPECT_EQ(Resident(kv.LayerBlockTables(1)[0]), 3);
  EXPECT_EQ(kv.LayerBlockTables(1)[1].size(), 3u);  // p / block_size indexing holds
  EXPECT_EQ(InUse(kv, "full"), 6);
  EXPECT_EQ(InUse(kv, "swa"), 2);
  kv.CheckInvariants();
  kv.Free(1);
  EXPECT_EQ(kv.pool().num_free(), 64);
  EXPECT_EQ(InUse(kv, "full"), 0);
  EXPECT_EQ(InUse(kv, "swa"), 0);
}

TEST(KvManagerWindowTest, KeepsTheBlockHoldingTheOldestKeyAQueryReads) {
  KvManager kv = MakeHybrid(64);
  ASSERT_TRUE(kv.Allocate(1, 8).ok());
  // A query at 8 with window 6 reads keys 3..8: block 0 (0..3) must stay.
  ASSERT_TRUE(kv.Allocate(1, 1).ok());
  EXPECT_NE(kv.LayerBlockTables(1)[1][0], kNoBlock);
  // At 9 it reads 4..9: block 0 goes.
  ASSERT_TRUE(kv.Allocate(1, 1).ok());
  EXPECT_EQ(kv.LayerBlockTables(1)[1][0], kNoBlock);
  EXPECT_NE(kv.LayerBlockTables(1)[1][1], kNoBlock);
}

// The acceptance bound: at every step of a long generation (with drafts of
// up to 5 tokens, some rejected) a windowed layer holds at most
// ceil((W - 1 + claim) / B) + 1 blocks, i.e. window + lookback + one block.
TEST(KvManagerWindowTest, WindowedLayerStaysBoundedThroughALongGeneration) {
  constexpr int64_t kWindow = 6;
  KvManager kv = MakeHybrid(4096);
  ASSERT_TRUE(kv.Allocate(7, 37).ok());  // prompt
  int64_t steps = 0;
  while (kv.NumTokens(7) < 4096) {
    const int64_t claim = 1 + steps % 6;  // 1 + k drafts, k in 0..5
    ASSERT_TRUE(kv.Allocate(7, claim).ok());
    const int64_t bound = (kWindow - 1 + claim + kBlock - 1) / kBlock + 1;
    EXPECT_LE(Resident(kv.LayerBlockTables(7)[1]), bound) << "step " << steps;
    EXPECT_LE(InUse(kv, "swa"), bound);
    EXPECT_EQ(InUse(kv, "full"), 2 * ((kv.NumTokens(7) + kBlock - 1) / kBlock));
    const int64_t rejected = (steps * 7) % claim;  // 0..claim-1: one token is always accepted
    kv.Rollback(7, rejected);
    kv.CheckInvariants();
    ++steps;
  }
  EXPECT_GT(steps, 1000);
}

TEST(KvManagerWindowTest, CapacityCreditsTheReleasedBlocks) {
  // 13 tokens = 4 blocks in each of 3 layers = 12 of 13 pages. A claim at
  // s = 13 first frees the window layer's blocks 0 and 1 (keys >= 8 are
  // read): up to 20 tokens (one more block per layer) needs 3 - 2 = 1 page,
  // 21 tokens (two more) needs 6 - 2 = 4.
  KvManager kv = MakeHybrid(13);
  ASSERT_TRUE(kv.Allocate(1, 13).ok());
  EXPECT_EQ(kv.NumAvailableBlocks(), 1);
  EXPECT_EQ(kv.NumBlocksNeeded(1, 4), 1);
  EXPECT_EQ(kv.NumBlocksNeeded(1, 3), 0);  // no new block; the release is pure gain
  EXPECT_TRUE(kv.CanAllocate(1, 7));
  EXPECT_FALSE(kv.CanAllocate(1, 8));
  EXPECT_EQ(kv.MaxAllocatableTokens(1, 100), 7);
  // All-or-nothing: a failed claim changes nothing.
  EXPECT_FALSE(kv.Allocate(1, 8).ok());
  EXPECT_EQ(kv.NumTokens(1), 13);
  EXPECT_EQ(Resident(kv.LayerBlockTables(1)[1]), 4);
  kv.CheckInvariants();
  ASSERT_TRUE(kv.Allocate(1, 7).ok());
  EXPECT_EQ(kv.NumAvailableBlocks(), 0);
  EXPECT_EQ(Resident(kv.LayerBlockTables(1)[1]), 3);
  kv.CheckInvariants();
}

TEST(KvManagerWindowTest, ForkSharesAndCopiesOnWrite) {
  KvManager kv = MakeHybrid(64);
  ASSERT_TRUE(kv.Allocate(1, 6).ok());
  ASSERT_TRUE(kv.Fork(1, 2).ok());
  EXPECT_EQ(kv.pool().num_referenced(), 6);  // shared
  ASSERT_TRUE(kv.Allocate(2, 1).ok());       // writes into the shared partial block of every layer
  const auto copies = kv.TakePendingCopies();
  EXPECT_EQ(copies.size(), 3u);
  for (size_t l = 0; l < 3; ++l) {
    EXPECT_NE(kv.LayerBlockTables(1)[l][1], kv.LayerBlockTables(2)[l][1]);
    EXPECT_EQ(kv.LayerBlockTables(1)[l][0], kv.LayerBlockTables(2)[l][0]);
  }
  kv.CheckInvariants();
  kv.Free(1);
  kv.Free(2);
  EXPECT_EQ(kv.pool().num_free(), 64);
}

TEST(KvManagerWindowTest, NoPrefixReuseInPerLayerMode) {
  KvManager kv = MakeHybrid(64);
  std::vector<int32_t> prompt(20, 3);
  ASSERT_TRUE(kv.Allocate(1, 20).ok());
  kv.CacheFullBlocks(1, prompt);
  kv.Free(1, prompt);
  EXPECT_EQ(kv.MatchPrefix(prompt).num_tokens, 0);
  EXPECT_EQ(kv.pool().num_free(), 64);
}

TEST(KvManagerWindowTest, MaxUnitsForSequence) {
  KvManager kv = MakeHybrid(64);
  // 100 tokens = 25 blocks; full layers 25 + 1, window 6 with claim 1: ceil(6/4) + 1 = 3, + 1.
  EXPECT_EQ(kv.MaxUnitsForSequence(100, 1), 2 * 26 + 4);
  KvManager legacy(KvConfig{.num_blocks = 64, .block_size = kBlock});
  EXPECT_EQ(legacy.MaxUnitsForSequence(100, 1), 26);
}

}  // namespace
}  // namespace deepinfer
