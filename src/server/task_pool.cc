#include "server/task_pool.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <system_error>
#include <utility>

namespace deepinfer::server {

StatusOr<std::unique_ptr<TaskPool>> TaskPool::Create(const std::string& name, int num_threads,
                                                     size_t max_queued, int nice) {
  if (num_threads < 1) return InvalidArgument(name + ": the pool needs at least one thread");
  std::unique_ptr<TaskPool> pool(new TaskPool(max_queued));
  try {
    for (int i = 0; i < num_threads; ++i)
      pool->workers_.emplace_back([p = pool.get(), nice] { p->WorkerLoop(nice); });
  } catch (const std::system_error& e) {
    // The destructor stops and joins the threads that did start.
    return Unavailable(name + ": cannot create thread " + std::to_string(pool->workers_.size() + 1) + " of " +
                       std::to_string(num_threads) + " (" + e.what() + ")");
  }
  return pool;
}

TaskPool::~TaskPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

bool TaskPool::Post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ || queue_.size() >= max_queued_) return false;
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
  return true;
}

size_t TaskPool::num_queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.size();
}

void TaskPool::WorkerLoop(int nice) {
  if (nice > 0) {
    // Best effort: on Linux a thread's nice value is its own (tid).
    const auto tid = static_cast<id_t>(syscall(SYS_gettid));
    errno = 0;
    const int current = getpriority(PRIO_PROCESS, tid);
    if (errno == 0) (void)setpriority(PRIO_PROCESS, tid, std::min(current + nice, 19));
  }
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything queued ran
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
}

}  // namespace deepinfer::server
