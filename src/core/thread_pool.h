// A persistent pool of worker threads for data-parallel kernels.
//
// Threads are created once; ParallelFor hands each participant (the caller
// included) a contiguous, deterministic range of [0, n): the split depends
// only on n and the thread count, never on timing, so results that depend on
// the split are reproducible. Not re-entrant: ParallelFor must not be called
// from inside a ParallelFor body, and only one thread may call it at a time.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace deepinfer {

class ThreadPool {
 public:
  // num_threads counts the calling thread: 1 means "run inline".
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Calls body(begin, end, thread_index) over a partition of [0, n) into at
  // most num_threads() chunks, and returns when all chunks are done.
  void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t, int)>& body);

  // The default thread count: the number of online CPUs.
  static int DefaultThreadCount();

 private:
  void WorkerLoop(int index);

  int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  const std::function<void(int64_t, int64_t, int)>* body_ = nullptr;
  int64_t n_ = 0;
  int64_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace deepinfer
