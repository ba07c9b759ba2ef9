// KV pool sizing: explicit bytes, a fraction of MemAvailable, the cap, errors.
#include "engine/kv_pool_size.h"

#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

#include "engine/engine.h"

namespace deepinfer {
namespace {

EngineConfig Config() {
  EngineConfig c;
  c.block_size = 16;
  c.scheduler.max_model_len = 64;  // 4 blocks per sequence
  c.scheduler.max_num_seqs = 8;
  return c;
}

TEST(KvPoolSizeTest, ExplicitBytesAreDividedByBlockBytes) {
  EngineConfig c = Config();
  c.kv_cache_memory_bytes = 100 * 16 * 10;  // 10 bytes per token: 100 blocks
  auto blocks = PlanKvBlocks(c, 10, -1);
  ASSERT_TRUE(blocks.ok());
  EXPECT_EQ(*blocks, 80);  // capped at 2 * max_num_seqs * (4 + 1)
  c.scheduler.max_num_seqs = 256;
  EXPECT_EQ(*PlanKvBlocks(c, 10, -1), 100);
}

TEST(KvPoolSizeTest, FractionOfAvailableMemory) {
  EngineConfig c = Config();
  c.scheduler.max_num_seqs = 256;
  c.kv_cache_memory_fraction = 0.5;
  EXPECT_EQ(*PlanKvBlocks(c, 10, 16 * 10 * 40), 20);
  EXPECT_EQ(PlanKvBlocks(c, 10, -1).status().code(), StatusCode::kUnavailable);
}

TEST(KvPoolSizeTest, DefaultIsMaxNumSeqsTimesMaxModelLen) {
  EngineConfig c = Config();  // 8 sequences of 4 blocks, each plus a copy-on-write block
  c.kv_cache_memory_fraction = 0.25;
  const int64_t plenty = int64_t{1} << 40;
  EXPECT_EQ(*PlanKvBlocks(c, 10, plenty), 8 * (4 + 1));
  c.scheduler.max_num_seqs = 1;
  EXPECT_EQ(*PlanKvBlocks(c, 10, plenty), 5);
  // Capped by the memory: a quarter of 16 blocks' bytes x 4 holds 16 blocks.
  c.scheduler.max_num_seqs = 8;
  EXPECT_EQ(*PlanKvBlocks(c, 10, 4 * 16 * 16 * 10), 16);
}

TEST(KvPoolSizeTest, TooSmallForOneSequenceIsResourceExhausted) {
  EngineConfig c = Config();
  c.kv_cache_memory_bytes = 4 * 16 * 10;  // 4 blocks; one sequence needs 5
  EXPECT_EQ(PlanKvBlocks(c, 10, -1).status().code(), StatusCode::kResourceExhausted);
}

TEST(KvPoolSizeTest, ReadsMemAvailable) {
  const std::string path = ::testing::TempDir() + "/meminfo";
  std::ofstream(path) << "MemTotal: 100 kB\nMemFree: 5 kB\nMemAvailable:   12 kB\n";
  EXPECT_EQ(MemAvailableBytes(path), 12 * 1024);
  EXPECT_EQ(MemAvailableBytes(path + ".missing"), -1);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace deepinfer
