// A persistent pool of worker threads for data-parallel kernels.
//
// Threads are created once. ParallelFor cuts [0, n) into contiguous chunks
// whose bounds depend only on n and the thread count, never on timing, so
// results that depend on the split are reproducible. Participants (the caller
// included) claim chunks from a shared counter: on a shared machine a worker
// that the OS has descheduled does not stall the step, the others take its
// chunks. Which thread runs a chunk is therefore not fixed, and one thread may
// run several chunks: a body must not keep per-thread state across calls
// keyed by thread_index as if it ran once. Not re-entrant: ParallelFor must
// not be called from inside a ParallelFor body, and only one thread may call
// it at a time.
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

  // num_threads counts the calling thread: 1 means "run inline". Throws
  // std::system_error when a thread cannot be created, after joining the
  // ones that were (callers at a module boundary turn it into a Status).
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Calls body(begin, end, thread_index) for every chunk of a partition of
  // [0, n), and returns when all chunks are done. Chunks shrink along [0, n):
  // each is 1 / (2 * num_threads()) of the items not yet in a chunk (at least
  // one), so early chunks are long runs and the last ones single items. thread_index < num_threads() names
  // the thread running the call (0 = the caller).
  void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t, int)>& body);

  // The default thread count: the number of online CPUs.
  static int DefaultThreadCount();

 private:
  void WorkerLoop(int index);
  // Claims and runs chunks of the current job until none is left.
  void RunChunks(int thread_index);

  int num_threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  // The job: written by the caller before claim_ is published (release),
  // read by a participant only after it claimed a chunk (acquire), so it is
  // stable: the caller cannot start the next job while a claimed chunk runs.
  const std::function<void(int64_t, int64_t, int)>* body_ = nullptr;
  std::vector<int64_t> chunk_starts_;  // chunk c is [starts[c], starts[c + 1])
  // Claim word: job id (32 bits) | chunk count (16) | next unclaimed chunk (16).
  // The id makes a late claim for a finished job fail instead of taking a
  // chunk of the next one.
  std::atomic<uint64_t> claim_{0};
  uint32_t job_id_ = 0;                 // caller only
  std::atomic<int> chunks_done_{0};     // of the current job
  std::atomic<int64_t> generation_{0};  // bumped per job: wakes the workers
  std::atomic<bool> stop_{false};
};

}  // namespace deepinfer
