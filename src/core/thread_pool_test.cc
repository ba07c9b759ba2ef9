#include "core/thread_pool.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/sanitizers.h"

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

// Chunk bounds depend only on n and the thread count: 100 items on 3 threads,
// each chunk ceil(left / 6) of what is left (hand-computed): 17 (83 left),
// 14 (69), 12 (57), 10 (47), 8 (39), 7 (32), 6 (26), 5 (21), 4 (17), 3 (14),
// 3 (11), 2 (9), 2 (7), 2 (5), 1, 1, 1, 1, 1.
TEST(ThreadPoolTest, ChunkBoundsAreDeterministic) {
  ThreadPool pool(3);
  const int64_t sizes[] = {17, 14, 12, 10, 8, 7, 6, 5, 4, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1};
  std::vector<std::pair<int64_t, int64_t>> expected;
  int64_t b = 0;
  for (int64_t len : sizes) {
    expected.push_back({b, b + len});
    b += len;
  }
  ASSERT_EQ(b, 100);
  for (int run = 0; run < 20; ++run) {
    std::mutex mu;
    std::vector<std::pair<int64_t, int64_t>> seen;
    pool.ParallelFor(100, [&](int64_t b, int64_t e, int) {
      std::lock_guard<std::mutex> lock(mu);
      seen.push_back({b, e});
    });
    std::sort(seen.begin(), seen.end());
    ASSERT_EQ(seen, expected) << "run " << run;
  }
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

// Both threads really run chunks, and thread_index names the running thread
// (0 = the caller). Each thread's first chunk waits until the other thread has
// started one too, so neither can take every chunk alone.
TEST(ThreadPoolTest, CallerAndWorkerBothRunChunks) {
  ThreadPool pool(2);
  std::atomic<int> caller{0}, worker{0}, arrived{0};
  std::atomic<bool> timed_out{false};
  const std::thread::id main_id = std::this_thread::get_id();
  pool.ParallelFor(8, [&](int64_t, int64_t, int t) {
    const bool on_caller = std::this_thread::get_id() == main_id;
    EXPECT_EQ(t == 0, on_caller);
    if ((on_caller ? caller : worker)++ == 0) {
      arrived++;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (arrived.load() < 2) {
        if (std::chrono::steady_clock::now() > deadline) {
          timed_out = true;
          break;
        }
        std::this_thread::yield();
      }
    }
  });
  EXPECT_FALSE(timed_out.load());
  EXPECT_GE(caller.load(), 1);
  EXPECT_GE(worker.load(), 1);
  EXPECT_EQ(caller.load() + worker.load(), 6);  // 8 items on 2 threads: chunks 2, 2, 1, 1, 1, 1
}

// A worker that is slow to run its chunk (as when the OS deschedules it) does
// not hold back the other chunks: the caller takes them.
TEST(ThreadPoolTest, CallerTakesTheChunksOfASlowWorker) {
  ThreadPool pool(2);
  std::atomic<int> caller{0}, worker{0};
  const std::thread::id main_id = std::this_thread::get_id();
  pool.ParallelFor(8, [&](int64_t, int64_t, int) {
    if (std::this_thread::get_id() == main_id) {
      caller++;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // time for the worker to claim one
    } else {
      worker++;
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  });
  EXPECT_EQ(caller.load() + worker.load(), 6);  // 8 items on 2 threads: chunks 2, 2, 1, 1, 1, 1
  EXPECT_GE(worker.load(), 1);
  EXPECT_LE(worker.load(), 2);  // one chunk while the caller ran the rest, at most one more
  EXPECT_GE(caller.load(), 4);
}

// Issue 19 (2): when a thread cannot be created (here: an address-space
// limit too small for 1024 stacks) the constructor throws std::system_error
// after joining the threads it started, instead of std::terminate on a
// joinable std::thread. Run in a child process: the limit must not touch
// the test binary.
TEST(ThreadPoolDeathTest, ThreadCreationFailureThrowsCleanly) {
  if (kUnderSanitizer)
    GTEST_SKIP() << "the sanitizers' shadow memory needs more address space than the limit this test sets";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        rlimit limit{};
        getrlimit(RLIMIT_AS, &limit);
        limit.rlim_cur = rlim_t{1} << 30;  // room for far fewer than 1024 thread stacks
        setrlimit(RLIMIT_AS, &limit);
        try {
          ThreadPool pool(1024);
        } catch (const std::system_error&) {
          _exit(3);
        }
        _exit(0);  // the limit did not bite: also no crash
      },
      ::testing::ExitedWithCode(3), "");
}

}  // namespace
}  // namespace deepinfer
