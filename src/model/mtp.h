// Multi-token prediction (DeepSeek-V3 "next-n" layers) as a draft model for
// speculative decoding. For a position t with base hidden h_t (the base
// model's post-final-norm hidden state, i.e. the lm_head input, from
// Model::ForwardWithHidden) and the next token x_{t+1}:
//
//   z      = eh_proj · [enorm(embed(x_{t+1})) ; hnorm(h_t)]   (concat order: embedding, hidden)
//   m      = DecoderBlock(z)          at RoPE position t, with its own KV cache
//   g      = shared_head.norm(m)      -> hidden_out (the h of the next chained step)
//   logits = lm_head(g)               predicts x_{t+2}
//
// Chaining (draft length > 1): the next step runs at position t+1 with
// h := g and x := the draft token, appending to the same MTP KV cache.
//
// Tensor names (layer L = config.num_layers + index): HF
// `model.layers.L.{enorm,hnorm,eh_proj,shared_head.norm,shared_head.head,embed_tokens}.weight`,
// GGUF `blk.L.nextn.{enorm,hnorm,eh_proj,shared_head_norm,shared_head_head,embed_tokens}.weight`;
// the block's own tensors use the decoder-layer names at L. The embedding and
// the head default to the base model's when the layer has no copy.
//
// Thread-safety: Forward is not re-entrant; weights are immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "model/decoder_layer.h"
#include "model/model.h"
#include "model/token_plan.h"
#include "model/weights.h"

namespace deepinfer {

// How the draft holds its matrices: as the checkpoint stores them, or
// quantized to int8 (Q8_0) at load where they are f32 / f16 / bf16 with K a
// multiple of 32 (BackendWeights::PrepareAsQ8_0): a chained draft is a
// one-row forward that reads every matrix once, and int8 reads 4x fewer
// bytes than f32 with 4x more products per instruction. The drafts change
// a little (verification keeps the output exact); docs/speculative.md
// measures speed and acceptance both ways.
enum class MtpMatrices { kAsStored, kInt8 };

class MtpDraft {
 public:
  // Binds MTP layer `index` (0 <= index < config.num_nextn_predict_layers).
  // InvalidArgument when the config has no MTP layers; NotFound/DataLoss
  // naming the tensor when the checkpoint lacks or mis-shapes one.
  static StatusOr<std::unique_ptr<MtpDraft>> Create(const ModelConfig& config,
                                                    std::shared_ptr<const WeightStore> weights,
                                                    int64_t index = 0, int num_threads = 0,
                                                    MtpMatrices matrices = MtpMatrices::kAsStored);
  ~MtpDraft();

  const ModelConfig& config() const { return config_; }
  // A paged cache for this draft's single block (one layer).
  std::unique_ptr<KvCache> NewKvCache(int64_t num_blocks, int64_t block_size) const;

  // Token i of a chunk (at position start_pos + i = p) is x_{p+1}; hidden_in
  // row j (f32 [batch.NumTokens(), hidden], in batch token order) is h_p for
  // that token. Writes logits f32 [NumLogitRows, vocab] and, when hidden_out
  // is not null, g f32 [NumLogitRows, hidden]. InvalidArgument for a bad
  // batch (token range, block tables) or a null buffer.
  Status Forward(const ForwardBatch& batch, const float* hidden_in, KvCache& kv, float* logits_out,
                 float* hidden_out);

 private:
  MtpDraft(ModelConfig config, std::shared_ptr<const WeightStore> weights, int num_threads);
  // Repacks the draft's matrices into the kernels' layout, as the base model
  // packs its layers: a chained draft is a batch-1 forward, which runs at
  // GEMV speed only on packed weights. The head is packed too, also when it
  // is the base model's (tied embedding or output): every draft runs it, so
  // the drafter holds its own packed copy of the [vocab, hidden] matrix
  // (docs/speculative.md) while the base model keeps reading the file layout.
  void PackWeights(MtpMatrices matrices);

  ModelConfig config_;  // the base config with num_layers = 1 (the draft's cache shape)
  std::shared_ptr<const WeightStore> store_;
  ThreadPool pool_;
  TensorView embedding_;                                 // [vocab, hidden]
  ops::Matrix head_;                                     // [vocab, hidden]
  ops::Matrix eh_proj_;                                  // [hidden, 2 * hidden]
  std::vector<float> enorm_, hnorm_, shared_head_norm_;  // f32 [hidden]
  std::unique_ptr<DecoderLayer> block_;
  ops::BackendWeights backend_weights_;  // the packed copies of the block's matrices, eh_proj and an own head

  TokenPlan plan_;
  LayerScratch scratch_;       // the block's activations
  std::vector<float> concat_;  // f32 [T, 2 * hidden]: [enorm(e) ; hnorm(h)]
  std::vector<float> x_;       // f32 [T, hidden] residual stream
  std::vector<float> g_;       // f32 [R, hidden]
};

// Tensor name of an MTP-specific part ("enorm", "hnorm", "eh_proj",
// "shared_head.norm", "shared_head.head", "embed_tokens") of layer L.
std::string MtpWeightName(WeightNaming naming, const std::string& part, int64_t layer);

}  // namespace deepinfer
