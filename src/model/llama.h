// The Llama architecture family: Llama 1/2/3 (incl. llama3 RoPE scaling),
// Mistral (sliding-window attention), Qwen2 (q/k/v bias) and Qwen3 (per-head
// q/k RMSNorm). One pre-norm decoder: x += Attn(RMSNorm(x)); x += MLP(RMSNorm(x))
// with SwiGLU MLP, RoPE on q/k, grouped-query attention over a paged KV cache.
#pragma once

#include <memory>

#include "core/status.h"
#include "model/model.h"
#include "model/weights.h"

namespace deepinfer {

// Binds the tensors of `weights` (GGUF or HF names, per weights->naming())
// for `config` with shape checks, and returns the model. Errors name the
// tensor and the shape that was expected. Tensors beyond config.num_layers
// (e.g. an MTP layer) are left unbound. num_threads 0 = all CPUs.
StatusOr<std::unique_ptr<Model>> CreateLlamaModel(const ModelConfig& config,
                                                  std::shared_ptr<const WeightStore> weights,
                                                  int num_threads);

}  // namespace deepinfer
