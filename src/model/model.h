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
#include "model/kv_cache.h"
#include "model/model_config.h"

namespace deepinfer {

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelConfig& config() const = 0;

  // Runs one step. logits_out receives batch.NumLogitRows() rows of
  // config().vocab_size floats (raw logits). InvalidArgument when a chunk's
  // block table does not cover its positions or a token id is out of range.
  virtual Status Forward(const ForwardBatch& batch, KvCache& kv, float* logits_out) = 0;

  // Forward that also writes, for every token of the batch (in batch token
  // order, whether or not it produces logits), the hidden state after the
  // final norm (for logit rows the exact lm_head input) to hidden_out: f32
  // [NumTokens, hidden_size]; null hidden_out = plain Forward. The MTP draft
  // (model/mtp.h) consumes these rows: it needs one per position, prompt included. Unimplemented for models
  // that cannot expose them.
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
