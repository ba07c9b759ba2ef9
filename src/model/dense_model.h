// The dense members of the Llama family as a DecoderStack (model/decoder_stack.h):
// Llama 1/2/3 (incl. llama3 RoPE scaling and GGUF rope_freqs factors),
// Mistral (sliding-window attention), Qwen2 (q/k/v bias) and Qwen3 (per-head
// q/k RMSNorm). Each layer is a pre-norm GQA decoder layer
// x += Attn(RMSNorm(x)); x += SwiGLU(RMSNorm(x)) (CreateGqaDecoderLayer).
#pragma once

#include <memory>

#include "core/status.h"
#include "model/model.h"
#include "model/weights.h"

namespace deepinfer {

// Binds the tensors of `weights` (GGUF or HF names, per weights->naming())
// for `config` with shape checks, and returns the model. Errors name the
// tensor and the shape that was expected. q/k/v biases are required when
// config.attention_bias, else used when present (and the model's config then
// says attention_bias); an o bias is optional. Tensors beyond
// config.num_layers (e.g. an MTP layer) are left unbound. num_threads 0 = all CPUs.
StatusOr<std::unique_ptr<Model>> CreateDenseModel(const ModelConfig& config,
                                                  std::shared_ptr<const WeightStore> weights,
                                                  int num_threads);

}  // namespace deepinfer
