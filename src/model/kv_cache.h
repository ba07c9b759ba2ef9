// The paged K/V cache the model reads and writes, and the element type it
// stores (--kv-cache-dtype).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/status.h"
#include "model/kv_cache_dtype.h"
#include "model/model_config.h"
#include "tensor/dtype.h"

namespace deepinfer {

// Paged KV storage for every layer. K and V are separate arrays laid out
// [layer][block][head][slot][row]: a block of one layer is one contiguous
// run (what block copies move), and inside it each KV head's block_size
// rows are contiguous, so attention, which reads one head at a time,
// streams them instead of hopping over the other heads' columns.
// A row is one head's width of elements of dtype(): f32, f16, bf16 (round
// to nearest even on write) or q8_0 (GGML blocks of 32: an f16 scale and 32
// int8, quantized per row on write; widths must be multiples of 32), i.e.
// RowBytes(dtype, width) bytes. Writes take f32 rows and attention decodes
// to f32, so the dtype changes what is stored, never the model's interface.
// K of a GQA cache (v_dim > 0) of f32 / f16 / bf16 is dim-major inside a
// head's block instead (k_dim_major()): element d of slot s at d *
// block_size + s elements from the head's block start, so attention loads
// one dimension of 16 keys as one vector and scores 16 keys per fma, with
// no horizontal sums (the same bytes per head and block as rows).
// GQA caches have num_kv_heads heads of head_dim elements; MLA models
// (config.mla.kv_lora_rank > 0) store one K row of [latent | rope key] per
// token as a single head and no V (v_dim() == 0): the widths come from
// config.cache_k_dim() / cache_v_dim(). Owns memory; holds no per-sequence
// state (block tables live with the caller). Not thread-safe for writes to
// the same slot; distinct slots may be written concurrently.
class KvCache {
 public:
  // InvalidArgument (naming the flag) when `dtype` is not a KV cache type
  // or cannot hold this model's rows (q8_0: head widths must be multiples
  // of 32).
  static Status CheckDType(const ModelConfig& config, DType dtype);

  // Requires CheckDType(config, dtype).ok().
  KvCache(const ModelConfig& config, int64_t num_blocks, int64_t block_size, DType dtype = DType::kF32);
  // Explicit widths (v_dim may be 0: V rows must not be used then), split
  // into `heads` equal heads (k_dim and v_dim multiples of heads; for q8_0
  // the head widths multiples of 32).
  KvCache(int64_t num_layers, int64_t num_blocks, int64_t block_size, int64_t k_dim, int64_t v_dim,
          int64_t heads = 1, DType dtype = DType::kF32);
  // One layer of num_pages single-layer blocks ("pages") of this model's
  // rows: the pool of per-layer block tables (forward_batch.h).
  static std::unique_ptr<KvCache> Pages(const ModelConfig& config, int64_t num_pages, int64_t block_size,
                                        DType dtype);
  DType dtype() const { return dtype_; }
  int64_t v_dim() const { return v_dim_; }
  int64_t num_layers() const { return num_layers_; }
  int64_t num_blocks() const { return num_blocks_; }
  int64_t block_size() const { return block_size_; }
  int64_t kv_dim() const { return kv_dim_; }
  int64_t num_heads() const { return heads_; }
  // The stored row of head `head`'s K (kv_dim / num_heads elements) or V
  // (v_dim / num_heads elements) of (layer, block, slot): RowBytes(dtype(),
  // width) bytes; with one head, the whole row. A dim-major K's "row" is
  // its element 0, the others KDimStride() bytes apart.
  const uint8_t* KRow(int64_t layer, int64_t block, int64_t slot, int64_t head = 0) const;
  const uint8_t* VRow(int64_t layer, int64_t block, int64_t slot, int64_t head = 0) const;
  // Stores a token's whole K row (kv_dim f32) / V row (v_dim f32), head by
  // head, converted to dtype().
  void WriteK(int64_t layer, int64_t block, int64_t slot, const float* row);
  void WriteV(int64_t layer, int64_t block, int64_t slot, const float* row);
  // The stored K row (kv_dim f32) / V row (v_dim f32) of (layer, block,
  // slot), decoded: what attention reads.
  void ReadK(int64_t layer, int64_t block, int64_t slot, float* row) const;
  void ReadV(int64_t layer, int64_t block, int64_t slot, float* row) const;
  // Block dst := block src in every layer, K and V (copy-on-write).
  void CopyBlock(int64_t src, int64_t dst);
  // Bytes between one head's consecutive slots of a block, and between the
  // same slot of consecutive blocks (KRow(l, b, s, h) is affine in b and s).
  struct HeadStrides {
    int64_t slot, block;
  };
  HeadStrides KStrides() const;
  HeadStrides VStrides() const;
  bool k_dim_major() const { return k_dim_stride_ > 0; }
  // Bytes between elements d and d + 1 of one K row: 0 for rows (they are
  // contiguous), block_size * element size when k_dim_major().
  int64_t KDimStride() const { return k_dim_stride_; }
  int64_t BytesPerToken() const;  // over all layers, K and V, in dtype()

 private:
  int64_t num_layers_, num_blocks_, block_size_, kv_dim_, v_dim_, heads_;
  DType dtype_;
  int64_t k_row_bytes_, v_row_bytes_;  // one head's row
  int64_t k_slot_stride_;              // bytes between slots of a head's K block
  int64_t k_dim_stride_;               // see KDimStride()
  std::vector<uint8_t> k_, v_;
};

}  // namespace deepinfer
