#include "runner/draft_block_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace deepinfer {
namespace {

TEST(DraftBlockPool, CoversPositionsRoundedUpToBlocksAndStopsWhenDry) {
  DraftBlockPool pool(/*num_blocks=*/5, /*block_size=*/16);
  std::vector<int32_t> a, b;
  EXPECT_TRUE(pool.Cover(&a, 0));
  EXPECT_TRUE(a.empty());
  EXPECT_TRUE(pool.Cover(&a, 1));  // ceil(1 / 16)
  EXPECT_EQ(a, (std::vector<int32_t>{0}));
  EXPECT_TRUE(pool.Cover(&a, 16));  // still one block
  EXPECT_EQ(a.size(), 1u);
  EXPECT_TRUE(pool.Cover(&a, 33));  // ceil(33 / 16) = 3
  EXPECT_EQ(a, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(pool.blocks_in_use(), 3);
  // 4 blocks wanted, 2 left: both are taken and the cover fails.
  EXPECT_FALSE(pool.Cover(&b, 64));
  EXPECT_EQ(b, (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(pool.blocks_in_use(), 5);
  pool.Release(&a);
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(pool.blocks_in_use(), 2);
  EXPECT_TRUE(pool.Cover(&b, 64));
  std::vector<int32_t> sorted = b;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());  // no block twice
  pool.Release(&b);
  EXPECT_EQ(pool.blocks_in_use(), 0);
}

}  // namespace
}  // namespace deepinfer
