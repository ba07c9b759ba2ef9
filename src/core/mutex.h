// Mutex and MutexLock: std::mutex / std::unique_lock with thread-safety
// annotations (core/thread_annotations.h), so clang checks GUARDED_BY members
// and REQUIRES functions at compile time.
//
// Condition variables wait on MutexLock::native(). Write the wait as a loop,
// `while (!ready_) cv_.wait(lock.native());`, not with a predicate lambda: the
// analysis checks a lambda as a function of its own that holds no lock.
#pragma once

#include <mutex>

#include "core/thread_annotations.h"

namespace deepinfer {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds `mu` from construction to destruction; Unlock()/Lock() release and
// retake it in between (e.g. around a callback that must run unlocked).
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : lock_(mu.mu_) {}
  ~MutexLock() RELEASE() = default;
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() RELEASE() { lock_.unlock(); }
  void Lock() ACQUIRE() { lock_.lock(); }

  // For std::condition_variable::wait / wait_for / wait_until. The wait
  // releases and retakes the mutex; the analysis treats it as held throughout.
  std::unique_lock<std::mutex>& native() { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace deepinfer
