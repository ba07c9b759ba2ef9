// A parallel loop that stays inline when the job is too small to pay for
// waking the pool's workers.
#pragma once

#include <cstdint>
#include <functional>

#include "core/thread_pool.h"

namespace deepinfer::cpu {

// Runs body(begin, end, thread) over [0, n): on the pool when the job is big
// enough (`cost` ~ multiply-adds), inline otherwise. The split never changes
// results as long as each index is computed by one thread alone.
void ParallelForCost(ThreadPool& pool, int64_t n, int64_t cost,
                     const std::function<void(int64_t, int64_t, int)>& body);

}  // namespace deepinfer::cpu
