// Reference CPU kernels of the forward pass: plain C++ loops, written so the
// compiler can vectorize them, with every reduction in an order fixed by the
// problem size alone (never by the number of tokens in the batch or by the
// thread split). That makes a token's result bit-identical whether it runs
// alone or batched, and gives the future SIMD kernels a reference to match.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>

#include "core/thread_pool.h"
#include "tensor/tensor_view.h"

namespace deepinfer::ops {

// sum_i a[i] * b[i]: 16 strided partial sums (lane l takes i = l mod 16),
// combined pairwise, plus the tail in index order. Depends only on n.
float Dot(const float* a, const float* b, int64_t n);

// out[i] = x[i] * (1 / sqrt(mean(x^2) + eps)) * weight[i]; the mean is
// accumulated in double, in an order fixed by n. out may alias x.
// (backend/cpu/norm_kernel.h; SiluMul: backend/cpu/activation_kernels.h.)
void RmsNorm(const float* x, const float* weight, int64_t n, double eps, float* out);

// y[t * N + r] = dot(W[r, :], x[t * K : (t+1) * K]) (+ bias[r]) for t < n_tokens
// and r < N, where W is [N, K] in any DType and x is f32 [n_tokens, K]: the
// CPU backend's kernels (src/backend/cpu/matmul.h, docs/kernels.md) at the
// process's ISA level. Batch-invariant; quantized weights use int8-quantized
// activations. Parallel over weight rows. bias may be null.
void MatMul(const TensorView& w, const float* x, int64_t n_tokens, const float* bias, float* y,
            ThreadPool& pool);

// One weight matrix of SharedInputMatMul.
struct Projection {
  const TensorView* w = nullptr;
  const float* bias = nullptr;  // may be null
  float* y = nullptr;
};

// Several matrices of one K applied to the same x (q / k / v; gate / up): the
// same results as one MatMul each, with the activations prepared once and one
// parallel loop over all their rows (cpu::MatMulShared).
void SharedInputMatMul(std::initializer_list<Projection> projections, const float* x, int64_t n_tokens,
                       ThreadPool& pool);

// gate[i] = silu(gate[i]) * up[i].
void SiluMul(float* gate, const float* up, int64_t n);

// Runs body(begin, end, thread) over [0, n): on the pool when the job is big
// enough to pay for waking the workers (`cost` ~ multiply-adds), inline otherwise.
// The split never changes results (each index is computed by one thread).
void ParallelForCost(ThreadPool& pool, int64_t n, int64_t cost,
                     const std::function<void(int64_t, int64_t, int)>& body);

}  // namespace deepinfer::ops
