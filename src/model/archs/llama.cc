// Llama 1/2/3 and Mistral: the dense decoder (model/dense_model.h) with the
// standard tensor names. llama.cpp's converter permutes their GGUF Q/K rows
// for interleaved RoPE and writes Mistral as `llama`.
#include "model/archs/archs.h"
#include "model/dense_model.h"

namespace deepinfer::archs {

const ArchitectureSpec kLlama = {
    .name = "llama",
    .hf_class = "LlamaForCausalLM",
    .gguf_name = "llama",
    .gguf_rope = RopeStyle::kInterleaved,
    .hf_windows = HfWindowRule::kLayerTypes,
    .factory = CreateDenseModel,
};

// MistralConfig has no layer_types: `sliding_window` (default 4096) applies to every layer.
const ArchitectureSpec kMistral = {
    .name = "mistral",
    .hf_class = "MistralForCausalLM",
    .gguf_name = "mistral",
    .gguf_rope = RopeStyle::kInterleaved,
    .hf_windows = HfWindowRule::kEveryLayer,
    .factory = CreateDenseModel,
};

}  // namespace deepinfer::archs
