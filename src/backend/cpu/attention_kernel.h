// Flash-style attention over a paged KV cache: the softmax is computed online
// (running max, running sum, rescaled accumulator), so no score matrix is
// ever materialized and a long key range can be cut into pieces whose partial
// states are merged afterwards.
//
// One call folds keys [begin, end) of one KV head into the state of the n_q
// query heads that share it (GQA: the K/V rows are read once for the group).
// Keys are visited in position order in tiles of kAttentionKeyTile, tiles
// counted from `begin`; the arithmetic therefore depends only on the query,
// the key range and the ISA, never on the batch or the thread split. Callers
// keep the result batch-invariant by choosing ranges from positions alone
// (paged_attention.h splits at multiples of a fixed key count).
//
// Thread-safety: pure functions of their arguments; no shared state.
#pragma once

#include <algorithm>
#include <cstdint>

#include "tensor/dtype.h"

namespace deepinfer::cpu {

inline constexpr int64_t kAttentionKeyTile = 32;

// One layer's K and V for one KV head in the paged layout: position p is in
// block table[p / block_size], slot p % block_size, and its row of head_dim
// elements starts at k + block * block_stride + slot * slot_stride bytes (v
// likewise with the v_ strides: K and V rows may have different widths).
// A row is RowBytes(dtype, head_dim) bytes of `dtype` (IsKvCacheDType):
// f32, f16, bf16, or q8_0 blocks of 32 elements (an f16 scale and 32 int8).
// K may instead be dim-major (k_dim_stride > 0; f32 / f16 / bf16 only):
// element d of the key in slot s at k + block * block_stride + s *
// slot_stride + d * k_dim_stride, so with slot_stride = the element size the
// keys of a block lie side by side per dimension and 16 of them fill one
// vector (scores without horizontal sums; KvCache's GQA caches store K so).
// The kernels decode a tile of rows at a time into f32 (the values
// DequantizeRow gives, tensor/dequant.h) and do all arithmetic in f32.
struct PagedKvView {
  const uint8_t* k = nullptr;
  const uint8_t* v = nullptr;
  DType dtype = DType::kF32;
  const int32_t* block_table = nullptr;
  int64_t block_size = 0;
  int64_t block_stride = 0;  // bytes between blocks of K
  int64_t slot_stride = 0;   // bytes between slots of a block of K
  int64_t k_dim_stride = 0;  // 0: K rows; > 0: dim-major K, bytes between a key's elements
  int64_t v_block_stride = 0;
  int64_t v_slot_stride = 0;
};

// The element types a paged K/V cache may hold: f32, f16, bf16, q8_0.
bool IsKvCacheDType(DType t);

// Calls f(k_row, v_row) for positions [p0, p0 + n) in order. One division,
// then one block-table lookup per block and the row pointers stepped by
// their strides: block_size is only known at run time, a division per row
// cost more than the attention's dot products, and so did the two
// multiplies per row of recomputing the addresses (at head_dim 8).
template <class F>
inline void ForEachKvRow(const PagedKvView& kv, int64_t p0, int64_t n, F&& f) {
  int64_t block = p0 / kv.block_size, slot = p0 % kv.block_size;
  for (int64_t j = 0; j < n; ++block, slot = 0) {
    const int64_t b = kv.block_table[block];
    const uint8_t* k = kv.k + b * kv.block_stride + slot * kv.slot_stride;
    const uint8_t* v = kv.v + b * kv.v_block_stride + slot * kv.v_slot_stride;
    const int64_t run = std::min(n - j, kv.block_size - slot);
    for (int64_t i = 0; i < run; ++i, k += kv.slot_stride, v += kv.v_slot_stride) f(k, v);
    j += run;
  }
}

// A cache row of n elements of `dtype` as f32: the row itself when dtype is
// f32, else `scratch` (n floats) filled by the scalar reference decoder.
const float* KvRowAsF32(DType dtype, const uint8_t* row, int64_t n, float* scratch);
// The key whose element 0 is at k (ForEachKvRow's k) as f32, in either K
// layout: a dim-major key is gathered into `scratch` (head_dim floats).
const float* KeyAsF32(const PagedKvView& kv, const uint8_t* k, int64_t head_dim, float* scratch);

// Online-softmax state of n_q query heads: max[i], sum[i] = sum of
// exp(score - max[i]) and acc[i * head_dim + d] = sum of exp(score - max[i]) * v[d].
struct AttentionState {
  float* max;
  float* sum;
  float* acc;
};

struct AttentionQuery {
  const float* q = nullptr;  // f32 [n_q, head_dim]
  int64_t n_q = 0;
  int64_t head_dim = 0;
  float scale = 1.0f;    // scores are scale * q . k
  float softcap = 0.0f;  // > 0: then softcap * tanh(score / softcap), in f32 with std::tanh
};

// max = -inf, sum = 0, acc = 0.
void ResetAttentionState(int64_t n_q, int64_t head_dim, AttentionState s);

// Folds keys [begin, end) (begin < end) into `state` with the active ISA.
void AttendKeys(const AttentionQuery& q, const PagedKvView& kv, int64_t begin, int64_t end,
                AttentionState state);
// The portable version; the reference the SIMD version is tested against.
void AttendKeysScalar(const AttentionQuery& q, const PagedKvView& kv, int64_t begin, int64_t end,
                      AttentionState state);
void AttendKeysAvx512(const AttentionQuery& q, const PagedKvView& kv, int64_t begin, int64_t end,
                      AttentionState state);  // only when CpuSupports(Isa::kAvx512)

// Consecutive query tokens of one sequence against one KV head, sharing
// each K/V tile (its rows are found, prefetched and, for a 16-/8-bit cache,
// decoded once for all of them: verification rows and prefill chunks).
// Token i's n_q heads are at q.q + i * q_stride; it folds keys
// [begin, end[i]) into state[i] (end[i] > begin). Every token's result is
// bitwise the one a separate AttendKeys(q_i, kv, begin, end[i], state[i])
// gives: per query the tiles, the operations and their order are the same,
// and a short range only masks more of the shared tile.
struct AttentionTokens {
  int64_t n = 0;
  int64_t q_stride = 0;                   // floats between consecutive tokens' queries
  const int64_t* end = nullptr;           // [n]
  const AttentionState* state = nullptr;  // [n], each holding q.n_q heads
};

// With the active ISA.
void AttendKeysForTokens(const AttentionQuery& q, const AttentionTokens& tokens, const PagedKvView& kv,
                         int64_t begin);
void AttendKeysForTokensScalar(const AttentionQuery& q, const AttentionTokens& tokens, const PagedKvView& kv,
                               int64_t begin);
void AttendKeysForTokensAvx512(const AttentionQuery& q, const AttentionTokens& tokens, const PagedKvView& kv,
                               int64_t begin);  // only when CpuSupports(Isa::kAvx512)

// Asks for the K and V rows of keys [begin, end) of this head to be brought
// into L2 (a hint: changes no value, never faults; empty range: nothing).
// Issued for the next tile / the next work item while the current one
// computes: a decode step reads the cache once, and in batched decode each
// sequence's cache is cold.
void PrefetchKeys(const PagedKvView& kv, int64_t head_dim, int64_t begin, int64_t end);

// a := merge(a, b): the state of a's keys followed by b's keys.
void MergeAttentionState(int64_t n_q, int64_t head_dim, AttentionState a, const AttentionState& b);

// out f32 [n_q, head_dim] = acc / sum (zeros for a state that saw no key).
void FinishAttention(int64_t n_q, int64_t head_dim, const AttentionState& s, float* out);

}  // namespace deepinfer::cpu
