// Gemma-2 and Gemma-3 text models as a DecoderStack (model/decoder_stack.h).
// Each layer is a GQA decoder layer with "sandwich" norms:
//   x += PostAttnNorm(Attn(InputNorm(x)));  x += PostFfnNorm(GeGLU(PreFfnNorm(x)))
// where every RMSNorm scales by (1 + w) (ModelConfig::norm_weight_offset says
// whether the file stores w or 1 + w). The stack scales the embedding by
// sqrt(hidden) and soft-caps the final logits (Gemma-2); the attention uses
// query_pre_attn_scalar^-0.5 and soft-caps its scores (Gemma-2) or q/k-norms
// its heads (Gemma-3). Sliding and full layers alternate (config.sliding_window);
// on Gemma-3 the sliding ("local") layers rotate with rope_local_theta and no
// scaling, the full ("global") ones with rope_theta and rope_scaling.
#pragma once

#include <memory>

#include "core/status.h"
#include "model/model.h"
#include "model/weights.h"

namespace deepinfer {

// Binds the tensors of `weights` (GGUF or HF names) for `config` with shape
// checks; errors name the tensor. num_threads 0 = all CPUs.
StatusOr<std::unique_ptr<Model>> CreateGemmaModel(const ModelConfig& config,
                                                  std::shared_ptr<const WeightStore> weights,
                                                  int num_threads);

}  // namespace deepinfer
