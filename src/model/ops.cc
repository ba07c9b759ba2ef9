#include "model/ops.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "backend/cpu/activation_kernels.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/norm_kernel.h"
#include "core/check.h"
#include "tensor/dequant.h"

namespace deepinfer::ops {

namespace {

constexpr int kDotLanes = 16;
// Below this many multiply-adds, waking the pool costs more than it saves.
constexpr int64_t kMinParallelCost = 1 << 15;

}  // namespace

float Dot(const float* a, const float* b, int64_t n) {
  float acc[kDotLanes] = {};
  int64_t i = 0;
  for (; i + kDotLanes <= n; i += kDotLanes) {
    for (int l = 0; l < kDotLanes; ++l) {
      acc[l] += a[i + l] * b[i + l];
    }
  }
  // Pairwise combine: 16 -> 8 -> 4 -> 2 -> 1.
  for (int width = kDotLanes / 2; width >= 1; width /= 2) {
    for (int l = 0; l < width; ++l) {
      acc[l] += acc[l + width];
    }
  }
  float tail = 0.0f;
  for (; i < n; ++i) {
    tail += a[i] * b[i];
  }
  return acc[0] + tail;
}

void RmsNorm(const float* x, const float* weight, int64_t n, double eps, float* out) {
  cpu::RmsNorm(x, weight, n, eps, out);  // backend/cpu/norm_kernel.h: SIMD, scalar reference
}

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

void MatMul(const TensorView& w, const float* x, int64_t n_tokens, const float* bias, float* y,
            ThreadPool& pool) {
  cpu::MatMul(w, x, n_tokens, bias, y, pool);
}

void SharedInputMatMul(std::initializer_list<Projection> projections, const float* x, int64_t n_tokens,
                       ThreadPool& pool) {
  // q / k / v at most: a fixed array, no allocation per call on the decode path.
  constexpr size_t kMaxProjections = 4;
  DI_CHECK(projections.size() <= kMaxProjections);
  cpu::MatMulTarget targets[kMaxProjections];
  size_t n = 0;
  for (const Projection& p : projections) targets[n++] = {p.w, p.bias, p.y};
  cpu::MatMulShared(std::span<const cpu::MatMulTarget>(targets, n), x, n_tokens, pool);
}

void SiluMul(float* gate, const float* up, int64_t n) {
  cpu::SiluMul(gate, up, n);  // backend/cpu/activation_kernels.h
}

}  // namespace deepinfer::ops
