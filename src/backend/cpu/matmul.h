// Matrix multiply of a weight matrix by a batch of activation rows: the
// linear layers of the forward pass (decode GEMV when n_tokens == 1, prefill
// and batched-decode GEMM otherwise).
//
// Results are batch-invariant: y for a token is bit-identical whatever
// n_tokens, the thread count or the split (kernels.h says how). They depend on
// the ISA level (isa.h), which is fixed per process.
#pragma once

#include <cstdint>
#include <span>

#include "backend/cpu/isa.h"
#include "core/thread_pool.h"
#include "tensor/tensor_view.h"

namespace deepinfer::cpu {

struct PackedLayout;  // packed_weights.h

// y[t * N + r] = dot(W[r, :], x[t * K : (t+1) * K]) (+ bias[r]) for t < n_tokens,
// r < N, where W = w is [N, K] in any type DequantizeRow accepts (file
// layout, any alignment) and x is f32 [n_tokens, K]; or, with `packed` set,
// w is a packed copy (packed_weights.h: PackedWeights::Pack's view and
// layout). bias may be null. y must not alias x. Parallel over weight rows on `pool`. Preconditions
// (checked): w is 2-D-shaped with K a whole number of blocks. Not re-entrant on one pool.
void MatMul(const TensorView& w, const PackedLayout* packed, const float* x, int64_t n_tokens,
            const float* bias, float* y, ThreadPool& pool);

// The same with an explicit ISA level (tests, benchmarks); `isa` must be
// supported by the CPU (checked).
void MatMulWithIsa(Isa isa, const TensorView& w, const PackedLayout* packed, const float* x, int64_t n_tokens,
                   const float* bias, float* y, ThreadPool& pool);

// One matrix of MatMulShared: y = W x (+ bias), as in MatMul.
struct MatMulTarget {
  const TensorView* w = nullptr;
  const PackedLayout* packed = nullptr;  // null: w in file layout
  const float* bias = nullptr;
  float* y = nullptr;
};

// Several matrices applied to the same x (q / k / v, gate / up): bit-for-bit
// the results of one MatMul per target, but the activations are quantized
// or rounded once and one parallel loop covers every target's rows - a
// decode step makes ~3 fewer pool round trips per layer, and the threads
// balance over the union instead of idling at the end of each small matrix.
// All targets have the same K (checked); targets of different weight types
// each get their own activations (MatMulGrouped).
void MatMulShared(std::span<const MatMulTarget> targets, const float* x, int64_t n_tokens, ThreadPool& pool);
void MatMulSharedWithIsa(Isa isa, std::span<const MatMulTarget> targets, const float* x, int64_t n_tokens,
                         ThreadPool& pool);

// One matrix of MatMulGrouped, with its own input: y = W x (+ bias) for x
// f32 [n_tokens, K] (n_tokens 0: nothing), as in MatMul.
struct MatMulGroupTarget {
  const TensorView* w = nullptr;
  const PackedLayout* packed = nullptr;  // null: w in file layout
  const float* x = nullptr;
  int64_t n_tokens = 0;
  const float* bias = nullptr;
  float* y = nullptr;
};

// Independent matrix products (a mixture-of-experts layer's experts, each
// over its own tokens) in one parallel loop over all their rows: bit for bit
// the results of one MatMul per target. Targets with the same x, n_tokens and
// weight type share one preparation of the activations. Any number of targets
// and weight types; no y may alias any x. No allocation per call once the
// calling thread has seen a group as large.
void MatMulGrouped(std::span<const MatMulGroupTarget> targets, ThreadPool& pool);
void MatMulGroupedWithIsa(Isa isa, std::span<const MatMulGroupTarget> targets, ThreadPool& pool);

// True when `isa` has a dedicated kernel for weight type t (otherwise MatMul
// dequantizes rows to f32 first, which is correct but slow).
bool HasFastKernel(Isa isa, DType t);

// The kernel a model's matrix of type t runs at `isa` (packed when the level
// packs t: PacksType), for reports: e.g. "packed-int8-vnni",
// "bf16-panels-amx", "f32-fma", and "fallback" for the dequantize-a-row-
// to-f32 path.
const char* MatMulKernelName(Isa isa, DType t);

}  // namespace deepinfer::cpu
