#include "kv/block_pool.h"

#include <gtest/gtest.h>

namespace deepinfer {
namespace {

TEST(BlockPoolTest, AllocatesLowestIdsFirstWithOneReference) {
  BlockPool pool(3);
  EXPECT_EQ(pool.num_free(), 3);
  EXPECT_EQ(*pool.Allocate(), 0);
  EXPECT_EQ(*pool.Allocate(), 1);
  EXPECT_EQ(pool.RefCount(0), 1);
  EXPECT_EQ(pool.num_free(), 1);
  EXPECT_EQ(pool.num_referenced(), 2);
}

TEST(BlockPoolTest, ReferenceCountingAndRetainedState) {
  BlockPool pool(2);
  BlockId b = *pool.Allocate();
  pool.AddRef(b);
  EXPECT_EQ(pool.RefCount(b), 2);
  EXPECT_FALSE(pool.Release(b));  // still referenced
  EXPECT_TRUE(pool.Release(b));   // count reached zero: retained, not free
  EXPECT_EQ(pool.num_referenced(), 0);
  EXPECT_EQ(pool.num_retained(), 1);
  EXPECT_FALSE(pool.IsFree(b));
  pool.AddRef(b);  // a retained block can be referenced again (prefix-cache hit)
  EXPECT_TRUE(pool.Release(b));
  pool.Free(b);
  EXPECT_TRUE(pool.IsFree(b));
  EXPECT_EQ(pool.num_free(), 2);
  EXPECT_EQ(pool.num_retained(), 0);
}

TEST(BlockPoolTest, ExhaustedPoolReturnsNothing) {
  BlockPool pool(1);
  ASSERT_TRUE(pool.Allocate().has_value());
  EXPECT_FALSE(pool.Allocate().has_value());
}

TEST(BlockPoolTest, FreedBlockIsReusedNext) {
  BlockPool pool(4);
  BlockId a = *pool.Allocate();
  ASSERT_TRUE(pool.Release(a));
  pool.Free(a);
  EXPECT_EQ(*pool.Allocate(), a);  // LIFO: the most recently freed block is reused first
}

TEST(BlockPoolDeathTest, DoubleFreeAndOverReleaseAreBugs) {
  BlockPool pool(2);
  BlockId b = *pool.Allocate();
  ASSERT_TRUE(pool.Release(b));
  pool.Free(b);
  EXPECT_DEATH(pool.Free(b), "double free");
  EXPECT_DEATH(pool.Release(b), "unreferenced");
  EXPECT_DEATH(pool.AddRef(b), "free block");
}

}  // namespace
}  // namespace deepinfer
