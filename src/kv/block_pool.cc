#include "kv/block_pool.h"

#include "core/check.h"

namespace deepinfer {

BlockPool::BlockPool(int32_t num_blocks)
    : ref_counts_(static_cast<size_t>(num_blocks), 0), on_free_list_(static_cast<size_t>(num_blocks), true) {
  DI_CHECK(num_blocks >= 0);
  free_list_.reserve(static_cast<size_t>(num_blocks));
  // Highest id at the bottom of the stack so that block 0 is handed out first
  // (deterministic and easy to read in tests).
  for (BlockId b = num_blocks - 1; b >= 0; --b) {
    free_list_.push_back(b);
  }
}

void BlockPool::CheckId(BlockId block) const {
  DI_CHECK_MSG(block >= 0 && block < num_blocks(), "block id out of range");
}

std::optional<BlockId> BlockPool::Allocate() {
  if (free_list_.empty()) {
    return std::nullopt;
  }
  BlockId block = free_list_.back();
  free_list_.pop_back();
  on_free_list_[block] = false;
  ref_counts_[block] = 1;
  ++num_referenced_;
  return block;
}

void BlockPool::AddRef(BlockId block) {
  CheckId(block);
  DI_CHECK_MSG(!on_free_list_[block], "AddRef on a free block");
  if (ref_counts_[block]++ == 0) {
    ++num_referenced_;
  }
}

bool BlockPool::Release(BlockId block) {
  CheckId(block);
  DI_CHECK_MSG(ref_counts_[block] > 0, "Release of an unreferenced block");
  if (--ref_counts_[block] > 0) {
    return false;
  }
  --num_referenced_;
  return true;
}

void BlockPool::Free(BlockId block) {
  CheckId(block);
  DI_CHECK_MSG(!on_free_list_[block], "double free of a block");
  DI_CHECK_MSG(ref_counts_[block] == 0, "Free of a referenced block");
  on_free_list_[block] = true;
  free_list_.push_back(block);
}

int32_t BlockPool::RefCount(BlockId block) const {
  CheckId(block);
  return ref_counts_[block];
}

bool BlockPool::IsFree(BlockId block) const {
  CheckId(block);
  return on_free_list_[block];
}

}  // namespace deepinfer
