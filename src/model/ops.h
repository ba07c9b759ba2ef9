// The model's only door to a backend: every kernel the forward pass runs
// (matmuls, norms, activations, RoPE, softmax, top-k, GQA and MLA attention)
// and the backend-owned copies of weight matrices. Model code includes this
// header and never a backend/ one (this header names only the backend's
// plain attention-shape struct); ops.cc maps each op onto the CPU
// backend (src/backend/cpu, docs/kernels.md), so a second backend edits
// ops.cc, not the model files.
//
// Numerics: every op's reductions run in an order fixed by the problem size
// alone (never by the number of tokens in the batch or by the thread split),
// so a token's result is bit-identical whether it runs alone or batched.
// Results may depend on the ISA level, which is fixed per process
// (BackendConfig, applied at start-up by the program's entry point).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "backend/cpu/paged_attention.h"  // cpu::AttentionShape, a plain struct of attention sizes
#include "core/thread_pool.h"
#include "tensor/tensor_view.h"

namespace deepinfer {

class KvCache;  // model/kv_cache.h

namespace cpu {
struct PackedLayout;  // the backend's description of a packed copy
class PackedWeights;
}  // namespace cpu

namespace ops {

// A weight matrix as MatMul reads it: a view of the checkpoint's bytes
// [N, K] (file layout, `packed` null), or - after BackendWeights::Prepare - a
// view of the backend's packed copy (same name, dtype and shape) with
// `packed` the backend's handle to its layout. Copying a Matrix copies the
// handle, not the bytes; valid while the WeightStore and the BackendWeights
// that made it live.
struct Matrix : TensorView {
  Matrix() = default;
  Matrix(TensorView view) : TensorView(std::move(view)) {}  // NOLINT: a file-layout matrix
  const cpu::PackedLayout* packed = nullptr;
};

// Owns the backend's copies of weight matrices (the CPU backend repacks the
// quantized and BF16 matrices into its kernels' layouts, docs/kernels.md).
// A model keeps one alive as long as it uses the Matrix handles it made.
// Not thread-safe; use at load time.
class BackendWeights {
 public:
  BackendWeights();
  ~BackendWeights();
  BackendWeights(const BackendWeights&) = delete;
  BackendWeights& operator=(const BackendWeights&) = delete;

  // Replaces m with the backend's copy when it has a faster layout for
  // m.dtype at the active ISA level; otherwise leaves m as it is.
  void Prepare(Matrix& m);
  // Prepare for a matrix whose file bytes stay in use beside the copy (a
  // tied LM head: the embedding's rows are still looked up by token), so
  // the copy costs a second one. Made only where the file layout is much
  // slower: where it would run the dequantize-a-row fallback (e.g. a Q6_K
  // embedding, which llama-quantize gives tied models), and for rows
  // shorter than kShortRow elements, where the file-layout kernels' dot
  // formulation spends about as much on each (row, token)'s horizontal sum
  // as on its products (a tiny model's head; the copy is small then).
  void PrepareTiedHead(Matrix& m);
  static constexpr int64_t kShortRow = 256;
  // Replaces m with the backend's packed copy of m quantized to Q8_0 (per
  // 32-element block, as QuantizeRow(kQ8_0) writes it) when m is f32, f16
  // or bf16 with K a multiple of 32 and the backend packs Q8_0; otherwise
  // Prepare(m). Only for matrices whose results may be approximate: an MTP
  // drafter, whose drafts verification checks (docs/speculative.md).
  void PrepareAsQ8_0(Matrix& m);

