#include "core/mutex.h"

#include <condition_variable>
#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace deepinfer {
namespace {

struct Counter {
  Mutex mu;
  int64_t value GUARDED_BY(mu) = 0;
};

// Four threads add 1 a hundred thousand times each under the lock: any lost
// update (the lock not excluding) leaves the sum short of 400000.
TEST(MutexTest, ExcludesConcurrentUpdates) {
  Counter c;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&c] {
      for (int i = 0; i < 100000; ++i) {
        MutexLock lock(c.mu);
        const int64_t v = c.value;
        c.value = v + 1;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  MutexLock lock(c.mu);
  EXPECT_EQ(c.value, 400000);
}

// A waiter blocks on a condition variable through native(); the notifier can
// only set the flag because the wait released the mutex.
TEST(MutexTest, ConditionVariableWaitReleasesTheLock) {
  struct {
    Mutex mu;
    std::condition_variable cv;
    bool ready GUARDED_BY(mu) = false;
    int64_t seen GUARDED_BY(mu) = 0;
  } s;
  std::thread waiter([&s] {
    MutexLock lock(s.mu);
    while (!s.ready) s.cv.wait(lock.native());
    s.seen = 42;
  });
  {
    MutexLock lock(s.mu);
    s.ready = true;
  }
  s.cv.notify_all();
  waiter.join();
  MutexLock lock(s.mu);
  EXPECT_EQ(s.seen, 42);
}

// Unlock() lets another thread take the mutex before the scope ends.
TEST(MutexTest, UnlockInsideTheScopeLetsOthersIn) {
  Counter c;
  MutexLock lock(c.mu);
  c.value = 1;
  lock.Unlock();
  std::thread other([&c] {
    MutexLock inner(c.mu);
    c.value = 2;
  });
  other.join();
  lock.Lock();
  EXPECT_EQ(c.value, 2);
}

}  // namespace
}  // namespace deepinfer
