// PrefixCache: reuse of computed KV blocks across sequences, keyed by the
// tokens that produced them.
//
// Layout. Each cached block is an *entry*: the tokens it holds and the entry
// of the block before it (its parent; the root stands for the empty prefix).
// Because a block's KV depends on every earlier token, an entry stands for its
// whole prefix, not just its own tokens. Full blocks (block_size tokens) are
// found by a hash chain, key = hash(parent key, block tokens). Hashes may
// collide, so a hit is verified: the stored tokens must be equal and the
// stored parent must be exactly the entry matched one block earlier. Entry ids
// are never reused, so by induction a verified chain is the exact prefix even
// after parents have been evicted (an orphaned child can no longer be reached).
// On an insert whose key is taken by different content the block simply stays
// uncached. Partial blocks (fewer tokens) are kept only as children of their
// parent and are found, like the unmatched tail of a prompt, by the longest
// common prefix among the children of the last matched entry.
//
// A cached block's content is immutable: the KvManager copies (CoW) a cached
// block before writing into it. Cached blocks with no references are *idle*;
// they sit in an LRU list and are the eviction candidates when the pool runs
// out of free blocks (the least recently released is evicted first).
//
// Thread-safety: none (owned by the KvManager). When constructed disabled
// (--no-prefix-cache) Match finds nothing and inserts are refused.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/kv_types.h"

namespace deepinfer {

// Identity of a cached entry, never reused. kRootEntry is the empty prefix.
using EntryId = uint64_t;
inline constexpr EntryId kRootEntry = 0;
inline constexpr uint64_t kRootHash = 0x6b76636163686521ULL;

// One step of a hash chain: the entry reached and its chain key.
struct ChainLink {
  EntryId entry = kRootEntry;
  uint64_t hash = kRootHash;
};

// The default chain hash: 64-bit mixing of the parent key and the tokens.
uint64_t DefaultBlockHash(uint64_t parent_hash, std::span<const int32_t> tokens);

// A cached prefix found by PrefixCache::Match. A snapshot: valid until the
// cache or the pool is next mutated.
struct PrefixMatch {
  std::vector<BlockId> blocks;        // in position order
  std::vector<ChainLink> full_chain;  // one link per fully used block: blocks[0, full_chain.size())
  int64_t num_tokens = 0;             // cached tokens; the last block may be used in part
  int64_t query_tokens = 0;           // length of the looked-up sequence (hit-rate statistics)
  // Per-layer (hybrid sliding-window) mode: tokens after num_tokens whose
  // full-attention KV is cached but that are recomputed because no windowed
  // checkpoint covers them (KvManager, bounded replay).
  int64_t replay_tokens = 0;
};

struct PrefixCacheStats {
  int64_t query_tokens = 0;  // tokens looked up at admission
  int64_t hit_tokens = 0;    // of which found in the cache
  double HitRatio() const { return query_tokens ? static_cast<double>(hit_tokens) / query_tokens : 0.0; }
};

class PrefixCache {
 public:
  using HashFn = std::function<uint64_t(uint64_t parent_hash, std::span<const int32_t> tokens)>;

  // REQUIRES: block_size > 0. `hash` is replaceable so tests can force collisions.
  PrefixCache(int32_t block_size, bool enabled, HashFn hash = DefaultBlockHash);

  bool enabled() const { return enabled_; }

  // The longest cached prefix of tokens[0, min(max_tokens, size)): whole
  // blocks along the hash chain, then at most one block matched in part.
  PrefixMatch Match(std::span<const int32_t> tokens, int64_t max_tokens) const;

  // Registers full block `block` holding `tokens` (exactly block_size) after
  // `parent`. Returns the link now standing for this content: a new entry, or
  // an existing one with identical content (another block computed the same
  // prefix first; `block` then stays uncached). nullopt when disabled or when
  // the key collides with different content.
  // REQUIRES: `block` is referenced and not cached under other content.
  std::optional<ChainLink> InsertFull(ChainLink parent, std::span<const int32_t> tokens, BlockId block);

  // Registers a partly filled block (0 < tokens.size() < block_size) as a
  // child of `parent`. Returns false (and caches nothing) when disabled, when
  // the block is already cached, or when a sibling already covers the tokens.
  bool InsertPartial(EntryId parent, std::span<const int32_t> tokens, BlockId block);

  bool Contains(BlockId block) const { return entries_.count(block) != 0; }
  bool IsIdle(BlockId block) const;

  // A cached block lost its last reference: it becomes the most recently used
  // idle block. REQUIRES: Contains(block) and not idle.
  void MarkIdle(BlockId block);
  // A cached idle block is referenced again. REQUIRES: IsIdle(block).
  void MarkInUse(BlockId block);

  // Drops the least recently used idle entry and returns its block, which the
  // caller must hand back to the pool; nullopt when nothing is idle.
  std::optional<BlockId> EvictLru();

  int32_t num_idle() const { return static_cast<int32_t>(lru_.size()); }
  int32_t num_entries() const { return static_cast<int32_t>(entries_.size()); }

  void RecordQuery(int64_t query_tokens, int64_t hit_tokens);
  const PrefixCacheStats& stats() const { return stats_; }

 private:
  struct Entry {
    EntryId id = kRootEntry;
    EntryId parent = kRootEntry;
    uint64_t hash = 0;  // chain key; meaningful for full entries only
    bool full = false;
    std::vector<int32_t> tokens;
    bool idle = false;
    std::list<BlockId>::iterator lru_pos;
  };

  Entry& NewEntry(EntryId parent, std::span<const int32_t> tokens, BlockId block);
  void RemoveEntry(BlockId block);

  int32_t block_size_;
  bool enabled_;
  HashFn hash_;
  EntryId next_entry_id_ = kRootEntry + 1;
  std::unordered_map<BlockId, Entry> entries_;
  std::unordered_map<uint64_t, BlockId> full_by_hash_;
  std::unordered_map<EntryId, std::vector<BlockId>> children_;  // by parent entry id
  std::list<BlockId> lru_;                                      // idle blocks; front = least recently used
  PrefixCacheStats stats_;
};

}  // namespace deepinfer
