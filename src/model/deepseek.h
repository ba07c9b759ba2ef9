// DeepseekV2ForCausalLM / DeepseekV3ForCausalLM: pre-norm decoder layers of
// MLA attention (model/mla.h) and a feed-forward that is dense for the first
// first_k_dense_replace layers and a mixture of experts (model/moe.h:
// routed + shared experts; V2 softmax / group-limited greedy, V3 sigmoid +
// e_score_correction_bias + group top-2 sums) after. Optional per-layer
// sliding windows (config.sliding_window, from HF layer_types) give a hybrid
// SWA variant. The MTP layers (V3) are built by model/mtp.h through
// CreateDeepseekLayer.
#pragma once

#include <memory>

#include "core/status.h"
#include "model/decoder_layer.h"
#include "model/mla.h"
#include "model/model.h"
#include "model/weights.h"

namespace deepinfer {

class MoeFeedForward;

StatusOr<std::unique_ptr<Model>> CreateDeepseekModel(const ModelConfig& config,
                                                     std::shared_ptr<const WeightStore> weights,
                                                     int num_threads);

// Decoder layer `layer` (an MTP layer when layer >= config.num_layers: MoE
// unless the model has no experts). `moe_out` receives the MoE block or null.
StatusOr<std::unique_ptr<DecoderLayer>> CreateDeepseekLayer(const WeightBinder& b, const ModelConfig& c,
                                                            std::shared_ptr<const MlaRope> rope,
                                                            int64_t layer, MoeFeedForward** moe_out);

// Test hook: switches every MLA layer of a DeepSeek model between the
// absorbed (default) and the naive computation. InvalidArgument for other models.
Status SetMlaAbsorb(Model& model, bool absorb);

}  // namespace deepinfer
