#include "runner/task_worker.h"

#include "core/check.h"

namespace deepinfer {

TaskWorker::TaskWorker() : thread_([this] { Loop(); }) {}

TaskWorker::~TaskWorker() {
  Join();
  {
    MutexLock lock(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void TaskWorker::Start(std::function<void()> task) {
  {
    MutexLock lock(mu_);
    DI_CHECK_MSG(!task_ && !running_, "TaskWorker::Start: the previous task was not joined");
    task_ = std::move(task);
  }
  cv_.notify_all();
}

void TaskWorker::Join() {
  MutexLock lock(mu_);
  while (task_ || running_) cv_.wait(lock.native());
}

void TaskWorker::Loop() {
  MutexLock lock(mu_);
  for (;;) {
    while (!quit_ && !task_) cv_.wait(lock.native());
    if (quit_) return;
    std::function<void()> task = std::move(task_);
    task_ = nullptr;
    running_ = true;
    lock.Unlock();  // the task runs unlocked: Join waits on running_
    task();
    lock.Lock();
    running_ = false;
    cv_.notify_all();
  }
}

}  // namespace deepinfer
