// Plain ids shared by the KV bookkeeping (kv/) and the scheduler. No device
// memory lives here: a BlockId names a fixed-size slab of the runner's KV
// tensors, and the runner owns the tensors.
#pragma once

#include <cstdint>

namespace deepinfer {

// Index of a KV block in the pool, in [0, num_blocks).
using BlockId = int32_t;
inline constexpr BlockId kNoBlock = -1;

// Caller-chosen id of a sequence whose KV the KvManager tracks (the scheduler
// uses the request id).
using SeqId = int64_t;

// A block copy the runner must perform before the step's forward pass
// (copy-on-write of a shared partial block). Copies are listed in the order
// they must run: a later copy may overwrite a block an earlier one read.
struct BlockCopy {
  BlockId src = kNoBlock;
  BlockId dst = kNoBlock;
  bool operator==(const BlockCopy&) const = default;
};

}  // namespace deepinfer
