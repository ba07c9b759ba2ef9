#include "core/thread_pool.h"

#include "core/check.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace deepinfer {
namespace {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// Spins until done() or kSpinMicros elapse; returns done()'s last value.
template <class Done>
bool SpinUntil(Done done) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::microseconds(ThreadPool::kSpinMicros);
  for (int i = 1;; ++i) {
    if (done()) return true;
    CpuRelax();
    if (i % 32 == 0 && Clock::now() >= deadline) return done();
  }
}

// Guided partition: each chunk takes 1 / (2 * threads) of what is left, so
// the first chunks are long contiguous runs (a GEMV streams its rows) and
// the last ones are single items, and whichever thread finishes its share
// first waits at most one small chunk for the other. Equal chunks made the
// early finisher wait half a chunk per call on average, hundreds of times per
// token. Writes the chunk starts (and n last) to `starts`.
void GuidedChunkStarts(int64_t n, int threads, std::vector<int64_t>* starts) {
  starts->clear();
  for (int64_t b = 0; b < n;) {
    starts->push_back(b);
    const int64_t left = n - b;
    b += std::max<int64_t>(1, (left + 2 * threads - 1) / (2 * threads));
  }
  starts->push_back(n);
}
}  // namespace

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {
  try {
    for (int i = 1; i < num_threads_; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
  } catch (...) {
    // A thread could not be created (std::system_error, e.g. under a memory
    // or process limit): stop and join the ones that started, so the error
    // reaches the caller instead of std::terminate on a joinable thread.
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_.store(true, std::memory_order_release);
    }
    work_cv_.notify_all();
    for (std::thread& t : workers_) t.join();
    throw;
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true, std::memory_order_release);
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

int ThreadPool::DefaultThreadCount() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

void ThreadPool::ParallelFor(int64_t n, const std::function<void(int64_t, int64_t, int)>& body) {
  if (n <= 0) return;
  if (num_threads_ == 1 || n == 1) {
    body(0, n, 0);
    return;
  }
  GuidedChunkStarts(n, num_threads_, &chunk_starts_);
  const int64_t chunks = static_cast<int64_t>(chunk_starts_.size()) - 1;
  DI_CHECK(chunks < (1 << 16));  // the claim word's chunk fields
  body_ = &body;
  chunks_done_.store(0, std::memory_order_relaxed);
  ++job_id_;
  claim_.store((uint64_t{job_id_} << 32) | (static_cast<uint64_t>(chunks) << 16), std::memory_order_release);
  {
    // Under the lock so that a worker about to sleep either sees the new
    // generation in its predicate or is already waiting when we notify.
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  work_cv_.notify_all();

  RunChunks(0);

  auto all_done = [this, chunks] { return chunks_done_.load(std::memory_order_acquire) == chunks; };
  if (!SpinUntil(all_done)) {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, all_done);
  }
  body_ = nullptr;
}

void ThreadPool::RunChunks(int thread_index) {
  uint64_t word = claim_.load(std::memory_order_acquire);
  for (;;) {
    const int64_t chunks = static_cast<int64_t>((word >> 16) & 0xFFFF);
    const int64_t next = static_cast<int64_t>(word & 0xFFFF);
    if (next >= chunks) return;  // all claimed (or no job yet)
    // On failure `word` is reloaded: another thread claimed, or a new job began.
    if (!claim_.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
      continue;
    }
    (*body_)(chunk_starts_[static_cast<size_t>(next)], chunk_starts_[static_cast<size_t>(next) + 1],
             thread_index);
    if (chunks_done_.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks) {
      // The caller may be between its predicate check and its wait: taking
      // the lock orders this notify after that wait begins.
      std::lock_guard<std::mutex> lock(mu_);
      done_cv_.notify_one();
    }
    word = claim_.load(std::memory_order_acquire);
  }
}

void ThreadPool::WorkerLoop(int index) {
  int64_t seen = 0;
  for (;;) {
    auto has_news = [&] {
      return stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen;
    };
    if (!SpinUntil(has_news)) {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, has_news);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = generation_.load(std::memory_order_acquire);
    RunChunks(index);
  }
}

}  // namespace deepinfer
