// TaskWorker: one persistent thread that runs one task at a time for its
// owner, so a step can overlap a small job with its own work without creating
// a thread per step.
//
// The step runner uses it for the constraint masks, filled while the forward
// pass runs. Not core/thread_pool.h: ParallelFor blocks its caller until the
// job is done, and the forward pass itself issues ParallelFor on the model's
// pool, which takes one caller at a time; a mask job on that pool would either
// serialize with the forward pass or call it re-entrantly.
//
// Thread-safety: Start and Join from one owner thread, alternating.
#pragma once

#include <condition_variable>
#include <functional>
#include <thread>

#include "core/mutex.h"
#include "core/thread_annotations.h"

namespace deepinfer {

class TaskWorker {
 public:
  TaskWorker();
  ~TaskWorker();  // joins the thread; a started task finishes first
  TaskWorker(const TaskWorker&) = delete;
  TaskWorker& operator=(const TaskWorker&) = delete;

  // Runs `task` on the worker thread. REQUIRES: no task started since the last Join.
  void Start(std::function<void()> task) EXCLUDES(mu_);
  // Returns once the started task has finished (at once if none was started).
  void Join() EXCLUDES(mu_);

 private:
  void Loop() EXCLUDES(mu_);

  Mutex mu_;
  std::condition_variable cv_;
  std::function<void()> task_ GUARDED_BY(mu_);  // started, not yet taken by the thread
  bool running_ GUARDED_BY(mu_) = false;        // the thread runs a task
  bool quit_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace deepinfer
