// A decoder-only model assembled from DecoderLayer objects: embedding, the
// layers, final RMSNorm, LM head. The architectures outside llama.cc
// (Mixtral, Qwen2/3-MoE, DeepSeek-V2/V3) are built as such stacks.
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

// Binds the embedding, final norm and LM head (standard role names, tied or
// not) and wraps `parts` into a Model over `config` (validated by the caller).
StatusOr<std::unique_ptr<Model>> CreateDecoderStackModel(const ModelConfig& config,
                                                         std::shared_ptr<const WeightStore> weights,
                                                         DecoderStackParts parts, int num_threads);

// The parts of a model made by CreateDecoderStackModel; null for any other
// Model (tests use it to reach individual layers).
DecoderStackParts* DecoderStackPartsOf(Model& model);

}  // namespace deepinfer
