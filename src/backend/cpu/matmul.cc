#include "backend/cpu/matmul.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "backend/cpu/activations.h"
#include "backend/cpu/aligned_buffer.h"
#include "backend/cpu/amx.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/packed_weights.h"
#include "backend/cpu/parallel_for.h"
#include "core/check.h"
#include "tensor/dequant.h"

namespace deepinfer::cpu {
namespace {

// Rows per parallel work item: a multiple of every kernel's row tile, small
// enough that GEMV on small matrices still splits across threads.
constexpr int64_t kRowsPerTask = 16;
// MatMulShared's usual targets (q, k, v: 3; gate, up: 2) fit a fixed array.
constexpr size_t kMaxSharedTargets = 4;

const KernelSet& KernelsFor(Isa isa) {
  DI_CHECK(CpuSupports(isa));
  switch (isa) {
    case Isa::kAvx512:
      return Avx512Kernels();
    case Isa::kAvx2:
      return Avx2Kernels();
    case Isa::kScalar:
      break;
  }
  return ScalarKernels();
}

int64_t RoundUp(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

// One matrix's kernel and arguments, before the activations are prepared.
struct Plan {
  RowRangeKernel kernel = nullptr;
  MatMulArgs args;
};

Plan PlanFor(const KernelSet& kernels, const TensorView& w, const PackedLayout* packed, int64_t n_tokens,
             const float* bias, float* y) {
  const int64_t n_rows = w.rows(), k = w.cols();
  DI_CHECK(CanDequantize(w.dtype));
  const int64_t row_bytes = RowBytes(w.dtype, k);
  DI_CHECK(row_bytes > 0);
  Plan plan;
  RowRangeKernel& kernel = plan.kernel;
  MatMulArgs& args = plan.args;
  kernel = kernels.For(w.dtype);
  args.dtype = w.dtype;
  args.w = static_cast<const uint8_t*>(w.data);
  args.row_bytes = row_bytes;
  if (packed != nullptr) {
    DI_CHECK(packed->dtype == w.dtype && packed->rows == n_rows && packed->k == k);
    kernel = packed->row_panels ? kernels.q8_0_row_panels : kernels.ForPacked(w.dtype);
    DI_CHECK_MSG(kernel != nullptr, "packed weights used with an ISA level that cannot read them");
    args.row_bytes = packed->row_stride;
  }
  args.k = k;
  args.n_rows = n_rows;
  args.n_tokens = n_tokens;
  args.bias = bias;
  args.y = y;
  if (kernel == nullptr) kernel = DequantizingKernel();
  return plan;
}

// fn(t) for every token: over the pool from 8 tokens on, inline below.
template <class Fn>
void ForEachToken(int64_t n_tokens, ThreadPool& pool, Fn fn) {
  if (n_tokens >= 8 && pool.num_threads() > 1) {
    pool.ParallelFor(n_tokens, [&](int64_t tb, int64_t te, int) {
      for (int64_t t = tb; t < te; ++t) fn(t);
    });
  } else {
    for (int64_t t = 0; t < n_tokens; ++t) fn(t);
  }
}

// Whether the plan's kernel reads the lanes, groups and tiles the set's
// `prepare` adds to int8 activations. Row panels read q, d and sum only, and
// at K = 64 preparing the rest cost as much as their GEMV.
bool ReadsPreparedLanes(const KernelSet& kernels, const Plan& plan) {
  return kernels.prepare != nullptr && plan.kernel != kernels.q8_0_row_panels;
}

// One set of prepared activations (int8 or bf16, by the weight type).
struct ActivationScratch {
  Int8Activations int8;
  AlignedBuffer<uint16_t> bf16;
};

// Fills the activation fields of `args` (x, and xq / xb where the kernel
// reads prepared activations) from f32 x: quantized or rounded once, into
// `scratch`.
void PrepareActivations(const KernelSet& kernels, const float* x, int64_t n_tokens, ThreadPool& pool,
                        Plan& plan, ActivationScratch* scratch) {
  MatMulArgs& args = plan.args;
  const int64_t k = args.k;
  const DType dtype = args.dtype;
  args.x = x;
  if (plan.kernel == DequantizingKernel()) {
    return;  // reads f32 x
  }
  if (UsesInt8Activations(dtype)) {
    Int8Activations* xq = &scratch->int8;
    const bool prepare = ReadsPreparedLanes(kernels, plan);
    ResizeActivations(k, n_tokens, prepare, xq);
    ForEachToken(n_tokens, pool, [&](int64_t t) {
      kernels.quantize_token(x + t * k, t, xq);
      if (prepare) kernels.prepare(xq, dtype, t);
    });
    args.xq = xq;
  } else if (dtype == DType::kBF16) {
    // bf16 kernels read bf16 activations (kernels.h): rounded here once per
    // call, not per row tile.
    const int64_t stride = RoundUp(k, 32);
    scratch->bf16.Resize(static_cast<size_t>(n_tokens * stride));
    uint16_t* xb = scratch->bf16.data();
    ForEachToken(n_tokens, pool,
                 [&](int64_t t) { kernels.round_bf16(x + t * k, k, stride, xb + t * stride); });
    args.xb = xb;
    args.xb_stride = stride;
  }
}

// True when targets a and b read the same prepared activations: the same x
// rows and a weight type (and so kernel) that prepares them the same way.
bool SameActivations(const KernelSet& kernels, const MatMulGroupTarget& a, const Plan& pa,
                     const MatMulGroupTarget& b, const Plan& pb) {
  return a.x == b.x && a.n_tokens == b.n_tokens && pa.args.dtype == pb.args.dtype &&
         (pa.kernel == DequantizingKernel()) == (pb.kernel == DequantizingKernel()) &&
         ReadsPreparedLanes(kernels, pa) == ReadsPreparedLanes(kernels, pb);
}

}  // namespace

bool HasFastKernel(Isa isa, DType t) { return KernelsFor(isa).For(t) != nullptr; }

const char* MatMulKernelName(Isa isa, DType t) {
  const KernelSet& kernels = KernelsFor(isa);
  const bool packed = PacksType(isa, t);
  if ((packed ? kernels.ForPacked(t) : kernels.For(t)) == nullptr) return "fallback";
  if (isa == Isa::kScalar) return "scalar";
  const bool avx512 = isa == Isa::kAvx512;
  switch (t) {
    case DType::kF32:
      return packed ? "f32-panels-fma" : "f32-fma";
    case DType::kF16:
      return packed ? "f16-panels-fma" : "f16-fma";
    case DType::kBF16:
      if (!packed) return avx512 ? "bf16-vdpbf16ps" : "bf16-avx2";
      return AmxBf16Enabled() ? "bf16-panels-amx" : "bf16-panels-vdpbf16ps";
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
      if (!packed) return avx512 ? "int8-vnni" : "int8-avx2";
      return AmxInt8Enabled() ? "packed-int8-vnni+amx" : "packed-int8-vnni";
    default:
      return "fallback";
  }
}

void MatMulWithIsa(Isa isa, const TensorView& w, const PackedLayout* packed, const float* x, int64_t n_tokens,
                   const float* bias, float* y, ThreadPool& pool) {
  const MatMulTarget target{&w, packed, bias, y};
  MatMulSharedWithIsa(isa, std::span<const MatMulTarget>(&target, 1), x, n_tokens, pool);
}

void MatMulGroupedWithIsa(Isa isa, std::span<const MatMulGroupTarget> targets, ThreadPool& pool) {
  if (targets.empty()) return;
  const KernelSet& kernels = KernelsFor(isa);
  // The calling thread's scratch, reused across calls (sized for the largest
  // group seen: no allocation per call once warm). One call at a time per
  // thread. The body below names these through the references, never the
  // thread_local names (which inside a worker would be the worker's own).
  thread_local std::vector<Plan> plans_scratch;
  thread_local std::vector<int64_t> first_task_scratch;
  thread_local std::vector<std::unique_ptr<ActivationScratch>> activations;
  std::vector<Plan>& plans = plans_scratch;
  std::vector<int64_t>& first_task = first_task_scratch;
  const size_t n = targets.size();
  plans.resize(n);
  first_task.assign(n + 1, 0);
  int64_t cost = 0;
  for (size_t i = 0; i < n; ++i) {
    const MatMulGroupTarget& t = targets[i];
    if (t.n_tokens <= 0) {
      plans[i] = Plan{};
      first_task[i + 1] = first_task[i];
      continue;
    }
    plans[i] = PlanFor(kernels, *t.w, t.packed, t.n_tokens, t.bias, t.y);
    first_task[i + 1] = first_task[i] + (plans[i].args.n_rows + kRowsPerTask - 1) / kRowsPerTask;
    cost += plans[i].args.n_rows * plans[i].args.k * t.n_tokens;
  }
  if (first_task[n] == 0) return;  // no rows at all
  size_t sets = 0;
  for (size_t i = 0; i < n; ++i) {
    if (first_task[i + 1] == first_task[i]) continue;
    size_t j = 0;
    while (j < i && !(first_task[j + 1] > first_task[j] &&
                      SameActivations(kernels, targets[j], plans[j], targets[i], plans[i]))) {
      ++j;
    }
    if (j < i) {
      plans[i].args.x = plans[j].args.x;
      plans[i].args.xq = plans[j].args.xq;
      plans[i].args.xb = plans[j].args.xb;
      plans[i].args.xb_stride = plans[j].args.xb_stride;
      continue;
    }
    if (sets == activations.size()) activations.push_back(std::make_unique<ActivationScratch>());
    PrepareActivations(kernels, targets[i].x, targets[i].n_tokens, pool, plans[i], activations[sets++].get());
  }
  // One loop over every target's row tasks (a target without rows has
  // none): the same (row, token) arithmetic as separate calls, with one pool
  // round trip instead of n.
  auto body = [&](int64_t tb, int64_t te, int) {
    size_t i =
        static_cast<size_t>(std::upper_bound(first_task.begin(), first_task.end(), tb) - first_task.begin()) -
        1;
    for (; i < n && tb < te; ++i) {
      if (tb >= first_task[i + 1]) continue;
      const int64_t end = std::min(te, first_task[i + 1]);
      const Plan& p = plans[i];
      p.kernel(p.args, (tb - first_task[i]) * kRowsPerTask,
               std::min(p.args.n_rows, (end - first_task[i]) * kRowsPerTask));
      tb = end;
    }
  };
  ParallelForCost(pool, first_task[n], cost, body);
}

void MatMulGrouped(std::span<const MatMulGroupTarget> targets, ThreadPool& pool) {
  MatMulGroupedWithIsa(ActiveIsa(), targets, pool);
}

void MatMulSharedWithIsa(Isa isa, std::span<const MatMulTarget> targets, const float* x, int64_t n_tokens,
                         ThreadPool& pool) {
  if (n_tokens <= 0 || targets.empty()) return;
  // A fixed array for the usual q / k / v or gate / up; more targets are rare.
  MatMulGroupTarget fixed[kMaxSharedTargets];
  std::vector<MatMulGroupTarget> more(targets.size() > kMaxSharedTargets ? targets.size() : 0);
  MatMulGroupTarget* group = more.empty() ? fixed : more.data();
  for (size_t i = 0; i < targets.size(); ++i) {
    const MatMulTarget& t = targets[i];
    DI_CHECK_MSG(t.w->cols() == targets[0].w->cols(), "MatMulShared: the targets read one x, so one K");
    group[i] = {t.w, t.packed, x, n_tokens, t.bias, t.y};
  }
  MatMulGroupedWithIsa(isa, std::span<const MatMulGroupTarget>(group, targets.size()), pool);
}

void MatMulShared(std::span<const MatMulTarget> targets, const float* x, int64_t n_tokens, ThreadPool& pool) {
  MatMulSharedWithIsa(ActiveIsa(), targets, x, n_tokens, pool);
}

void MatMul(const TensorView& w, const PackedLayout* packed, const float* x, int64_t n_tokens,
            const float* bias, float* y, ThreadPool& pool) {
  MatMulWithIsa(ActiveIsa(), w, packed, x, n_tokens, bias, y, pool);
}

}  // namespace deepinfer::cpu
