// A persistent pool of worker threads for data-parallel kernels.
//
// Threads are created once; ParallelFor hands each participant (the caller
// included) a contiguous, deterministic range of [0, n): the split depends
// only on n and the thread count, never on timing, so results that depend on
// the split are reproducible. Not re-entrant: ParallelFor must not be called
// from inside a ParallelFor body, and only one thread may call it at a time.
//
// Waiting: the forward pass issues hundreds of short ParallelFor calls per
// token, so idle workers first spin (with pause) for a bounded time
// (kSpinMicros) watching for the next job, and only then sleep on a condition
// variable; the caller likewise spins, then sleeps, while waiting for the
// workers. The bound matters on a shared machine: an unbounded spin barrier
// collapses when another process holds one of the cores.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace deepinfer {

class ThreadPool {
 public:
  // How long a waiting thread spins before it sleeps.
  static constexpr int kSpinMicros = 50;

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
  // The job: written by the caller before generation_ is bumped (release),
  // read by workers after they observe the new generation (acquire).
  const std::function<void(int64_t, int64_t, int)>* body_ = nullptr;
  int64_t n_ = 0;
  std::atomic<int64_t> generation_{0};
  std::atomic<int> pending_{0};  // workers still running the current job
  std::atomic<bool> stop_{false};
};

}  // namespace deepinfer
