// BlockPool: reference counts and the free list of a fixed number of KV blocks.
//
// Every block is in exactly one of three states:
//   free        — on the free list, ref count 0, content meaningless;
//   referenced  — ref count > 0 (held by one or more sequences' block tables);
//   retained    — ref count 0 but kept off the free list by its holder (the
//                 prefix cache keeps unreferenced blocks whose content is
//                 reusable; they are "free-able", handed back with Free()).
// The pool itself does not know about prefix caching: Release() reports when a
// count reaches zero and the caller decides between Free() and retaining.
//
// Thread-safety: none; one owner (the KvManager) calls it from one thread.
// Precondition violations (double free, bad id) are bugs and DI_CHECK-fail.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kv/kv_types.h"

namespace deepinfer {

class BlockPool {
 public:
  // REQUIRES: num_blocks >= 0. All blocks start free; Allocate hands out the
  // lowest ids first.
  explicit BlockPool(int32_t num_blocks);

  int32_t num_blocks() const { return static_cast<int32_t>(ref_counts_.size()); }
  int32_t num_free() const { return static_cast<int32_t>(free_list_.size()); }
  int32_t num_referenced() const { return num_referenced_; }
  // Blocks with ref count 0 that are not on the free list.
  int32_t num_retained() const { return num_blocks() - num_free() - num_referenced_; }

  // Takes a block off the free list with ref count 1; nullopt when the free
  // list is empty (the caller may then evict a retained block and Free it).
  std::optional<BlockId> Allocate();

  // Adds a reference. REQUIRES: the block is referenced or retained.
  void AddRef(BlockId block);

  // Drops one reference. Returns true when the count reached zero: the block
  // is then retained until the caller Free()s it or keeps it.
  // REQUIRES: ref count > 0.
  bool Release(BlockId block);

  // Puts a retained block back on the free list. REQUIRES: retained.
  void Free(BlockId block);

  int32_t RefCount(BlockId block) const;
  bool IsFree(BlockId block) const;

 private:
  void CheckId(BlockId block) const;

  std::vector<int32_t> ref_counts_;
  std::vector<bool> on_free_list_;
  std::vector<BlockId> free_list_;  // used as a stack: back() is handed out next
  int32_t num_referenced_ = 0;
};

}  // namespace deepinfer
