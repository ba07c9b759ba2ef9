#include "core/thread_pool.h"

#include <atomic>
#include <chrono>
#include <thread>
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

// Back-to-back jobs (workers still spinning) and jobs after the workers went
// to sleep (idle longer than the spin bound) must both run every index once.
TEST(ThreadPoolTest, SpinningAndSleepingWorkersBothPickUpJobs) {
  ThreadPool pool(2);
  std::atomic<int64_t> total{0};
  auto job = [&](int64_t b, int64_t e, int) { total += e - b; };
  for (int i = 0; i < 2000; ++i) pool.ParallelFor(64, job);
  EXPECT_EQ(total.load(), 2000 * 64);
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(ThreadPool::kSpinMicros * 20));
    pool.ParallelFor(64, job);
  }
  EXPECT_EQ(total.load(), 2003 * 64);
}

// Both threads really run chunks: the worker's share is not done by the caller.
TEST(ThreadPoolTest, WorkerRunsItsChunk) {
  ThreadPool pool(2);
  std::atomic<int> caller{0}, worker{0};
  const std::thread::id main_id = std::this_thread::get_id();
  pool.ParallelFor(2, [&](int64_t, int64_t, int t) {
    (std::this_thread::get_id() == main_id ? caller : worker)++;
    EXPECT_EQ(t == 0, std::this_thread::get_id() == main_id);
  });
  EXPECT_EQ(caller.load(), 1);
  EXPECT_EQ(worker.load(), 1);
}

}  // namespace
}  // namespace deepinfer