 private:
  std::unique_ptr<cpu::PackedWeights> packed_;
};

// sum_i a[i] * b[i]: 16 strided partial sums (lane l takes i = l mod 16),
// combined pairwise, plus the tail in index order. Depends only on n.
float Dot(const float* a, const float* b, int64_t n);

// out[i] = x[i] * (1 / sqrt(mean(x^2) + eps)) * weight[i]; the mean is
// accumulated in double, in an order fixed by n. out may alias x.
void RmsNorm(const float* x, const float* weight, int64_t n, double eps, float* out);

// y f32 [n_tokens, N]: y[t * N + r] = dot(W[r, :], x[t * K : (t+1) * K]) (+ bias[r])
// for W = w [N, K] in any DType and x f32 [n_tokens, K]. Batch-invariant;
// quantized weights use int8-quantized activations. Parallel over weight
// rows. bias may be null; y must not alias x.
void MatMul(const Matrix& w, const float* x, int64_t n_tokens, const float* bias, float* y, ThreadPool& pool);
// A TensorView would be copied into a temporary Matrix on every call and
// never use a packed copy: bind weights as Matrix instead.
void MatMul(const TensorView& w, const float* x, int64_t n_tokens, const float* bias, float* y,
            ThreadPool& pool) = delete;

// One weight matrix of SharedInputMatMul.
struct Projection {
  const Matrix* w = nullptr;
  const float* bias = nullptr;  // may be null
  float* y = nullptr;
};

// Several matrices of one K applied to the same x (q / k / v; gate / up): the
// same results as one MatMul each, with the activations prepared once and one
// parallel loop over all their rows. At most 4.
void SharedInputMatMul(std::initializer_list<Projection> projections, const float* x, int64_t n_tokens,
                       ThreadPool& pool);

// One weight matrix of GroupedMatMul, with its own input rows.
struct GroupedProjection {
  const Matrix* w = nullptr;
  const float* x = nullptr;  // f32 [n_tokens, K of w]
  int64_t n_tokens = 0;      // 0: nothing to do
  float* y = nullptr;        // f32 [n_tokens, N of w]
  const float* bias = nullptr;
};

// Independent MatMuls (a mixture-of-experts layer's experts, each over its
// own tokens) in one parallel loop over all their rows: bit for bit the
// results of one MatMul each. Projections with the same x, n_tokens and
// weight type share one preparation of the activations. No y may alias any x.
void GroupedMatMul(std::span<const GroupedProjection> projections, ThreadPool& pool);

// gate[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)).
void SiluMul(float* gate, const float* up, int64_t n);

// gate[i] = gelu_tanh(gate[i]) * up[i] (GeGLU; the tanh approximation of GELU).
void GeluTanhMul(float* gate, const float* up, int64_t n);

// x[i] = cap * tanh(x[i] / cap), cap > 0 (Gemma-2's logit soft-capping).
void SoftCap(float* x, int64_t n, float cap);

// x[i] = exp(x[i] - max) / sum_j exp(x[j] - max), in place (n >= 1): f32
// exp, the sum in double in index order, one multiply by float(1 / sum).
void Softmax(float* x, int64_t n);

// sum_i exp(x[i] - shift) in f32 (relative error about 1e-6): a softmax
// normalizer for decisions that never reach an output (draft confidence).
float SumExp(const float* x, int64_t n, float shift);

// The softmax probability of x[best], where x[best] is the largest of
// x[0..n) (a drafter's confidence in its argmax draft): 1 / SumExp(x, n, x[best]).
inline float ArgMaxProbability(const float* x, int64_t n, int32_t best) {
  return 1.0f / SumExp(x, n, x[best]);
}

// ids[0..k) = the indices of the k largest scores[0..n), best first; ties
// go to the lower index, NaN ranks below every number. Requires 0 <= k <= n.
void TopK(const float* scores, int64_t n, int64_t k, int32_t* ids);

// Rotary embedding of one token: for each of n_heads heads of head_dim
// floats in x (in place), pair i - (x[i], x[i + half]) in the NeoX pairing,
// (x[2i], x[2i+1]) when interleaved - is rotated by the angle whose cos /
// sin are cos[i] / sin[i] (f32 [half]): a' = a cos - b sin, b' = a sin + b cos.
// Only the first 2 * half floats of each head rotate.
void RopeRotate(float* x, int64_t n_heads, int64_t head_dim, const float* cos, const float* sin, int64_t half,
                bool interleaved);

// An f32 row into f16 as QuantizeRow(kF16) writes it, element i at
// dst + i * stride_bytes (2: a row; a dim-major K's stride otherwise): the
// KvCache's f16 writes, vectorized where the ISA has a conversion.
void F32ToF16Row(const float* src, uint8_t* dst, int64_t n, int64_t stride_bytes);

// The element types a KvCache may store (f32, f16, bf16, q8_0), and the
// 16-bit one the attention kernels read fastest at the active ISA level
// (what --kv-cache-dtype auto picks; docs/kv-cache.md).
bool IsKvCacheDType(DType t);
DType FasterHalfKvDType();

// GQA attention over the paged K/V cache: the heads, head_dim, window and
// scale (cpu::AttentionShape, backend/cpu/paged_attention.h) and the cache layer.
struct AttentionParams : cpu::AttentionShape {
  int64_t layer = 0;
};

// out f32 [n_tokens, num_heads * head_dim]: for token t at position
// positions[t], softmax(s_j) . V[j] with s_j = scale * q . K[j], soft-capped
// to softcap * tanh(s_j / softcap) when p.softcap > 0, over its sequence's key
// positions j in [lo, positions[t]] (lo = 0, or pos - window + 1) of layer
// p.layer, where the sequence's blocks are *block_tables[t]. q is f32
// [n_tokens, num_heads * head_dim] (RoPE applied); the tokens' own K/V must
// already be in the cache. Flash-style (online softmax, key ranges split at
// fixed absolute positions and merged in order): batch- and thread-invariant.
void PagedAttention(const float* q, int64_t n_tokens, const int64_t* positions,
                    const std::vector<const std::vector<int32_t>*>& block_tables, const KvCache& kv,
                    const AttentionParams& p, ThreadPool& pool, float* out);

// The same for one query head of one token (the same bits); out is f32 [head_dim].
void AttendOneHead(const float* q, int64_t head, int64_t pos, const std::vector<int32_t>& block_table,
                   const KvCache& kv, const AttentionParams& p, float* out);

// Multi-head latent attention (model/mla.h) over cache layer `layer`, whose
// rows are [c_kv (lora) | k_pe (rope)] (a one-head KvCache).
struct MlaAttentionParams {
  int64_t layer = 0;
  int64_t num_heads = 0;
  int64_t nope = 0, rope = 0, v_dim = 0, lora = 0;  // qk_nope / qk_rope / v head dims, kv_lora_rank
  int64_t window = 0;                               // 0 = full
  float scale = 1.0f;                               // softmax scale
  bool absorb = true;  // attend in the latent space (else expand keys / values per key: same result)
};

// out f32 [n_tokens, num_heads * v_dim] from q f32 [n_tokens, num_heads *
// (nope + rope)] (RoPE applied), w_uk_t [num_heads * lora, nope] (per head
// W_uk transposed) and w_uv [num_heads * v_dim, lora] (per head W_uv), f32,
// q8_0 or q4_0 (read exactly, with f32 activations); block tables and positions as in
// PagedAttention. Each (token, head) is computed alone: batch-invariant.
// uk_heads / uv_heads: per head, rows [h * lora, ...) of w_uk_t and [h *
// v_dim, ...) of w_uv as matrices of their own (packed by BackendWeights, or
// empty: row views of the two in file layout); the absorbed form runs its
// up-projections on them as MatMuls, the naive form reads w_uk_t / w_uv.
void MlaAttention(const float* q, int64_t n_tokens, const int64_t* positions,
                  const std::vector<const std::vector<int32_t>*>& block_tables, const KvCache& kv,
                  const TensorView& w_uk_t, const TensorView& w_uv, std::span<const Matrix> uk_heads,
                  std::span<const Matrix> uv_heads, const MlaAttentionParams& p, ThreadPool& pool,
                  float* out);

// Runs body(begin, end, thread) over [0, n): on the pool when the job is big
// enough to pay for waking the workers (`cost` ~ multiply-adds), inline otherwise.
// The split never changes results (each index is computed by one thread).
void ParallelForCost(ThreadPool& pool, int64_t n, int64_t cost,
                     const std::function<void(int64_t, int64_t, int)>& body);

}  // namespace ops
}  // namespace deepinfer
