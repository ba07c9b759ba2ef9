// KvManager's per-layer (hybrid sliding-window) mode: per-layer page tables,
// window release, checkpoints and bounded-replay prefix matches
// (kv_manager.h, docs/kv-cache.md). The block-table mode is in kv_manager.cc.
#include <algorithm>
#include <string>

#include "core/check.h"
#include "kv/kv_manager.h"

namespace deepinfer {

const std::vector<std::vector<BlockId>>& KvManager::LayerBlockTables(SeqId seq) const {
  DI_CHECK(per_layer());
  return Get(seq).layers;
}

int64_t KvManager::MaxUnitsForSequence(int64_t num_tokens, int64_t max_claim) const {
  // + 1: a copy-on-write block (legacy) / page (per-layer) for a shared last block.
  if (!per_layer()) return BlocksFor(num_tokens) + 1;
  int64_t units = 0;
  for (int64_t w : windows_) {
    const int64_t full = BlocksFor(num_tokens);
    units += (w > 0 ? std::min(full, BlocksFor(w - 1 + max_claim) + 1) : full) + 1;
  }
  return units;
}

std::vector<KvManager::GroupUsage> KvManager::GroupUsages() const {
  if (!per_layer()) {
    return {GroupUsage{"all", 0, 0, pool_.num_referenced()}};
  }
  std::vector<GroupUsage> out;
  const int64_t windowed =
      std::count_if(group_window_.begin(), group_window_.end(), [](int64_t w) { return w > 0; });
  for (size_t g = 0; g < group_window_.size(); ++g) {
    const int64_t w = group_window_[g];
    std::string name = w == 0 ? "full" : windowed > 1 ? "swa_" + std::to_string(w) : "swa";
    out.push_back(GroupUsage{std::move(name), group_layers_[g], w, group_in_use_[g]});
  }
  return out;
}

// Per-layer mode. Pages released by the window (all positions below the
// claim start s - W + 1) are credited before the new ones are counted: the
// claim releases them first.
int64_t KvManager::LayerNeeded(const SequenceKv* s, int64_t num_new_tokens, int64_t have) const {
  if (num_new_tokens == 0) return 0;
  const int64_t grow = BlocksFor(have + num_new_tokens) - BlocksFor(have);
  int64_t need = 0;
  for (size_t l = 0; l < windows_.size(); ++l) {
    need += grow;
    if (s == nullptr || s->layers.empty()) continue;
    const std::vector<BlockId>& table = s->layers[l];
    if (have % block_size_ != 0 && pool_.RefCount(table.back()) > 1)
      ++need;  // private copy of a forked block
    const int64_t releasable = Releasable(windows_[l], have);
    for (int64_t b = s->released[l]; b < releasable; ++b) {
      const BlockId page = table[static_cast<size_t>(b)];
      if (page != kNoBlock && pool_.RefCount(page) == 1) --need;
    }
  }
  return need;
}

BlockId KvManager::LayerAllocatePage(size_t layer) {
  // Evict what only the prefix cache holds: idle records LRU-first, then
  // windowed pages kept for checkpoints of records still in use.
  while (pool_.num_free() == 0) {
    if (idle_evictable_ > 0) {
      std::optional<BlockId> key = cache_.EvictLru();
      DI_CHECK(key.has_value());
      DropRecord(*key);
    } else {
      DI_CHECK_MSG(!loose_.empty(), "KV pool exhausted after a successful capacity check");
      DropLoosePage(*loose_.begin());
    }
  }
  std::optional<BlockId> page = pool_.Allocate();
  DI_CHECK(page.has_value());
  const int32_t g = group_of_layer_[layer];
  page_group_[static_cast<size_t>(*page)] = g;
  ++group_in_use_[static_cast<size_t>(g)];
  return *page;
}

void KvManager::LayerRelease(BlockId page) {
  Unaccount(page);
  const bool zero = pool_.Release(page);
  const int32_t held = page_key_[static_cast<size_t>(page)] != kNoBlock ? 1 : 0;
  if (pool_.RefCount(page) == held)
    --group_in_use_[static_cast<size_t>(page_group_[static_cast<size_t>(page)])];
  if (zero) {
    pool_.Free(page);
  } else {
    Account(page);
  }
}

void KvManager::SeqAddRef(BlockId page) {
  Unaccount(page);
  pool_.AddRef(page);
  const int32_t held = page_key_[static_cast<size_t>(page)] != kNoBlock ? 1 : 0;
  if (pool_.RefCount(page) == held + 1)
    ++group_in_use_[static_cast<size_t>(page_group_[static_cast<size_t>(page)])];
  Account(page);
}

void KvManager::LayerAllocate(SequenceKv& s, int64_t num_new_tokens) {
  if (s.layers.empty()) {
    s.layers.assign(windows_.size(), {});
    s.released.assign(windows_.size(), 0);
  }
  if (num_new_tokens == 0) return;
  const int64_t have = s.num_tokens;
  const bool caching = cache_.enabled() && !s.caching_stopped;
  const int64_t boundary = have / block_size_ * block_size_;  // the end checkpoint Free may keep
  for (size_t l = 0; l < windows_.size(); ++l) {
    std::vector<BlockId>& table = s.layers[l];
    const int64_t releasable = Releasable(windows_[l], have);
    for (int64_t b = s.released[l]; b < releasable; ++b) {
      BlockId& page = table[static_cast<size_t>(b)];
      if (page != kNoBlock) {
        // A checkpoint's page outlives the window in the block's record.
        if (caching && page_key_[static_cast<size_t>(page)] == kNoBlock) {
          if (WantedByCheckpoint(s, l, b)) {
            Retain(RecordFor(s, b), l, page);
          } else if (b >= Releasable(windows_[l], boundary)) {
            Retain(RecordFor(s, b), l, page);
            s.rolling.push_back({l, b, page});
          }
        }
        LayerRelease(page);
      }
      page = kNoBlock;
    }
    s.released[l] = std::max(s.released[l], releasable);
    if (have % block_size_ != 0 && pool_.RefCount(table.back()) > 1) {
      const BlockId shared = table.back();
      const BlockId copy = LayerAllocatePage(l);
      pending_copies_.push_back(BlockCopy{shared, copy});
      table.back() = copy;
      LayerRelease(shared);
    }
  }
  // Rolling pages of an earlier boundary: no checkpoint needs them any more.
  std::erase_if(s.rolling, [&](const SequenceKv::Rolling& r) {
    if (r.block >= Releasable(windows_[r.layer], boundary)) return false;
    Unretain(s.keys[static_cast<size_t>(r.block)], r.layer, r.page);
    return true;
  });
  s.num_tokens += num_new_tokens;
  const int64_t blocks = BlocksFor(s.num_tokens);
  for (size_t l = 0; l < windows_.size(); ++l) {
    while (static_cast<int64_t>(s.layers[l].size()) < blocks) s.layers[l].push_back(LayerAllocatePage(l));
  }
}

void KvManager::LayerRollback(SequenceKv& s, int64_t num_tokens) {
  s.num_tokens -= num_tokens;
  const int64_t keep = BlocksFor(s.num_tokens);
  const auto full = static_cast<size_t>(s.num_tokens / block_size_);
  if (s.cached_chain.size() > full) s.cached_chain.resize(full);
  while (s.keys.size() > full) {
    if (s.keys.back() != kNoBlock) UnuseKey(s.keys.back());
    s.keys.pop_back();
  }
  for (size_t l = 0; l < s.layers.size(); ++l) {
    // Queries resume at s.num_tokens: what they read must still be resident.
    DI_CHECK_MSG(s.released[l] <= Releasable(windows_[l], s.num_tokens),
                 "rollback past the start of the latest claim of a windowed layer");
    std::vector<BlockId>& table = s.layers[l];
    while (static_cast<int64_t>(table.size()) > keep) {
      DI_CHECK(table.back() != kNoBlock);
      LayerRelease(table.back());
      table.pop_back();
    }
  }
}

// Per-layer prefix caching (bounded replay). See the header for the design.

bool KvManager::RecordIdle(BlockId key) const {
  const CachedPages& r = records_.at(key);
  return r.inserted && r.users == 0;
}

// A page held only by a record is evictable when the record is idle (any
// layer) or when it is windowed (dropping it only loses a checkpoint).
void KvManager::Account(BlockId page) {
  const BlockId key = page_key_[static_cast<size_t>(page)];
  if (key == kNoBlock || pool_.RefCount(page) != 1) return;
  if (RecordIdle(key)) {
    ++idle_evictable_;
  } else if (Windowed(page)) {
    loose_.insert(page);
  }
}

void KvManager::Unaccount(BlockId page) {
  const BlockId key = page_key_[static_cast<size_t>(page)];
  if (key == kNoBlock || pool_.RefCount(page) != 1) return;
  if (RecordIdle(key)) {
    --idle_evictable_;
  } else if (Windowed(page)) {
    loose_.erase(page);
  }
}

void KvManager::UseKey(BlockId key) {
  CachedPages& r = records_.at(key);
  if (r.users == 0 && r.inserted) {
    for (BlockId p : r.pages) {
      if (p != kNoBlock) Unaccount(p);
    }
    ++r.users;
    cache_.MarkInUse(key);
    for (BlockId p : r.pages) {
      if (p != kNoBlock) Account(p);
    }
    return;
  }
  ++r.users;
}

void KvManager::UnuseKey(BlockId key) {
  CachedPages& r = records_.at(key);
  DI_CHECK(r.users > 0);
  if (r.users > 1) {
    --r.users;
    return;
  }
  if (!r.inserted) {  // private to its creator: nobody can find it
    --r.users;
    DropRecord(key);
    return;
  }
  for (BlockId p : r.pages) {
    if (p != kNoBlock) Unaccount(p);
  }
  --r.users;
  cache_.MarkIdle(key);
  for (BlockId p : r.pages) {
    if (p != kNoBlock) Account(p);
  }
}

void KvManager::DropRecord(BlockId key) {
  auto it = records_.find(key);
  DI_CHECK(it != records_.end());
  for (BlockId p : it->second.pages) {
    if (p == kNoBlock) continue;
    Unaccount(p);
    page_key_[static_cast<size_t>(p)] = kNoBlock;
    if (pool_.Release(p)) pool_.Free(p);  // else still in a sequence's table
  }
  records_.erase(it);
}

void KvManager::DropLoosePage(BlockId page) {
  Unaccount(page);
  CachedPages& r = records_.at(page_key_[static_cast<size_t>(page)]);
  std::replace(r.pages.begin(), r.pages.end(), page, kNoBlock);
  page_key_[static_cast<size_t>(page)] = kNoBlock;
  DI_CHECK(pool_.Release(page));
  pool_.Free(page);
}

void KvManager::Retain(BlockId key, size_t layer, BlockId page) {
  CachedPages& r = records_.at(key);
  if (r.pages[layer] != kNoBlock) return;
  DI_CHECK(page_key_[static_cast<size_t>(page)] == kNoBlock);
  // The sequence still references the page: no accounting changes.
  pool_.AddRef(page);
  page_key_[static_cast<size_t>(page)] = key;
  r.pages[layer] = page;
}

BlockId KvManager::RecordFor(SequenceKv& s, int64_t block) {
  if (static_cast<int64_t>(s.keys.size()) <= block) s.keys.resize(static_cast<size_t>(block) + 1, kNoBlock);
  BlockId& key = s.keys[static_cast<size_t>(block)];
  if (key == kNoBlock) {
    key = next_key_++;
    CachedPages r;
    r.pages.assign(windows_.size(), kNoBlock);
    r.users = 1;
    records_.emplace(key, std::move(r));
  }
  return key;
}

// Block b of a layer with window W is kept when the next checkpoint after it,
// C = the first multiple of checkpoint_tokens_ past the block, reads it.
bool KvManager::WantedByCheckpoint(const SequenceKv& s, size_t layer, int64_t block) const {
  const int64_t w = windows_[layer];
  if (w == 0) return false;
  const int64_t end = (block + 1) * block_size_;
  const int64_t c = (end + checkpoint_tokens_ - 1) / checkpoint_tokens_ * checkpoint_tokens_;
  if (Releasable(w, c) <= block) return true;
  return std::any_of(s.checkpoints.begin(), s.checkpoints.end(), [&](int64_t named) {
    return Releasable(w, named) <= block && block < named / block_size_;
  });
}

void KvManager::AddCheckpoint(SeqId seq, int64_t position) {
  if (!per_layer() || !cache_.enabled()) return;
  SequenceKv& s = Get(seq);
  const int64_t boundary = position / block_size_ * block_size_;
  if (boundary > 0 &&
      std::find(s.checkpoints.begin(), s.checkpoints.end(), boundary) == s.checkpoints.end()) {
    s.checkpoints.push_back(boundary);
  }
}

void KvManager::Unretain(BlockId key, size_t layer, BlockId page) {
  auto it = records_.find(key);
  if (it == records_.end() || it->second.pages[layer] != page) return;  // already dropped
  Unaccount(page);
  it->second.pages[layer] = kNoBlock;
  page_key_[static_cast<size_t>(page)] = kNoBlock;
  if (pool_.Release(page)) {
    pool_.Free(page);
  } else {
    Account(page);
  }
}

PrefixMatch KvManager::LayerMatch(std::span<const int32_t> tokens) const {
  PrefixMatch m = cache_.Match(tokens, static_cast<int64_t>(tokens.size()) - 1);
  // Whole blocks only (no partial entries in this mode).
  m.blocks.resize(m.full_chain.size());
  const auto deepest = static_cast<int64_t>(m.blocks.size());
  // The deepest boundary p whose windowed pages a query at p*block_size reads
  // are all kept (p = 0 always qualifies): per layer, p qualifies when the
  // last block before p without the layer's page lies below the window.
  std::vector<bool> covered(static_cast<size_t>(deepest) + 1, true);
  for (size_t l = 0; l < windows_.size(); ++l) {
    if (windows_[l] == 0) continue;
    int64_t last_missing = -1;
    for (int64_t p = 1; p <= deepest; ++p) {
      if (records_.at(m.blocks[static_cast<size_t>(p - 1)]).pages[l] == kNoBlock) last_missing = p - 1;
      if (last_missing >= Releasable(windows_[l], p * block_size_)) covered[static_cast<size_t>(p)] = false;
    }
  }
  int64_t p = deepest;
  while (p > 0 && !covered[static_cast<size_t>(p)]) --p;
  m.blocks.resize(static_cast<size_t>(p));
  m.full_chain.resize(static_cast<size_t>(p));
  m.num_tokens = p * block_size_;
  m.replay_tokens = (deepest - p) * block_size_;
  return m;
}

// Pages the adoption of `start` takes out of the evictable set (see Account):
// every adopted page held only by its record, and the full-attention pages of
// idle records (their windowed pages left behind stay evictable).
int64_t KvManager::AdoptCost(const PrefixMatch& start) const {
  int64_t cost = 0;
  for (size_t i = 0; i < start.blocks.size(); ++i) {
    const BlockId key = start.blocks[i];
    const CachedPages& r = records_.at(key);
    for (size_t l = 0; l < windows_.size(); ++l) {
      const BlockId p = r.pages[l];
      if (p == kNoBlock || pool_.RefCount(p) != 1) continue;
      const bool adopted = static_cast<int64_t>(i) >= Releasable(windows_[l], start.num_tokens);
      if (adopted || (windows_[l] == 0 && RecordIdle(key))) ++cost;
    }
  }
  return cost;
}

void KvManager::LayerAdopt(SequenceKv& s, const PrefixMatch& start) {
  DI_CHECK(start.num_tokens == static_cast<int64_t>(start.blocks.size()) * block_size_);
  s.layers.assign(windows_.size(), {});
  s.released.assign(windows_.size(), 0);
  for (size_t l = 0; l < windows_.size(); ++l) s.released[l] = Releasable(windows_[l], start.num_tokens);
  for (size_t i = 0; i < start.blocks.size(); ++i) {
    const BlockId key = start.blocks[i];
    DI_CHECK_MSG(records_.count(key) != 0 && cache_.Contains(key),
                 "stale PrefixMatch: a matched block was evicted");
    UseKey(key);
    s.keys.push_back(key);
    const CachedPages& r = records_.at(key);
    for (size_t l = 0; l < windows_.size(); ++l) {
      if (static_cast<int64_t>(i) < s.released[l]) {
        s.layers[l].push_back(kNoBlock);
        continue;
      }
      DI_CHECK_MSG(r.pages[l] != kNoBlock, "stale PrefixMatch: a matched page was evicted");
      SeqAddRef(r.pages[l]);
      s.layers[l].push_back(r.pages[l]);
    }
  }
  s.num_tokens = start.num_tokens;
  s.cached_chain = start.full_chain;
  cache_.RecordQuery(start.query_tokens, start.num_tokens);
  swa_replayed_tokens_ += start.replay_tokens;
}

void KvManager::LayerCacheFullBlocks(SequenceKv& s, std::span<const int32_t> computed_tokens) {
  const int64_t num_full =
      std::min<int64_t>(static_cast<int64_t>(computed_tokens.size()), s.num_tokens) / block_size_;
  for (int64_t i = static_cast<int64_t>(s.cached_chain.size()); i < num_full; ++i) {
    const BlockId key = RecordFor(s, i);
    for (size_t l = 0; l < windows_.size(); ++l) {
      const BlockId page = s.layers[l][static_cast<size_t>(i)];
      if (page == kNoBlock) continue;  // released: a windowed page no checkpoint wanted
      if (windows_[l] == 0 || WantedByCheckpoint(s, l, i)) Retain(key, l, page);
    }
    ChainLink parent = i == 0 ? ChainLink{} : s.cached_chain[static_cast<size_t>(i - 1)];
    std::optional<ChainLink> link = cache_.InsertFull(
        parent, computed_tokens.subspan(static_cast<size_t>(i * block_size_), block_size_), key);
    if (!link) {
      s.caching_stopped = true;  // the private record is dropped with the sequence
      return;
    }
    // Not inserted when another record already holds this content: the chain
    // continues through that one and this record stays private.
    records_.at(key).inserted = cache_.Contains(key);
    s.cached_chain.push_back(*link);
  }
}

// A checkpoint at the deepest cached boundary whose windowed pages the
// sequence still holds (e.g. the end of a conversation turn).
void KvManager::RetainEndCheckpoint(SequenceKv& s) {
  if (s.caching_stopped) return;
  for (auto e = static_cast<int64_t>(s.cached_chain.size()); e > 0; --e) {
    bool resident = true;
    for (size_t l = 0; l < windows_.size() && resident; ++l) {
      if (windows_[l] == 0) continue;
      for (int64_t b = Releasable(windows_[l], e * block_size_); b < e && resident; ++b) {
        const BlockId key = s.keys[static_cast<size_t>(b)];
        resident = s.layers[l][static_cast<size_t>(b)] != kNoBlock || records_.at(key).pages[l] != kNoBlock;
      }
    }
    if (!resident) continue;
    for (size_t l = 0; l < windows_.size(); ++l) {
      if (windows_[l] == 0) continue;
      for (int64_t b = Releasable(windows_[l], e * block_size_); b < e; ++b) {
        const BlockId page = s.layers[l][static_cast<size_t>(b)];
        if (page != kNoBlock && page_key_[static_cast<size_t>(page)] == kNoBlock) {
          Retain(s.keys[static_cast<size_t>(b)], l, page);
        }
      }
    }
    return;
  }
}

void KvManager::LayerCheckInvariants() const {
  std::vector<int32_t> refs(static_cast<size_t>(pool_.num_blocks()), 0);
  for (const auto& [id, s] : seqs_) {
    DI_CHECK(s.blocks.empty());
    DI_CHECK(s.keys.size() >= s.cached_chain.size());
    DI_CHECK(s.layers.size() == windows_.size() && s.released.size() == windows_.size());
    for (size_t l = 0; l < s.layers.size(); ++l) {
      const std::vector<BlockId>& table = s.layers[l];
      DI_CHECK_MSG(static_cast<int64_t>(table.size()) == BlocksFor(s.num_tokens),
                   "table size != token count");
      DI_CHECK(s.released[l] <= Releasable(windows_[l], s.num_tokens));
      for (size_t b = 0; b < table.size(); ++b) {
        if (static_cast<int64_t>(b) < s.released[l]) {
          DI_CHECK_MSG(table[b] == kNoBlock, "a released window slot still names a page");
          continue;
        }
        DI_CHECK(table[b] >= 0 && table[b] < pool_.num_blocks());
        ++refs[static_cast<size_t>(table[b])];
      }
    }
  }
  std::vector<int32_t> seq_refs = refs;
  std::unordered_map<BlockId, int32_t> users;
  for (const auto& [id, s] : seqs_) {
    for (BlockId key : s.keys) {
      if (key != kNoBlock) ++users[key];
    }
  }
  for (const auto& [key, r] : records_) {
    DI_CHECK_MSG(users[key] == r.users, "record user count differs from the sequences");
    DI_CHECK_MSG(r.inserted == cache_.Contains(key), "record and prefix cache disagree");
    DI_CHECK(r.inserted || r.users > 0);
    if (r.inserted) DI_CHECK(cache_.IsIdle(key) == (r.users == 0));
    for (BlockId p : r.pages) {
      if (p == kNoBlock) continue;
      DI_CHECK_MSG(page_key_[static_cast<size_t>(p)] == key, "page owner differs from its record");
      ++refs[static_cast<size_t>(p)];
    }
  }
  std::vector<int64_t> in_use(group_in_use_.size(), 0);
  int64_t idle_evictable = 0;
  std::set<BlockId> loose;
  for (BlockId b = 0; b < pool_.num_blocks(); ++b) {
    DI_CHECK_MSG(refs[b] == pool_.RefCount(b), "pool ref count differs from the block tables");
    DI_CHECK_MSG((refs[b] == 0) == pool_.IsFree(b), "an unreferenced page is not free");
    if (seq_refs[b] > 0) ++in_use[static_cast<size_t>(page_group_[static_cast<size_t>(b)])];
    const BlockId key = page_key_[static_cast<size_t>(b)];
    if (key != kNoBlock && refs[b] == 1) {
      if (RecordIdle(key)) {
        ++idle_evictable;
      } else if (Windowed(b)) {
        loose.insert(b);
      }
    }
  }
  DI_CHECK_MSG(in_use == group_in_use_, "per-group page counts differ from the tables");
  DI_CHECK_MSG(idle_evictable == idle_evictable_ && loose == loose_, "evictable-page counts are stale");
  DI_CHECK(pool_.num_retained() == 0);
}

}  // namespace deepinfer
