#include "backend/cpu/matmul.h"

#include <algorithm>

#include "backend/cpu/activations.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/packed_weights.h"
#include "core/check.h"
#include "tensor/dequant.h"

namespace deepinfer::cpu {
namespace {

// Rows per parallel work item: a multiple of every kernel's row tile, small
// enough that GEMV on small matrices still splits across threads.
constexpr int64_t kRowsPerTask = 16;
// Below this many multiply-adds, waking the pool costs more than it saves.
constexpr int64_t kMinParallelCost = 1 << 15;

const KernelSet& KernelsFor(Isa isa) {
  DI_CHECK(CpuSupports(isa));
  switch (isa) {
    case Isa::kAvx512: return Avx512Kernels();
    case Isa::kAvx2: return Avx2Kernels();
    case Isa::kScalar: break;
  }
  return ScalarKernels();
}

bool UsesInt8Activations(DType t) { return t == DType::kQ8_0 || t == DType::kQ4_0 || t == DType::kQ4_K; }

}  // namespace

bool HasFastKernel(Isa isa, DType t) { return KernelsFor(isa).For(t) != nullptr; }

void MatMulWithIsa(Isa isa, const TensorView& w, const float* x, int64_t n_tokens, const float* bias,
                   float* y, ThreadPool& pool) {
  const int64_t n_rows = w.rows(), k = w.cols();
  DI_CHECK(CanDequantize(w.dtype));
  const int64_t row_bytes = RowBytes(w.dtype, k);
  DI_CHECK(row_bytes > 0);
  if (n_tokens <= 0 || n_rows <= 0) return;

  const KernelSet& kernels = KernelsFor(isa);
  RowRangeKernel kernel = kernels.For(w.dtype);
  MatMulArgs args;
  args.dtype = w.dtype;
  args.w = static_cast<const uint8_t*>(w.data);
  args.row_bytes = row_bytes;
  if (const std::optional<PackedLayout> packed = FindPackedLayout(w.data)) {
    DI_CHECK(packed->dtype == w.dtype && packed->rows == n_rows && packed->k == k);
    kernel = kernels.ForPacked(w.dtype);
    DI_CHECK_MSG(kernel != nullptr, "packed weights used with an ISA level that cannot read them");
    args.row_bytes = packed->row_stride;
  }
  args.k = k;
  args.n_rows = n_rows;
  args.n_tokens = n_tokens;
  args.x = x;
  args.bias = bias;
  args.y = y;
  if (kernel == nullptr) {
    kernel = DequantizingKernel();
  } else if (UsesInt8Activations(w.dtype)) {
    // Scratch of the calling thread, reused across calls (sized for the
    // largest batch seen). One MatMul at a time per thread, so no sharing.
    thread_local Int8Activations scratch;
    // A pointer, not the name: inside the lambda a thread_local name would
    // resolve to the pool worker's own instance.
    Int8Activations* xq = &scratch;
    ResizeActivations(k, n_tokens, kernels.prepare != nullptr, xq);
    auto quantize = [&](int64_t tb, int64_t te, int) {
      for (int64_t t = tb; t < te; ++t) {
        kernels.quantize_token(x + t * k, t, xq);
        if (kernels.prepare != nullptr) kernels.prepare(xq, w.dtype, t);
      }
    };
    if (n_tokens >= 8 && pool.num_threads() > 1) {
      pool.ParallelFor(n_tokens, quantize);
    } else {
      quantize(0, n_tokens, 0);
    }
    args.xq = xq;
  }

  const int64_t n_tasks = (n_rows + kRowsPerTask - 1) / kRowsPerTask;
  auto body = [&](int64_t tb, int64_t te, int) {
    kernel(args, tb * kRowsPerTask, std::min(n_rows, te * kRowsPerTask));
  };
  if (pool.num_threads() == 1 || n_rows * k * n_tokens < kMinParallelCost) {
    body(0, n_tasks, 0);
  } else {
    pool.ParallelFor(n_tasks, body);
  }
}

void MatMul(const TensorView& w, const float* x, int64_t n_tokens, const float* bias, float* y,
            ThreadPool& pool) {
  MatMulWithIsa(ActiveIsa(), w, x, n_tokens, bias, y, pool);
}

}  // namespace deepinfer::cpu
