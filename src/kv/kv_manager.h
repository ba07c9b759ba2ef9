// KvManager: per-sequence block tables over one BlockPool, with prefix reuse.
//
// A sequence's KV lives in `blocks`: position p is in blocks[p / block_size] at
// slot p % block_size. `num_tokens` counts the positions the sequence has
// claimed (written, or about to be written by a scheduled step); always
// blocks.size() == ceil(num_tokens / block_size). Claiming is all-or-nothing:
// Allocate either grows the table to cover the new positions or changes
// nothing and returns ResourceExhausted.
//
// Blocks are shared in two ways, both through reference counts:
//   - prefix reuse: a new sequence adopts the blocks of a PrefixMatch;
//   - Fork (n > 1): a child shares all of its parent's blocks.
// A block that is shared, or registered in the prefix cache, is never written
// in place: the first Allocate that would write into it (only the last,
// partly filled block can be written) copies it to a fresh block and queues a
// BlockCopy for the runner (TakePendingCopies). Full blocks enter the prefix
// cache once their KV is known to be computed (CacheFullBlocks); Free keeps
// them cached, and also caches the sequence's last, partly filled block.
//
// Capacity: free blocks plus idle cached blocks (evicted LRU-first on demand)
// are "available". UsageRatio counts only blocks referenced by sequences, so
// idle cached blocks do not count as used (deepinfer_kv_cache_usage_ratio).
//
// Per-layer (hybrid sliding-window) mode: KvConfig::layer_windows set. The
// pool's unit is then one layer's block (a "page"), every KV layer has its
// own table (LayerBlockTables), and a claim takes one page per layer per new
// block, so all layers draw from one fungible pool. A layer with window W > 0
// reads, from a query at position q, only keys > q - W; queries are only
// ever computed at positions >= the start s of the latest claim (Rollback
// never goes back past it), so each Allocate first releases that layer's
// blocks whose positions all lie below s - W + 1 and leaves kNoBlock in their
// slots (p / block_size indexing still holds). A windowed layer therefore
// holds at most ceil((W - 1 + claim) / block_size) + 1 blocks of a sequence,
// claim = the positions of the step (the chunk, or 1 + drafts).
//
// Prefix caching in per-layer mode (bounded replay, docs/kv-cache.md). A
// cached block of the chain is a *record* (`CachedPages`, keyed by a virtual
// id that the PrefixCache uses as its BlockId) holding one pool reference on
// each of its pages: every full-attention layer's page, and a windowed
// layer's page only where a *checkpoint* needs it. A checkpoint at block
// boundary C keeps, per windowed layer, the pages a query at C reads (blocks
// >= Releasable(W, C)); the sequence can then resume computing at C exactly.
// Checkpoints sit at every multiple of KvConfig::swa_replay_tokens (rounded
// down to whole blocks) along a prefix and at boundaries the caller names
// (AddCheckpoint: the end of a prompt), both kept when the window would
// release the page; and at the deepest covered boundary when a sequence is
// freed (the window's pages for the latest boundary before the claim are
// kept while the claim is in that block, for this).
// MatchPrefix walks the full-attention chain to its deepest block M and
// returns the deepest checkpoint P <= M; positions [P, M) are recomputed
// ("replayed", PrefixMatch::replay_tokens) - fewer than swa_replay_tokens
// while the checkpoints are resident. Pages held only by records count as
// available: an idle record (no sequence uses it) goes whole, LRU-first; after
// those, a windowed page of a record still in use can go alone (a lost
// checkpoint: a later hit falls back to the one before, still exact).
//
// Extension points (later issues; the shape above is chosen so they fit):
//   - Tiered KV (memory -> disk): EvictLru becomes "demote": the entry keeps
//     its chain key and the block's bytes go to a slower tier instead of being
//     dropped. Match then also returns blocks to load, delivered to the runner
//     the way BlockCopy is (a transfer list executed before the forward).
//   - Speculative decoding: Allocate claims 1 + k positions, Rollback returns
//     the rejected ones (freeing blocks that become empty).
//
// Thread-safety: none. The scheduler thread is the only caller; nothing here
// touches device memory, so the runner may read a copied table concurrently.
// Precondition violations (unknown sequence, rollback past the start) are bugs
// and DI_CHECK-fail; running out of blocks is a Status.
#pragma once

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "kv/block_pool.h"
#include "kv/kv_types.h"
#include "kv/prefix_cache.h"

