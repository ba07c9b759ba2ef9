#include "core/thread_pool.h"

#include <atomic>
#include <vector>

#include <gtest/gtest.h>

namespace deepinfer {
namespace {

TEST(ThreadPoolTest, CoversEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 2, 7, 100, 1001}) {
      std::vector<std::atomic<int>> hits(n);
      pool.ParallelFor(n, [&](int64_t b, int64_t e, int) {
        for (int64_t i = b; i < e; ++i) hits[i]++;
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "threads=" << threads << " n=" << n;
    }
  }
}

TEST(ThreadPoolTest, SplitIsDeterministic) {
  ThreadPool pool(3);
  std::vector<int> owner_a(10), owner_b(10);
  pool.ParallelFor(10, [&](int64_t b, int64_t e, int t) { for (auto i = b; i < e; ++i) owner_a[i] = t; });
  pool.ParallelFor(10, [&](int64_t b, int64_t e, int t) { for (auto i = b; i < e; ++i) owner_b[i] = t; });
  EXPECT_EQ(owner_a, owner_b);
  EXPECT_EQ(owner_a[0], 0);
  EXPECT_EQ(owner_a[9], 2);
}

}  // namespace
}  // namespace deepinfer
