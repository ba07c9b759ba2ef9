// DraftBlockPool: the free list of a drafter's own paged KV (the MTP layer's,
// a draft model's). Drafters keep their KV apart from the target's pool so
// that a request's draft context can start later or be dropped without
// touching the scheduler's accounting; a request holds its blocks in
// position order and gets no drafts while the pool is dry.
// Thread-safety: the owning drafter's (runner thread only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace deepinfer {

class DraftBlockPool {
 public:
  DraftBlockPool(int64_t num_blocks, int64_t block_size) : num_blocks_(num_blocks), block_size_(block_size) {
    free_.reserve(static_cast<size_t>(num_blocks));
    // Lowest ids first out: a lone request's blocks are 0, 1, 2, ...
    for (int64_t b = num_blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
  }

  // Grows *blocks to cover positions [0, positions); false when the pool ran
  // dry (the blocks taken so far stay in *blocks).
  bool Cover(std::vector<int32_t>* blocks, int64_t positions) {
    const int64_t need = (positions + block_size_ - 1) / block_size_;
    while (static_cast<int64_t>(blocks->size()) < need) {
      if (free_.empty()) return false;
      blocks->push_back(free_.back());
      free_.pop_back();
    }
    return true;
  }

  // Returns every block of *blocks to the pool and empties it.
  void Release(std::vector<int32_t>* blocks) {
    free_.insert(free_.end(), blocks->begin(), blocks->end());
    blocks->clear();
  }

  int64_t blocks_in_use() const { return num_blocks_ - static_cast<int64_t>(free_.size()); }

 private:
  const int64_t num_blocks_, block_size_;
  std::vector<int32_t> free_;
};

}  // namespace deepinfer
