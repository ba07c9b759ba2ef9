// Qwen2 (q/k/v biases always) and Qwen3 (per-head q/k RMSNorm): the dense
// decoder (model/dense_model.h) with the standard tensor names; llama.cpp
// runs both with NeoX RoPE.
#include "model/archs/archs.h"
#include "model/dense_model.h"

namespace deepinfer::archs {

const ArchitectureSpec kQwen2 = {
    .name = "qwen2",
    .hf_class = "Qwen2ForCausalLM",
    .gguf_name = "qwen2",
    .gguf_rope = RopeStyle::kNeox,
    .qkv_bias = true,
    .hf_windows = HfWindowRule::kLayerTypesOrMaxWindowLayers,
    .factory = CreateDenseModel,
};

const ArchitectureSpec kQwen3 = {
    .name = "qwen3",
    .hf_class = "Qwen3ForCausalLM",
    .gguf_name = "qwen3",
    .gguf_rope = RopeStyle::kNeox,
    .qk_norm = true,
    .hf_windows = HfWindowRule::kLayerTypesOrMaxWindowLayers,
    .factory = CreateDenseModel,
};

}  // namespace deepinfer::archs
