#include "kv/kv_manager.h"

#include <algorithm>
#include <string>

#include "core/check.h"

namespace deepinfer {

Status KvConfig::Validate() const {
  if (num_blocks < 1) {
    return InvalidArgument("kv: num_blocks must be >= 1, got " + std::to_string(num_blocks));
  }
  if (block_size < 1) {
    return InvalidArgument("kv: block_size must be >= 1, got " + std::to_string(block_size));
  }
  for (int64_t w : layer_windows) {
    if (w < 0) return InvalidArgument("kv: a layer window is negative: " + std::to_string(w));
    if (enable_prefix_cache && swa_replay_tokens < w) {
      return InvalidArgument("kv: DEEPINFER_SWA_REPLAY_TOKENS (" + std::to_string(swa_replay_tokens) +
                             ") is below the sliding window (" + std::to_string(w) +
                             "): checkpoints closer than a window would keep more KV than the prefix has; "
                             "set it to at least " +
                             std::to_string(w));
    }
  }
  return Status::Ok();
}

KvManager::KvManager(const KvConfig& config, PrefixCache::HashFn hash)
    : block_size_(config.block_size),
      pool_(config.num_blocks),
      cache_(config.block_size, config.enable_prefix_cache, std::move(hash)),
      windows_(config.layer_windows) {
  DI_CHECK(config.Validate().ok());
  if (windows_.empty()) return;
  std::vector<int64_t> distinct;
  for (int64_t w : windows_) {
    DI_CHECK(w >= 0);
    if (std::find(distinct.begin(), distinct.end(), w) == distinct.end()) distinct.push_back(w);
  }
  std::sort(distinct.begin(), distinct.end());
  group_window_ = distinct;
  group_layers_.assign(distinct.size(), 0);
  group_in_use_.assign(distinct.size(), 0);
  for (int64_t w : windows_) {
    const auto g = static_cast<int32_t>(std::find(distinct.begin(), distinct.end(), w) - distinct.begin());
    group_of_layer_.push_back(g);
    ++group_layers_[static_cast<size_t>(g)];
  }
  page_group_.assign(static_cast<size_t>(config.num_blocks), -1);
  page_key_.assign(static_cast<size_t>(config.num_blocks), kNoBlock);
  checkpoint_tokens_ = std::max<int64_t>(1, config.swa_replay_tokens / block_size_) * block_size_;
}

KvManager::SequenceKv& KvManager::Get(SeqId seq) {
  auto it = seqs_.find(seq);
  DI_CHECK_MSG(it != seqs_.end(), "unknown KV sequence");
  return it->second;
}

const KvManager::SequenceKv& KvManager::Get(SeqId seq) const {
  auto it = seqs_.find(seq);
  DI_CHECK_MSG(it != seqs_.end(), "unknown KV sequence");
  return it->second;
}

PrefixMatch KvManager::MatchPrefix(std::span<const int32_t> tokens) const {
  if (per_layer()) return LayerMatch(tokens);
  return cache_.Match(tokens, static_cast<int64_t>(tokens.size()) - 1);
}

bool KvManager::NeedsCopyBeforeWrite(BlockId block) const {
  return pool_.RefCount(block) > 1 || cache_.Contains(block);
}

int32_t KvManager::NumBlocksNeeded(SeqId seq, int64_t num_new_tokens, const PrefixMatch* start) const {
  DI_CHECK(num_new_tokens >= 0);
  if (per_layer()) {
    auto it = seqs_.find(seq);
    DI_CHECK_MSG(it == seqs_.end() || start == nullptr, "a prefix can only be adopted by a new sequence");
    const int64_t have = it != seqs_.end() ? it->second.num_tokens : start != nullptr ? start->num_tokens : 0;
    const int64_t net = LayerNeeded(it == seqs_.end() ? nullptr : &it->second, num_new_tokens, have);
    return static_cast<int32_t>(std::max<int64_t>(net, 0));
  }
  int64_t have_tokens = 0;
  const std::vector<BlockId>* held = nullptr;
  if (auto it = seqs_.find(seq); it != seqs_.end()) {
    DI_CHECK_MSG(start == nullptr, "a prefix can only be adopted by a new sequence");
    have_tokens = it->second.num_tokens;
    held = &it->second.blocks;
  } else if (start != nullptr) {
    have_tokens = start->num_tokens;
    held = &start->blocks;
  }
  const int64_t held_blocks = held ? static_cast<int64_t>(held->size()) : 0;
  int64_t needed = std::max<int64_t>(0, BlocksFor(have_tokens + num_new_tokens) - held_blocks);
  // Writing into a shared or cached partial block needs a private copy first.
  if (num_new_tokens > 0 && have_tokens % block_size_ != 0 && NeedsCopyBeforeWrite(held->back())) {
    ++needed;
  }
  return static_cast<int32_t>(needed);
}

bool KvManager::CanAllocate(SeqId seq, int64_t num_new_tokens, const PrefixMatch* start) const {
  if (per_layer()) {
    const bool adopts = start != nullptr && !HasSequence(seq);
    return NumBlocksNeeded(seq, num_new_tokens, start) <=
           NumAvailableBlocks() - (adopts ? AdoptCost(*start) : 0);
  }
  int64_t available = NumAvailableBlocks();
  // Adopting idle cached blocks takes them out of the evictable set.
  if (start != nullptr && !HasSequence(seq)) {
    for (BlockId b : start->blocks) {
      available -= cache_.IsIdle(b) ? 1 : 0;
    }
  }
  return NumBlocksNeeded(seq, num_new_tokens, start) <= available;
}

int64_t KvManager::MaxAllocatableTokens(SeqId seq, int64_t limit, const PrefixMatch* start) const {
  // Blocks needed grow monotonically with the token count: binary search.
  int64_t lo = 0, hi = std::max<int64_t>(limit, 0);
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (CanAllocate(seq, mid, start)) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

BlockId KvManager::AllocateBlock() {
  if (pool_.num_free() == 0) {
    std::optional<BlockId> evicted = cache_.EvictLru();
    DI_CHECK_MSG(evicted.has_value(), "KV pool exhausted after a successful capacity check");
    pool_.Free(*evicted);
  }
  return *pool_.Allocate();
}

void KvManager::ReleaseBlock(BlockId block) {
  if (!pool_.Release(block)) {
    return;
  }
  if (cache_.Contains(block)) {
    cache_.MarkIdle(block);  // keep the content for reuse until evicted
  } else {
    pool_.Free(block);
  }
}

Status KvManager::Allocate(SeqId seq, int64_t num_new_tokens, const PrefixMatch* start) {
  if (!CanAllocate(seq, num_new_tokens, start)) {
    return ResourceExhausted("KV cache: sequence " + std::to_string(seq) + " needs " +
                             std::to_string(NumBlocksNeeded(seq, num_new_tokens, start)) + " blocks, " +
                             std::to_string(NumAvailableBlocks()) + " available");
  }
  auto [it, is_new] = seqs_.try_emplace(seq);
  SequenceKv& s = it->second;
  if (is_new && start != nullptr && per_layer()) {
    LayerAdopt(s, *start);
  } else if (is_new && start != nullptr) {
    for (BlockId b : start->blocks) {
      DI_CHECK_MSG(cache_.Contains(b), "stale PrefixMatch: a matched block was evicted");
      if (cache_.IsIdle(b)) {
        cache_.MarkInUse(b);
      }
      pool_.AddRef(b);
    }
    s.blocks = start->blocks;
    s.num_tokens = start->num_tokens;
    s.cached_chain = start->full_chain;
    cache_.RecordQuery(start->query_tokens, start->num_tokens);
  }
  if (per_layer()) {
    LayerAllocate(s, num_new_tokens);
    return Status::Ok();
  }
  if (num_new_tokens == 0) {
    return Status::Ok();
  }

  if (s.num_tokens % block_size_ != 0 && NeedsCopyBeforeWrite(s.blocks.back())) {
    BlockId shared = s.blocks.back();
    BlockId copy = AllocateBlock();
    pending_copies_.push_back(BlockCopy{shared, copy});
    s.blocks.back() = copy;
    ReleaseBlock(shared);
  }
  s.num_tokens += num_new_tokens;
  while (static_cast<int64_t>(s.blocks.size()) < BlocksFor(s.num_tokens)) {
    s.blocks.push_back(AllocateBlock());
  }
  return Status::Ok();
}

void KvManager::CacheFullBlocks(SeqId seq, std::span<const int32_t> computed_tokens) {
  SequenceKv& s = Get(seq);
  if (!cache_.enabled() || s.caching_stopped) {
    return;
  }
  if (per_layer()) {
    LayerCacheFullBlocks(s, computed_tokens);
    return;
  }
  const int64_t num_full =
      std::min<int64_t>(static_cast<int64_t>(computed_tokens.size()), s.num_tokens) / block_size_;
  for (int64_t i = static_cast<int64_t>(s.cached_chain.size()); i < num_full; ++i) {
    ChainLink parent = i == 0 ? ChainLink{} : s.cached_chain[i - 1];
    std::optional<ChainLink> link =
        cache_.InsertFull(parent, computed_tokens.subspan(i * block_size_, block_size_), s.blocks[i]);
    if (!link) {
      s.caching_stopped = true;
      return;
    }
    s.cached_chain.push_back(*link);
  }
}

void KvManager::Rollback(SeqId seq, int64_t num_tokens) {
  SequenceKv& s = Get(seq);
  DI_CHECK(num_tokens >= 0 && num_tokens <= s.num_tokens);
  if (per_layer()) {
    LayerRollback(s, num_tokens);
    return;
  }
  s.num_tokens -= num_tokens;
  const int64_t keep = BlocksFor(s.num_tokens);
  while (static_cast<int64_t>(s.blocks.size()) > keep) {
    ReleaseBlock(s.blocks.back());
    s.blocks.pop_back();
  }
  const auto full = static_cast<size_t>(s.num_tokens / block_size_);
  if (s.cached_chain.size() > full) {
    s.cached_chain.resize(full);
  }
}

Status KvManager::Fork(SeqId parent, SeqId child) {
  if (!HasSequence(parent)) {
    return InvalidArgument("kv fork: unknown parent sequence " + std::to_string(parent));
  }
  if (HasSequence(child)) {
    return InvalidArgument("kv fork: sequence " + std::to_string(child) + " exists");
  }
  SequenceKv copy = Get(parent);
  for (BlockId b : copy.blocks) {
    pool_.AddRef(b);
  }
  for (const auto& table : copy.layers) {
    for (BlockId b : table) {
      if (b != kNoBlock) SeqAddRef(b);
    }
  }
  for (BlockId key : copy.keys) {
    if (key != kNoBlock) UseKey(key);
  }
  seqs_.emplace(child, std::move(copy));
  return Status::Ok();
}

void KvManager::Free(SeqId seq, std::span<const int32_t> computed_tokens) {
  SequenceKv& s = Get(seq);
  if (per_layer()) {
    if (!computed_tokens.empty() && cache_.enabled()) {
      CacheFullBlocks(seq, computed_tokens);
      RetainEndCheckpoint(s);
    }
    for (const auto& table : s.layers) {
      for (BlockId b : table) {
        if (b != kNoBlock) LayerRelease(b);
      }
    }
    // The tail's records go idle first, so they are evicted before the prefix they extend.
    for (auto it = s.keys.rbegin(); it != s.keys.rend(); ++it) {
      if (*it != kNoBlock) UnuseKey(*it);
    }
    seqs_.erase(seq);
    return;
  }
  if (!computed_tokens.empty() && cache_.enabled()) {
    CacheFullBlocks(seq, computed_tokens);
    const int64_t n = std::min<int64_t>(static_cast<int64_t>(computed_tokens.size()), s.num_tokens);
    const int64_t full = n / block_size_;
    if (n % block_size_ != 0 && !s.caching_stopped && static_cast<int64_t>(s.cached_chain.size()) == full) {
      BlockId last = s.blocks[full];
      // Only a block nobody else can still write (or has cached) becomes a partial entry.
      if (pool_.RefCount(last) == 1 && !cache_.Contains(last)) {
        EntryId parent = full == 0 ? kRootEntry : s.cached_chain[full - 1].entry;
        cache_.InsertPartial(parent, computed_tokens.subspan(full * block_size_, n % block_size_), last);
      }
    }
  }
  // Release the tail first so that it is evicted before the prefix it extends.
  for (auto it = s.blocks.rbegin(); it != s.blocks.rend(); ++it) {
    ReleaseBlock(*it);
  }
  seqs_.erase(seq);
}

std::vector<BlockCopy> KvManager::TakePendingCopies() {
  std::vector<BlockCopy> copies;
  copies.swap(pending_copies_);
  return copies;
}

const std::vector<BlockId>& KvManager::BlockTable(SeqId seq) const { return Get(seq).blocks; }

int64_t KvManager::NumTokens(SeqId seq) const { return Get(seq).num_tokens; }

int64_t KvManager::NumUnitsInUse() const {
  if (!per_layer()) return pool_.num_referenced();
  int64_t used = 0;
  for (int64_t n : group_in_use_) used += n;
  return used;
}

double KvManager::UsageRatio() const {
  if (per_layer()) return static_cast<double>(NumUnitsInUse()) / static_cast<double>(pool_.num_blocks());
  return static_cast<double>(pool_.num_referenced()) / static_cast<double>(pool_.num_blocks());
}

void KvManager::CheckInvariants() const {
  if (per_layer()) {
    LayerCheckInvariants();
    return;
  }
  std::vector<int32_t> refs(static_cast<size_t>(pool_.num_blocks()), 0);
  for (const auto& [id, s] : seqs_) {
    DI_CHECK_MSG(static_cast<int64_t>(s.blocks.size()) == BlocksFor(s.num_tokens),
                 "table size != token count");
    DI_CHECK(static_cast<int64_t>(s.cached_chain.size()) <= s.num_tokens / block_size_);
    for (BlockId b : s.blocks) {
      DI_CHECK(b >= 0 && b < pool_.num_blocks());
      ++refs[b];
    }
  }
  int32_t idle = 0;
  for (BlockId b = 0; b < pool_.num_blocks(); ++b) {
    DI_CHECK_MSG(refs[b] == pool_.RefCount(b), "pool ref count differs from the block tables");
    const bool is_free = pool_.IsFree(b);
    const bool is_idle = cache_.IsIdle(b);
    if (refs[b] > 0) {
      DI_CHECK_MSG(!is_free && !is_idle, "referenced block is free or idle");
    } else {
      DI_CHECK_MSG(is_free != is_idle, "unreferenced block must be either free or idle-cached");
      DI_CHECK_MSG(!is_free || !cache_.Contains(b), "free block still in the prefix cache");
    }
    idle += is_idle ? 1 : 0;
  }
  DI_CHECK(idle == cache_.num_idle());
  DI_CHECK(pool_.num_retained() == cache_.num_idle());
}

}  // namespace deepinfer
