// Mixture-of-experts members of the Llama family: MixtralForCausalLM,
// Qwen2MoeForCausalLM (q/k/v bias, gated shared expert, optional dense
// layers), Qwen3MoeForCausalLM (q/k norm). Llama-style GQA attention with
// RoPE; each layer's MLP is a MoeFeedForward (model/moe.h) or, where
// config.moe.sparse_layers says so, a dense SwiGLU of intermediate_size.
#pragma once

#include <memory>

#include "core/status.h"
#include "model/model.h"
#include "model/moe.h"
#include "model/weights.h"

namespace deepinfer {

// `names`: the HF names of the MoE blocks (GGUF names are llama.cpp's for all).
StatusOr<std::unique_ptr<Model>> CreateMoeModel(const ModelConfig& config,
                                                std::shared_ptr<const WeightStore> weights, int num_threads,
                                                const HfMoeNames& names);

}  // namespace deepinfer