namespace deepinfer {

struct KvConfig {
  int32_t num_blocks = 0;
  int32_t block_size = 16;
  bool enable_prefix_cache = true;
  // Per-layer mode (see above) when non-empty: one window per KV layer (0 =
  // full attention); num_blocks then counts single-layer pages.
  std::vector<int64_t> layer_windows;
  // Per-layer mode with prefix caching: checkpoint spacing along a cached
  // prefix, so the most tokens a hit recomputes (DEEPINFER_SWA_REPLAY_TOKENS).
  // Must be >= every window: closer checkpoints would keep more windowed KV
  // than the whole prefix has.
  int64_t swa_replay_tokens = 140;

  // InvalidArgument naming the field when num_blocks < 1 or block_size < 1,
  // or swa_replay_tokens is below a window (per-layer mode, prefix cache on).
  Status Validate() const;
};

class KvManager {
 public:
  // REQUIRES: config.Validate().ok().
  explicit KvManager(const KvConfig& config, PrefixCache::HashFn hash = DefaultBlockHash);

  int32_t block_size() const { return block_size_; }
  int32_t num_blocks() const { return pool_.num_blocks(); }
  const BlockPool& pool() const { return pool_; }
  const PrefixCache& prefix_cache() const { return cache_; }

  // Cached prefix of a new sequence's tokens, capped at size - 1 tokens so
  // that at least the last token is computed and yields logits.
  PrefixMatch MatchPrefix(std::span<const int32_t> tokens) const;

  bool HasSequence(SeqId seq) const { return seqs_.count(seq) != 0; }
  int32_t num_sequences() const { return static_cast<int32_t>(seqs_.size()); }

  // Blocks that must come from the available pool to claim num_new_tokens
  // more positions. For a sequence not yet known, `start` (may be null) is the
  // prefix it will adopt; for a known sequence `start` must be null.
  int32_t NumBlocksNeeded(SeqId seq, int64_t num_new_tokens, const PrefixMatch* start = nullptr) const;
  bool CanAllocate(SeqId seq, int64_t num_new_tokens, const PrefixMatch* start = nullptr) const;
  // The largest n <= limit with CanAllocate(seq, n, start).
  int64_t MaxAllocatableTokens(SeqId seq, int64_t limit, const PrefixMatch* start = nullptr) const;

  // Claims num_new_tokens more positions (creating the sequence, adopting
  // `start`, if it is new). ResourceExhausted changes nothing.
  // REQUIRES: `start` came from MatchPrefix with no mutation since.
  Status Allocate(SeqId seq, int64_t num_new_tokens, const PrefixMatch* start = nullptr);

  // Declares that the KV of positions [0, computed_tokens.size()) is written
  // and was computed from these tokens; full blocks among them enter the
  // prefix cache (in order; a hash collision stops caching for this sequence).
  void CacheFullBlocks(SeqId seq, std::span<const int32_t> computed_tokens);

  // Per-layer mode with prefix caching: also keep a checkpoint at the block
  // boundary at or below `position` (e.g. the end of the prompt, so a repeat
  // or an extension of it replays nothing). No-op in other modes.
  void AddCheckpoint(SeqId seq, int64_t position);

  // Gives back the last num_tokens claimed positions (rejected drafts, a
  // discarded slot). Blocks that become empty are released.
  // REQUIRES: 0 <= num_tokens <= NumTokens(seq).
  void Rollback(SeqId seq, int64_t num_tokens);

