// Per-layer (hybrid sliding-window) mode of KvManager: window-bounded
// accounting checked against numbers computed by hand from the window rule
// (a windowed layer keeps the blocks holding positions >= s - W + 1, s = the
// latest claim's start) and against the pool's own counters.
#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <string>
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

// Prefix caching with bounded replay. Checkpoint spacing 12 tokens = 3
// blocks of 4; window 6: a query at C reads keys >= C - 5, i.e. blocks from
// (C - 5) / 4 on. Checkpoint 12 keeps windowed blocks 1, 2; checkpoint 24
// keeps 4, 5; block 0 and 3 are wanted by no periodic checkpoint.
KvManager MakeCaching(int32_t pages) {
  return KvManager(KvConfig{
      .num_blocks = pages, .block_size = kBlock, .layer_windows = {0, 6, 0}, .swa_replay_tokens = 12});
}

std::vector<int32_t> Tokens(int n, int32_t first = 3) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back(first + i);
  return t;
}

TEST(KvManagerWindowTest, ReplayTokensBelowTheWindowIsAConfigError) {
  const KvConfig bad{.num_blocks = 8, .layer_windows = {0, 6}, .swa_replay_tokens = 5};
  const Status st = bad.Validate();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("DEEPINFER_SWA_REPLAY_TOKENS"), std::string::npos) << st.message();
  EXPECT_TRUE((KvConfig{.num_blocks = 8, .layer_windows = {0, 6}, .swa_replay_tokens = 6}).Validate().ok());
  // Without the prefix cache there are no checkpoints to space.
  EXPECT_TRUE(
      (KvConfig{
           .num_blocks = 8, .enable_prefix_cache = false, .layer_windows = {0, 6}, .swa_replay_tokens = 5})
          .Validate()
          .ok());
}

// One prefill of 20 tokens, freed: the end checkpoint (20) keeps windowed
// blocks 3, 4, the periodic one at 12 blocks 1, 2; block 0 goes back to the pool.
TEST(KvManagerWindowTest, EndOfPrefixCheckpointGivesAHitWithoutReplay) {
  KvManager kv = MakeCaching(64);
  const std::vector<int32_t> prompt = Tokens(20);
  ASSERT_TRUE(kv.Allocate(1, 20).ok());
  const std::vector<std::vector<BlockId>> original = kv.LayerBlockTables(1);
  kv.CacheFullBlocks(1, prompt);
  kv.Free(1, prompt);
  kv.CheckInvariants();
  EXPECT_EQ(kv.pool().num_free(), 64 - (2 * 5 + 4));  // full layers' 10 pages + windowed 1..4
  EXPECT_EQ(kv.NumAvailableBlocks(), 64);             // all of it evictable
  EXPECT_EQ(kv.UsageRatio(), 0.0);

  std::vector<int32_t> longer = prompt;
  longer.insert(longer.end(), {90, 91, 92});
  const PrefixMatch hit = kv.MatchPrefix(longer);
  EXPECT_EQ(hit.num_tokens, 20);
  EXPECT_EQ(hit.replay_tokens, 0);
  ASSERT_TRUE(kv.Allocate(2, 3, &hit).ok());
  const auto& t = kv.LayerBlockTables(2);
  for (size_t b = 0; b < 5; ++b) {
    EXPECT_EQ(t[0][b], original[0][b]);  // the very pages the first sequence computed
    EXPECT_EQ(t[2][b], original[2][b]);
  }
  // A query at 20 reads window keys >= 15: blocks 3, 4 adopted, 0..2 released.
  EXPECT_EQ(t[1][0], kNoBlock);
  EXPECT_EQ(t[1][2], kNoBlock);
  EXPECT_EQ(t[1][3], original[1][3]);
  EXPECT_EQ(t[1][4], original[1][4]);
  EXPECT_EQ(t[1].size(), 6u);  // + the new block for 20..22
  EXPECT_EQ(kv.swa_replayed_tokens(), 0);
  EXPECT_EQ(kv.prefix_cache().stats().hit_tokens, 20);
  kv.CheckInvariants();
  kv.Free(2);
  kv.CheckInvariants();
  EXPECT_EQ(kv.NumAvailableBlocks(), 64);
}

