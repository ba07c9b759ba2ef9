// A loaded model: configuration, weights bound to their tensors (kept in the
// file's dtype, usually mmap'ed), and a Forward over a ForwardBatch.
//
// Usage:
//   DI_ASSIGN_OR_RETURN(auto loaded, LoadModel(path, options));   // checkpoint/checkpoint.h
//   KvCache kv(loaded.model->config(), /*num_blocks=*/64, /*block_size=*/16);
//   std::vector<float> logits(batch.NumLogitRows() * vocab);
//   DI_RETURN_IF_ERROR(loaded.model->Forward(batch, kv, logits.data()));
//
// Thread-safety: Forward is not re-entrant (it uses the model's scratch and
// thread pool); the weights are immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "model/forward_batch.h"
#include "model/model_config.h"

namespace deepinfer {

// f32 paged KV storage for every layer. K and V are separate arrays laid out
// [layer][block][head][slot][head_width]: a block of one layer is one
// contiguous run (what block copies move), and inside it each KV head's
// block_size rows are contiguous, so attention, which reads one head at a
// time, streams them instead of hopping over the other heads' columns.
// GQA caches have num_kv_heads heads of head_dim floats; MLA models
// (config.mla.kv_lora_rank > 0) store one K row of [latent | rope key] per
// token as a single head and no V (v_dim() == 0): the widths come from
// config.cache_k_dim() / cache_v_dim(). Owns memory; holds no per-sequence
// state (block tables live with the caller).
class KvCache {
 public:
  KvCache(const ModelConfig& config, int64_t num_blocks, int64_t block_size);
  // Explicit widths (v_dim may be 0: V() must not be used then), split into
  // `heads` equal heads (k_dim and v_dim multiples of heads).
  KvCache(int64_t num_layers, int64_t num_blocks, int64_t block_size, int64_t k_dim, int64_t v_dim,
          int64_t heads = 1);
  int64_t v_dim() const { return v_dim_; }
  int64_t num_layers() const { return num_layers_; }
  int64_t num_blocks() const { return num_blocks_; }
  int64_t block_size() const { return block_size_; }
  int64_t kv_dim() const { return kv_dim_; }
  int64_t num_heads() const { return heads_; }
  // Pointer to head `head`'s K (kv_dim / num_heads floats) or V (v_dim /
  // num_heads floats) of (layer, block, slot); with one head, the whole row.
  float* K(int64_t layer, int64_t block, int64_t slot, int64_t head = 0);
  float* V(int64_t layer, int64_t block, int64_t slot, int64_t head = 0);
  const float* K(int64_t layer, int64_t block, int64_t slot, int64_t head = 0) const;
  const float* V(int64_t layer, int64_t block, int64_t slot, int64_t head = 0) const;
  // Stores a token's whole K row (kv_dim floats) / V row (v_dim floats),
  // head by head.
  void WriteK(int64_t layer, int64_t block, int64_t slot, const float* row);
  void WriteV(int64_t layer, int64_t block, int64_t slot, const float* row);
  // Floats between one head's consecutive slots of a block, and between the
  // same slot of consecutive blocks (K(l, b, s, h) is affine in b and s).
  struct HeadStrides {
    int64_t slot, block;
  };
  HeadStrides KStrides() const;
  HeadStrides VStrides() const;
  int64_t BytesPerToken() const;  // over all layers, K and V

 private:
  int64_t num_layers_, num_blocks_, block_size_, kv_dim_, v_dim_, heads_;
  std::vector<float> k_, v_;
};

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelConfig& config() const = 0;

  // Runs one step. logits_out receives batch.NumLogitRows() rows of
  // config().vocab_size floats (raw logits). InvalidArgument when a chunk's
  // block table does not cover its positions or a token id is out of range.
  virtual Status Forward(const ForwardBatch& batch, KvCache& kv, float* logits_out) = 0;

  // Forward that also writes, for each logit row, the hidden state after the
  // final norm (the exact lm_head input) to hidden_out: f32 [NumLogitRows,
  // hidden_size]; null hidden_out = plain Forward. The MTP draft (model/mtp.h)
  // consumes these rows. Unimplemented for models that cannot expose them.
  virtual Status ForwardWithHidden(const ForwardBatch& batch, KvCache& kv, float* logits_out,
                                   float* hidden_out) {
    if (hidden_out != nullptr) {
      return Unimplemented("this model does not expose its final hidden states");
    }
    return Forward(batch, kv, logits_out);
  }

  // Tokens routed to each expert of each layer since the model was loaded:
  // [layer][expert] (an empty row for a dense layer); empty for dense models.
  // Not synchronized with Forward: read it between steps.
  virtual std::vector<std::vector<int64_t>> ExpertLoad() const { return {}; }
};

}  // namespace deepinfer
