// TaskPool: a fixed set of worker threads running queued tasks in FIFO
// order. The server runs request preparation (JSON parsing, chat templates,
// tokenization) and grammar compilation on pools of its own, so the HTTP I/O
// threads never block on them: /health and other connections stay responsive
// while a slow request is being prepared.
//
// Thread-safety: Post may be called from any thread. The destructor runs
// every task already queued, then joins the workers; tasks must not Post to
// the pool that is being destroyed.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"

namespace deepinfer::server {

class TaskPool {
 public:
  // Unavailable when a thread cannot be created (nothing is left running).
  // `nice` > 0 lowers the workers' CPU priority (Linux per-thread nice), for
  // background work that must not take the CPU from interactive requests.
  static StatusOr<std::unique_ptr<TaskPool>> Create(const std::string& name, int num_threads,
                                                    size_t max_queued, int nice = 0);
  ~TaskPool();
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  // Queues `task`; false (task dropped) when max_queued tasks are waiting.
  bool Post(std::function<void()> task);
  size_t num_queued() const;

 private:
  explicit TaskPool(size_t max_queued) : max_queued_(max_queued) {}
  void WorkerLoop(int nice);

  const size_t max_queued_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace deepinfer::server
