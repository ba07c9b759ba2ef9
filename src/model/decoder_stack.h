// DecoderStack: the one decoder-only Model, assembled from DecoderLayer
// objects: embedding, the layers, final RMSNorm, LM head. Every architecture
// is built as such a stack by its factory: the dense Llama family (Llama,
// Mistral, Qwen2/3: model/dense_model.h), Mixtral and Qwen2/3-MoE
// (model/moe_model.h), DeepSeek-V2/V3 (model/deepseek.h).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "core/status.h"
#include "model/decoder_layer.h"
#include "model/model.h"
#include "model/weights.h"

namespace deepinfer {

class MoeFeedForward;

struct DecoderStackParts {
  std::vector<std::unique_ptr<DecoderLayer>> layers;  // [num_layers]
  std::vector<MoeFeedForward*> moe;                   // [num_layers], null for dense layers (owned by layers)
};

// Builds the layers of a stack from the checkpoint; may complete `config`
// from the tensors it finds (the dense family's attention_bias).
using DecoderLayerBuilder =
    std::function<StatusOr<DecoderStackParts>(const WeightBinder& b, ModelConfig& config)>;

// Binds the embedding, final norm (+ config.norm_weight_offset) and LM head
// (standard role names, tied or not), then the layers by `build_layers`, and wraps them into a Model over
// `config` (validated by the caller) that repacks every matrix the layers
// and an untied head read once into the kernels' layout; the embedding rows
// are scaled by config.embedding_scale and the logits soft-capped by
// config.final_logit_softcap (when > 0). The model's Forward
// checks the KV cache shape and the batch (CheckBatch; when every layer is
// windowed, block-table entries older than the widest window are never read
// and not checked).
StatusOr<std::unique_ptr<Model>> CreateDecoderStackModel(const ModelConfig& config,
                                                         std::shared_ptr<const WeightStore> weights,
                                                         const DecoderLayerBuilder& build_layers,
                                                         int num_threads);

// The parts of a model made by CreateDecoderStackModel; null for any other
// Model (tests use it to reach individual layers).
DecoderStackParts* DecoderStackPartsOf(Model& model);

}  // namespace deepinfer
