// model/ops.h on the CPU backend: each op forwards to its kernel; the K/V
// cache is described to the attention kernels by its strides.
#include "model/ops.h"

#include <span>
#include <vector>

#include "backend/cpu/activation_kernels.h"
#include "backend/cpu/dot.h"
#include "backend/cpu/f16_convert.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/mla_attention.h"
#include "backend/cpu/norm_kernel.h"
#include "backend/cpu/packed_weights.h"
#include "backend/cpu/parallel_for.h"
#include "backend/cpu/rope_kernel.h"
#include "backend/cpu/topk.h"
#include "core/check.h"
#include "model/kv_cache.h"
#include "tensor/dequant.h"

namespace deepinfer::ops {

namespace {

// Layer `layer` of `kv` as the backend's paged view (KvCache::KRow is
// affine in block, head and slot).
cpu::PagedKvLayer KvLayer(const KvCache& kv, int64_t layer) {
  cpu::PagedKvLayer l;
  cpu::PagedKvView& v = l.head0;
  v.dtype = kv.dtype();
  v.k = kv.KRow(layer, 0, 0);
  v.block_size = kv.block_size();
  const KvCache::HeadStrides ks = kv.KStrides();
  v.block_stride = ks.block;
  v.slot_stride = ks.slot;
  v.k_dim_stride = kv.KDimStride();
  if (kv.num_heads() > 1) l.k_head = kv.KRow(layer, 0, 0, 1) - v.k;
  if (kv.v_dim() > 0) {
    v.v = kv.VRow(layer, 0, 0);
    const KvCache::HeadStrides vs = kv.VStrides();
    v.v_block_stride = vs.block;
    v.v_slot_stride = vs.slot;
    if (kv.num_heads() > 1) l.v_head = kv.VRow(layer, 0, 0, 1) - v.v;
  }
  return l;
}

}  // namespace

BackendWeights::BackendWeights() : packed_(std::make_unique<cpu::PackedWeights>()) {}
BackendWeights::~BackendWeights() = default;

void BackendWeights::Prepare(Matrix& m) {
  const cpu::PackedMatrix packed = packed_->Pack(m);
  if (packed.layout == nullptr) return;
  static_cast<TensorView&>(m) = packed.view;
  m.packed = packed.layout;
}

void BackendWeights::PrepareTiedHead(Matrix& m) {
  if (!cpu::HasFastKernel(cpu::ActiveIsa(), m.dtype) || m.cols() < kShortRow) Prepare(m);
}

void BackendWeights::PrepareAsQ8_0(Matrix& m) {
  const bool floats = m.dtype == DType::kF32 || m.dtype == DType::kF16 || m.dtype == DType::kBF16;
  const int64_t rows = m.rows(), k = m.cols();
  if (!floats || m.shape.size() != 2 || k % 32 != 0 || !cpu::PacksType(cpu::ActiveIsa(), DType::kQ8_0)) {
    Prepare(m);
    return;
  }
  const int64_t in_bytes = RowBytes(m.dtype, k), out_bytes = RowBytes(DType::kQ8_0, k);
  std::vector<uint8_t> q8(static_cast<size_t>(rows * out_bytes));
  std::vector<float> row(static_cast<size_t>(k));
  for (int64_t r = 0; r < rows; ++r) {
    DequantizeRow(m.dtype, static_cast<const uint8_t*>(m.data) + r * in_bytes, row.data(), k);
    DI_CHECK(QuantizeRow(DType::kQ8_0, row.data(), q8.data() + r * out_bytes, k));
  }
  TensorView quantized = m;
  quantized.dtype = DType::kQ8_0;
  quantized.data = q8.data();
  quantized.nbytes = static_cast<int64_t>(q8.size());
  const cpu::PackedMatrix packed = packed_->Pack(quantized);  // a copy: q8 may go
  DI_CHECK(packed.layout != nullptr);
  static_cast<TensorView&>(m) = packed.view;
  m.packed = packed.layout;
}

float Dot(const float* a, const float* b, int64_t n) { return cpu::Dot(a, b, n); }

void RmsNorm(const float* x, const float* weight, int64_t n, double eps, float* out) {
  cpu::RmsNorm(x, weight, n, eps, out);
}

void MatMul(const Matrix& w, const float* x, int64_t n_tokens, const float* bias, float* y,
            ThreadPool& pool) {
  cpu::MatMul(w, w.packed, x, n_tokens, bias, y, pool);
}

void SharedInputMatMul(std::initializer_list<Projection> projections, const float* x, int64_t n_tokens,
                       ThreadPool& pool) {
  // q / k / v at most: a fixed array, no allocation per call on the decode path.
  constexpr size_t kMaxProjections = 4;
  DI_CHECK(projections.size() <= kMaxProjections);
  cpu::MatMulTarget targets[kMaxProjections];
  size_t n = 0;
  for (const Projection& p : projections) targets[n++] = {p.w, p.w->packed, p.bias, p.y};
  cpu::MatMulShared(std::span<const cpu::MatMulTarget>(targets, n), x, n_tokens, pool);
}

void GroupedMatMul(std::span<const GroupedProjection> projections, ThreadPool& pool) {
  // The caller thread's targets, reused across calls: no allocation per call once warm.
  thread_local std::vector<cpu::MatMulGroupTarget> targets;
  targets.resize(projections.size());
  for (size_t i = 0; i < projections.size(); ++i) {
    const GroupedProjection& p = projections[i];
    targets[i] = {p.w, p.w->packed, p.x, p.n_tokens, p.bias, p.y};
  }
  cpu::MatMulGrouped(targets, pool);
}

void SiluMul(float* gate, const float* up, int64_t n) { cpu::SiluMul(gate, up, n); }

void GeluTanhMul(float* gate, const float* up, int64_t n) { cpu::GeluTanhMul(gate, up, n); }
void SoftCap(float* x, int64_t n, float cap) { cpu::SoftCap(x, n, cap); }
void Softmax(float* x, int64_t n) { cpu::Softmax(x, n); }
float SumExp(const float* x, int64_t n, float shift) { return cpu::SumExp(x, n, shift); }

void TopK(const float* scores, int64_t n, int64_t k, int32_t* ids) { cpu::TopK(scores, n, k, ids, nullptr); }

void F32ToF16Row(const float* src, uint8_t* dst, int64_t n, int64_t stride_bytes) {
  DI_CHECK(stride_bytes >= 2 && stride_bytes % 2 == 0);
  cpu::F32ToF16Strided(src, dst, n, stride_bytes / 2);
}

void RopeRotate(float* x, int64_t n_heads, int64_t head_dim, const float* cos, const float* sin, int64_t half,
                bool interleaved) {
  cpu::RopeRotate(x, n_heads, head_dim, cpu::RopeRotation{cos, sin, half, interleaved});
}

bool IsKvCacheDType(DType t) { return cpu::IsKvCacheDType(t); }

DType FasterHalfKvDType() { return cpu::FasterHalfKvDType(); }

void PagedAttention(const float* q, int64_t n_tokens, const int64_t* positions,
                    const std::vector<const std::vector<int32_t>*>& block_tables, const KvCache& kv,
                    const AttentionParams& p, ThreadPool& pool, float* out) {
  cpu::PagedAttention(q, n_tokens, positions, block_tables, KvLayer(kv, p.layer), p, pool, out);
}

void AttendOneHead(const float* q, int64_t head, int64_t pos, const std::vector<int32_t>& block_table,
                   const KvCache& kv, const AttentionParams& p, float* out) {
  cpu::AttendOneHead(q, head, pos, block_table, KvLayer(kv, p.layer), p, out);
}

void MlaAttention(const float* q, int64_t n_tokens, const int64_t* positions,
                  const std::vector<const std::vector<int32_t>*>& block_tables, const KvCache& kv,
                  const TensorView& w_uk_t, const TensorView& w_uv, std::span<const Matrix> uk_heads,
                  std::span<const Matrix> uv_heads, const MlaAttentionParams& p, ThreadPool& pool,
                  float* out) {
  const cpu::MlaShape shape{p.num_heads, p.nope, p.rope, p.v_dim, p.lora, p.window, p.scale, p.absorb};
  // The calling thread's handles, reused across calls.
  thread_local std::vector<cpu::MlaHeadMatrix> uk, uv;
  uk.clear();
  uv.clear();
  for (const Matrix& m : uk_heads) uk.push_back({&m, m.packed});
  for (const Matrix& m : uv_heads) uv.push_back({&m, m.packed});
  cpu::MlaAttention(q, n_tokens, positions, block_tables, KvLayer(kv, p.layer), w_uk_t, w_uv, uk, uv, shape,
                    pool, out);
}

void ParallelForCost(ThreadPool& pool, int64_t n, int64_t cost,
                     const std::function<void(int64_t, int64_t, int)>& body) {
  cpu::ParallelForCost(pool, n, cost, body);
}

}  // namespace deepinfer::ops
