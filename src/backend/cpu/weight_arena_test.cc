#include "backend/cpu/weight_arena.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace deepinfer::cpu {
namespace {

// Allocations are 64-byte aligned, zeroed, writable and never overlap, for
// sizes below, at and above the chunk size (256 MiB is address space only:
// untouched pages cost no memory).
TEST(WeightArenaTest, AllocationsAreAlignedZeroedAndDisjoint) {
  WeightArena arena;
  const size_t sizes[] = {1, 63, 64, 65, 4096, 3 << 20, 100, size_t{300} << 20, 7};
  std::vector<std::pair<uint8_t*, size_t>> blocks;
  for (size_t n : sizes) {
    uint8_t* p = arena.Allocate(n);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << n;
    // First and last bytes (a 300 MiB block is not touched in full).
    EXPECT_EQ(p[0], 0);
    EXPECT_EQ(p[n - 1], 0);
    p[0] = 0xab;
    p[n - 1] = 0xcd;
    blocks.emplace_back(p, n);
  }
  std::sort(blocks.begin(), blocks.end());
  for (size_t i = 1; i < blocks.size(); ++i) {
    EXPECT_GE(blocks[i].first, blocks[i - 1].first + blocks[i - 1].second) << "blocks overlap";
  }
  for (const auto& [p, n] : blocks) {
    EXPECT_EQ(p[0], n == 1 ? 0xcd : 0xab);  // a 1-byte block's last byte is its first
    EXPECT_EQ(p[n - 1], 0xcd);
  }
  // Two chunks at least: the 300 MiB block does not fit the first one.
  EXPECT_GE(arena.mapped_bytes(), (size_t{300} << 20) + (size_t{256} << 20));
}

}  // namespace
}  // namespace deepinfer::cpu