  // Makes `child` share all of `parent`'s blocks and positions. The shared
  // last block is copied on the first write by either (see TakePendingCopies).
  // InvalidArgument when parent is unknown or child exists.
  Status Fork(SeqId parent, SeqId child);

  // Drops the sequence and its references. If computed_tokens is given (as
  // for CacheFullBlocks) its computed blocks stay cached for reuse, including
  // the partly filled last one.
  void Free(SeqId seq, std::span<const int32_t> computed_tokens = {});

  // Copies queued by Allocate since the last call, in execution order. The
  // runner must perform all of them before the step's forward pass, even
  // those whose destination has since been released (harmless: a released
  // block is rewritten before it is read again, and a destination that was
  // cached on Free relies on its copy having run).
  std::vector<BlockCopy> TakePendingCopies();

  // REQUIRES: HasSequence(seq).
  const std::vector<BlockId>& BlockTable(SeqId seq) const;
  int64_t NumTokens(SeqId seq) const;

  // Per-layer mode: tokens that prefix hits found cached for full attention
  // but recomputed because no windowed checkpoint covered them (summed over
  // adopted matches; deepinfer_swa_replayed_tokens_total).
  int64_t swa_replayed_tokens() const { return swa_replayed_tokens_; }

  // Per-layer mode: one table per KV layer (kNoBlock where a window's blocks
  // were released). REQUIRES: per_layer() and HasSequence(seq).
  const std::vector<std::vector<BlockId>>& LayerBlockTables(SeqId seq) const;
  bool per_layer() const { return !windows_.empty(); }
  // Pool units (blocks, or pages in per-layer mode) one sequence of
  // num_tokens positions can need at most when it is alone, its last step
  // claiming at most max_claim positions (admission: the pool must hold it).
  int64_t MaxUnitsForSequence(int64_t num_tokens, int64_t max_claim) const;

  // Layer groups (full attention; each distinct window) and the pool units
  // their sequences reference. Legacy mode has one group "all". A unit shared
  // by forks counts once.
  struct GroupUsage {
    std::string name;  // "full", "swa" (or "swa_W" when windows differ), "all"
    int64_t num_layers;
    int64_t window;
    int64_t units_in_use;
  };
  std::vector<GroupUsage> GroupUsages() const;

  // Pool units referenced by live sequences (not those only the prefix cache holds).
  int64_t NumUnitsInUse() const;
  // Blocks referenced by live sequences / pool size.
  double UsageRatio() const;
  // Free blocks plus idle cached blocks.
  // Per-layer mode: free pages plus pages only the prefix cache holds and may drop.
  int32_t NumAvailableBlocks() const {
    if (per_layer()) return pool_.num_free() + static_cast<int32_t>(idle_evictable_ + loose_.size());
    return pool_.num_free() + cache_.num_idle();
  }

  // DI_CHECK-fails if the bookkeeping is inconsistent: reference counts differ
  // from the block tables, a block is in two states, a table does not match
  // its token count. For tests and debug builds; O(blocks + table entries).
  void CheckInvariants() const;

 private:
  struct SequenceKv {
    std::vector<BlockId> blocks;
    int64_t num_tokens = 0;
    std::vector<ChainLink> cached_chain;  // prefix-cache links of blocks[0, size)
    bool caching_stopped = false;         // a hash collision broke the chain
    // Per-layer mode: tables per KV layer, and per layer the number of
    // leading slots released (kNoBlock).
    std::vector<std::vector<BlockId>> layers;
    std::vector<int64_t> released;
    // Per-layer prefix caching: per block index, the record this sequence
    // uses (counted in its `users`), kNoBlock where none.
    std::vector<BlockId> keys;
    std::vector<int64_t> checkpoints;  // AddCheckpoint's block boundaries
    // Windowed pages kept only for the latest block boundary before the
    // claim (the end checkpoint Free may keep); dropped when it moves on.
    struct Rolling {
      size_t layer;
      int64_t block;
      BlockId page;
    };
    std::vector<Rolling> rolling;
  };
  // A cached block in per-layer mode: one page per layer (kNoBlock where a
  // windowed page is not kept), each holding one pool reference.
  struct CachedPages {
    std::vector<BlockId> pages;
    int32_t users = 0;      // sequences with this record in `keys`
    bool inserted = false;  // in the prefix cache (else private to its creator)
  };

