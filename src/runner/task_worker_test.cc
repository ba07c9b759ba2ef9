#include "runner/task_worker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace deepinfer {
namespace {

// The task runs on the worker's thread, and Join returns only after it has
// finished: its write is visible to the owner.
TEST(TaskWorkerTest, JoinWaitsForTheTaskOnAnotherThread) {
  TaskWorker worker;
  std::thread::id ran_on;
  int value = 0;
  worker.Start([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ran_on = std::this_thread::get_id();
    value = 42;
  });
  worker.Join();
  EXPECT_EQ(value, 42);
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

// One thread serves every task: the worker is reused, not recreated.
TEST(TaskWorkerTest, ReusesOneThreadAcrossTasks) {
  TaskWorker worker;
  std::thread::id first, second;
  worker.Start([&] { first = std::this_thread::get_id(); });
  worker.Join();
  worker.Start([&] { second = std::this_thread::get_id(); });
  worker.Join();
  EXPECT_EQ(first, second);
}

// The owner's work overlaps the task: both run at once.
TEST(TaskWorkerTest, TaskOverlapsTheOwnersWork) {
  TaskWorker worker;
  std::atomic<bool> owner_waiting{false}, task_saw_owner{false};
  worker.Start([&] {
    while (!owner_waiting.load()) std::this_thread::yield();
    task_saw_owner = true;
  });
  owner_waiting = true;  // would deadlock if Start ran the task inline
  worker.Join();
  EXPECT_TRUE(task_saw_owner.load());
}

TEST(TaskWorkerTest, JoinWithoutATaskReturnsAtOnce) {
  TaskWorker worker;
  worker.Join();
}

}  // namespace
}  // namespace deepinfer
