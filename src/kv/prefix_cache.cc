#include "kv/prefix_cache.h"

#include <algorithm>
#include <utility>

#include "core/check.h"

namespace deepinfer {
namespace {

uint64_t Mix64(uint64_t x) {  // splitmix64 finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

int64_t CommonPrefixLength(std::span<const int32_t> a, std::span<const int32_t> b) {
  size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) {
    ++i;
  }
  return static_cast<int64_t>(i);
}

bool SameTokens(const std::vector<int32_t>& a, std::span<const int32_t> b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

}  // namespace

uint64_t DefaultBlockHash(uint64_t parent_hash, std::span<const int32_t> tokens) {
  uint64_t h = Mix64(parent_hash ^ (0x9e3779b97f4a7c15ULL * (tokens.size() + 1)));
  for (int32_t t : tokens) {
    h = Mix64(h ^ static_cast<uint32_t>(t));
  }
  return h;
}

PrefixCache::PrefixCache(int32_t block_size, bool enabled, HashFn hash)
    : block_size_(block_size), enabled_(enabled), hash_(std::move(hash)) {
  DI_CHECK(block_size > 0);
}

PrefixMatch PrefixCache::Match(std::span<const int32_t> tokens, int64_t max_tokens) const {
  PrefixMatch match;
  match.query_tokens = static_cast<int64_t>(tokens.size());
  const int64_t limit = std::min<int64_t>(max_tokens, static_cast<int64_t>(tokens.size()));
  if (!enabled_ || limit <= 0) {
    return match;
  }

  ChainLink link;
  int64_t pos = 0;
  while (pos + block_size_ <= limit) {
    auto block_tokens = tokens.subspan(pos, block_size_);
    uint64_t key = hash_(link.hash, block_tokens);
    auto it = full_by_hash_.find(key);
    if (it == full_by_hash_.end()) {
      break;
    }
    const Entry& entry = entries_.at(it->second);
    // Verify: a colliding key with other content or another parent is a miss.
    if (entry.parent != link.entry || !SameTokens(entry.tokens, block_tokens)) {
      break;
    }
    link = ChainLink{entry.id, key};
    match.blocks.push_back(it->second);
    match.full_chain.push_back(link);
    pos += block_size_;
  }

  // The rest (a short tail, or a whole block beyond max_tokens) may share a
  // prefix with a child of the last matched entry.
  const int64_t tail = std::min<int64_t>(block_size_, limit - pos);
  auto children = children_.find(link.entry);
  if (tail > 0 && children != children_.end()) {
    auto want = tokens.subspan(pos, tail);
    BlockId best_block = kNoBlock;
    int64_t best = 0;
    for (BlockId child : children->second) {
      int64_t n = CommonPrefixLength(entries_.at(child).tokens, want);
      if (n > best) {
        best = n;
        best_block = child;
      }
    }
    if (best > 0) {
      match.blocks.push_back(best_block);
      pos += best;
    }
  }
  match.num_tokens = pos;
  return match;
}

PrefixCache::Entry& PrefixCache::NewEntry(EntryId parent, std::span<const int32_t> tokens, BlockId block) {
  DI_CHECK_MSG(!Contains(block), "block already cached");
  Entry& entry = entries_[block];
  entry.id = next_entry_id_++;
  entry.parent = parent;
  entry.tokens.assign(tokens.begin(), tokens.end());
  children_[parent].push_back(block);
  return entry;
}

std::optional<ChainLink> PrefixCache::InsertFull(ChainLink parent, std::span<const int32_t> tokens,
                                                 BlockId block) {
  DI_CHECK(static_cast<int64_t>(tokens.size()) == block_size_);
  if (!enabled_) {
    return std::nullopt;
  }
  uint64_t key = hash_(parent.hash, tokens);
  auto it = full_by_hash_.find(key);
  if (it != full_by_hash_.end()) {
    const Entry& existing = entries_.at(it->second);
    if (existing.parent == parent.entry && SameTokens(existing.tokens, tokens)) {
      return ChainLink{existing.id, key};
    }
    return std::nullopt;  // hash collision with other content: leave this block uncached
  }
  Entry& entry = NewEntry(parent.entry, tokens, block);
  entry.full = true;
  entry.hash = key;
  full_by_hash_.emplace(key, block);
  return ChainLink{entry.id, key};
}

bool PrefixCache::InsertPartial(EntryId parent, std::span<const int32_t> tokens, BlockId block) {
  DI_CHECK(!tokens.empty() && static_cast<int64_t>(tokens.size()) < block_size_);
  if (!enabled_ || Contains(block)) {
    return false;
  }
  auto children = children_.find(parent);
  if (children != children_.end()) {
    for (BlockId child : children->second) {
      if (CommonPrefixLength(entries_.at(child).tokens, tokens) == static_cast<int64_t>(tokens.size())) {
        return false;  // an existing sibling already holds these tokens (and maybe more)
      }
    }
  }
  NewEntry(parent, tokens, block);
  return true;
}

bool PrefixCache::IsIdle(BlockId block) const {
  auto it = entries_.find(block);
  return it != entries_.end() && it->second.idle;
}

void PrefixCache::MarkIdle(BlockId block) {
  Entry& entry = entries_.at(block);
  DI_CHECK(!entry.idle);
  entry.idle = true;
  entry.lru_pos = lru_.insert(lru_.end(), block);
}

void PrefixCache::MarkInUse(BlockId block) {
  Entry& entry = entries_.at(block);
  DI_CHECK(entry.idle);
  entry.idle = false;
  lru_.erase(entry.lru_pos);
}

std::optional<BlockId> PrefixCache::EvictLru() {
  if (lru_.empty()) {
    return std::nullopt;
  }
  BlockId block = lru_.front();
  lru_.pop_front();
  RemoveEntry(block);
  return block;
}

void PrefixCache::RemoveEntry(BlockId block) {
  auto it = entries_.find(block);
  DI_CHECK(it != entries_.end());
  const Entry& entry = it->second;
  if (entry.full) {
    auto by_hash = full_by_hash_.find(entry.hash);
    if (by_hash != full_by_hash_.end() && by_hash->second == block) {
      full_by_hash_.erase(by_hash);
    }
  }
  auto siblings = children_.find(entry.parent);
  DI_CHECK(siblings != children_.end());
  auto& list = siblings->second;
  list.erase(std::find(list.begin(), list.end(), block));
  if (list.empty()) {
    children_.erase(siblings);
  }
  // This entry's own children become unreachable orphans (their parent id is
  // never reused); they stay idle or in use and are evicted in their turn.
  entries_.erase(it);
}

void PrefixCache::RecordQuery(int64_t query_tokens, int64_t hit_tokens) {
  stats_.query_tokens += query_tokens;
  stats_.hit_tokens += hit_tokens;
}

}  // namespace deepinfer
