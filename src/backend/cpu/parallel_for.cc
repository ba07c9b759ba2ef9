#include "backend/cpu/parallel_for.h"

namespace deepinfer::cpu {

namespace {
// Below this many multiply-adds, waking the pool costs more than it saves.
constexpr int64_t kMinParallelCost = 1 << 15;
}  // namespace

void ParallelForCost(ThreadPool& pool, int64_t n, int64_t cost,
                     const std::function<void(int64_t, int64_t, int)>& body) {
  if (n <= 0) {
    return;
  }
  if (cost < kMinParallelCost || pool.num_threads() == 1) {
    body(0, n, 0);
  } else {
    pool.ParallelFor(n, body);
  }
}

}  // namespace deepinfer::cpu