  int64_t BlocksFor(int64_t num_tokens) const { return (num_tokens + block_size_ - 1) / block_size_; }
  bool NeedsCopyBeforeWrite(BlockId block) const;
  BlockId AllocateBlock();
  void ReleaseBlock(BlockId block);
  // Per-layer mode counterparts of the public operations.
  int64_t LayerNeeded(const SequenceKv* s, int64_t num_new_tokens, int64_t have) const;
  void LayerAllocate(SequenceKv& s, int64_t num_new_tokens);
  void LayerRollback(SequenceKv& s, int64_t num_tokens);
  void LayerRelease(BlockId page);
  BlockId LayerAllocatePage(size_t layer);
  void LayerCheckInvariants() const;
  // Per-layer prefix caching.
  PrefixMatch LayerMatch(std::span<const int32_t> tokens) const;
  int64_t AdoptCost(const PrefixMatch& start) const;
  void LayerAdopt(SequenceKv& s, const PrefixMatch& start);
  void LayerCacheFullBlocks(SequenceKv& s, std::span<const int32_t> computed_tokens);
  void RetainEndCheckpoint(SequenceKv& s);
  bool WantedByCheckpoint(const SequenceKv& s, size_t layer, int64_t block) const;
  void Unretain(BlockId key, size_t layer, BlockId page);
  BlockId RecordFor(SequenceKv& s, int64_t block);
  void Retain(BlockId key, size_t layer, BlockId page);
  void UseKey(BlockId key);
  void UnuseKey(BlockId key);
  void DropRecord(BlockId key);
  void DropLoosePage(BlockId page);
  void SeqAddRef(BlockId page);
  bool Windowed(BlockId page) const { return group_window_[static_cast<size_t>(page_group_[page])] > 0; }
  bool RecordIdle(BlockId key) const;
  // Evictable-page bookkeeping around a change of `page`'s references/owner.
  void Unaccount(BlockId page);
  void Account(BlockId page);
  // Leading blocks of a layer with window w that no query at a position >=
  // s reads.
  int64_t Releasable(int64_t w, int64_t s) const {
    return w > 0 && s - w + 1 > 0 ? (s - w + 1) / block_size_ : 0;
  }
  SequenceKv& Get(SeqId seq);
  const SequenceKv& Get(SeqId seq) const;

  int32_t block_size_;
  BlockPool pool_;
  PrefixCache cache_;
  std::unordered_map<SeqId, SequenceKv> seqs_;
  std::vector<BlockCopy> pending_copies_;
  std::vector<int64_t> windows_;         // per KV layer; empty = legacy mode
  std::vector<int32_t> group_of_layer_;  // index into group_names_ etc.
  std::vector<int64_t> group_window_;
  std::vector<int64_t> group_layers_;
  std::vector<int32_t> page_group_;    // per page: the group of the layer that allocated it
  std::vector<int64_t> group_in_use_;  // pages referenced by sequences, per group
  // Per-layer prefix caching.
  int64_t checkpoint_tokens_ = 0;  // swa_replay_tokens in whole blocks
  std::unordered_map<BlockId, CachedPages> records_;
  BlockId next_key_ = 0;
  std::vector<BlockId> page_key_;  // per page: the record holding it, or kNoBlock
  int64_t idle_evictable_ = 0;     // pages held only by idle records
  std::set<BlockId> loose_;        // windowed pages held only by records in use
  int64_t swa_replayed_tokens_ = 0;
};

}  // namespace deepinfer