// Decoding one token at a time slides the window past everything; only the
// checkpoints' pages survive. A request sharing 22 tokens finds full
// attention cached for 20 but windowed KV only at checkpoint 12: it replays 8.
TEST(KvManagerWindowTest, PartialMatchReplaysFromTheDeepestCheckpoint) {
  KvManager kv = MakeCaching(64);
  const std::vector<int32_t> tokens = Tokens(30);
  ASSERT_TRUE(kv.Allocate(1, 9).ok());
  for (int64_t n = 9; n < 30; ++n) {
    kv.CacheFullBlocks(1, std::span<const int32_t>(tokens).first(static_cast<size_t>(n)));
    ASSERT_TRUE(kv.Allocate(1, 1).ok());
    kv.CheckInvariants();
  }
  // At s = 29 window keys >= 24 are read: blocks 0..5 were released.
  EXPECT_EQ(Resident(kv.LayerBlockTables(1)[1]), 2);
  kv.CacheFullBlocks(1, tokens);
  EXPECT_EQ(InUse(kv, "swa"), 2);  // checkpoint pages are not the sequence's
  // While the sequence runs its checkpoints are already usable.
  std::vector<int32_t> other(tokens.begin(), tokens.begin() + 22);
  other.insert(other.end(), {70, 71, 72, 73});
  PrefixMatch hit = kv.MatchPrefix(other);
  EXPECT_EQ(hit.num_tokens, 12);
  EXPECT_EQ(hit.replay_tokens, 8);
  // Sharing 26: blocks 0..5 match; checkpoint 24 (blocks 4, 5) covers it.
  std::vector<int32_t> more(tokens.begin(), tokens.begin() + 26);
  more.push_back(99);
  EXPECT_EQ(kv.MatchPrefix(more).num_tokens, 24);
  EXPECT_EQ(kv.MatchPrefix(more).replay_tokens, 0);

  ASSERT_TRUE(kv.Allocate(2, static_cast<int64_t>(other.size()) - 12, &hit).ok());
  EXPECT_EQ(kv.swa_replayed_tokens(), 8);
  const auto& t = kv.LayerBlockTables(2);
  EXPECT_EQ(t[0][2], kv.LayerBlockTables(1)[0][2]);  // shared full-attention pages
  EXPECT_EQ(t[1][0], kNoBlock);
  EXPECT_NE(t[1][1], kNoBlock);
  EXPECT_NE(t[0][3], kv.LayerBlockTables(1)[0][3]);  // recomputed into its own page
  kv.CheckInvariants();
  kv.Free(2, other);
  kv.Free(1, tokens);
  kv.CheckInvariants();
  EXPECT_EQ(kv.NumAvailableBlocks(), 64);
  // The end checkpoint: 7 full blocks (28) were cached; a query at 28 reads
  // blocks 5, 6. Block 5 left the window at the last claim (29) but was kept
  // for the boundary 28 that claim started in.
  std::vector<int32_t> next = tokens;
  next.push_back(99);
  const PrefixMatch end = kv.MatchPrefix(next);
  EXPECT_EQ(end.num_tokens, 28);
  EXPECT_EQ(end.replay_tokens, 0);
}

// AddCheckpoint (the scheduler names the prompt's end): a boundary between
// the periodic ones gets its window pages kept too.
TEST(KvManagerWindowTest, NamedCheckpointAvoidsTheReplay) {
  for (bool named : {false, true}) {
    KvManager kv = MakeCaching(64);
    const std::vector<int32_t> tokens = Tokens(40);
    ASSERT_TRUE(kv.Allocate(1, 21).ok());  // a 21-token prompt
    if (named) kv.AddCheckpoint(1, 21);    // boundary 20: windowed blocks 3, 4
    for (int64_t n = 21; n < 40; ++n) {
      kv.CacheFullBlocks(1, std::span<const int32_t>(tokens).first(static_cast<size_t>(n)));
      ASSERT_TRUE(kv.Allocate(1, 1).ok());
    }
    std::vector<int32_t> prompt(tokens.begin(), tokens.begin() + 21);
    prompt.push_back(7);
    const PrefixMatch hit = kv.MatchPrefix(prompt);
    EXPECT_EQ(hit.num_tokens, named ? 20 : 12);
    EXPECT_EQ(hit.replay_tokens, named ? 0 : 8);
    kv.CheckInvariants();
    kv.Free(1, tokens);
    kv.CheckInvariants();
  }
}

// Under pressure the cache gives its pages back: a sequence that needs the
// whole pool gets it, and the bookkeeping stays exact throughout.
TEST(KvManagerWindowTest, CachedPagesAreEvictedOnDemand) {
  KvManager kv = MakeCaching(30);
  const std::vector<int32_t> prompt = Tokens(20);
  ASSERT_TRUE(kv.Allocate(1, 20).ok());
  kv.Free(1, prompt);
  EXPECT_LT(kv.pool().num_free(), 30);
  ASSERT_EQ(kv.MatchPrefix(Tokens(24)).num_tokens, 20);
  const std::vector<int32_t> other = Tokens(40, 500);
  // 40 tokens = 10 blocks: 30 pages in one claim, more than the free ones.
  ASSERT_TRUE(kv.CanAllocate(2, 40));
  ASSERT_TRUE(kv.Allocate(2, 40).ok());
  kv.CheckInvariants();
  EXPECT_EQ(kv.NumAvailableBlocks(), 0);
  EXPECT_EQ(kv.MatchPrefix(Tokens(24)).num_tokens, 0);
  kv.Free(2, other);
  kv.CheckInvariants();
  EXPECT_EQ(kv.NumAvailableBlocks(), 30);
}

// A hit on a prefix that a forked pair shares, with rollbacks of drafts.
TEST(KvManagerWindowTest, ForksAndRollbacksKeepTheRecordsConsistent) {
  KvManager kv = MakeCaching(128);
  const std::vector<int32_t> tokens = Tokens(40);
  ASSERT_TRUE(kv.Allocate(1, 10).ok());
  kv.CacheFullBlocks(1, std::span<const int32_t>(tokens).first(10));
  ASSERT_TRUE(kv.Fork(1, 2).ok());
  for (int64_t n = 10; n < 36; n += 2) {
    for (SeqId s : {1, 2}) {
      ASSERT_TRUE(kv.Allocate(s, 4).ok());  // 1 + 3 drafts, 2 rejected
      kv.Rollback(s, 2);
      kv.CacheFullBlocks(s, std::span<const int32_t>(tokens).first(static_cast<size_t>(n + 2)));
      kv.CheckInvariants();
    }
  }
  kv.Free(1, std::span<const int32_t>(tokens).first(36));
  kv.CheckInvariants();
  const PrefixMatch hit = kv.MatchPrefix(tokens);
  EXPECT_GE(hit.num_tokens, 24);
  EXPECT_LE(hit.replay_tokens, 12);
  ASSERT_TRUE(kv.Allocate(3, 40 - hit.num_tokens, &hit).ok());
  kv.CheckInvariants();
  kv.Free(2, std::span<const int32_t>(tokens).first(36));
  kv.Free(3);
  kv.CheckInvariants();
  EXPECT_EQ(kv.NumAvailableBlocks(), 128);
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
