// Reading a ModelConfig from a checkpoint's metadata, and validating it.
//
// GGUF: keys `{arch}.embedding_length`, `.block_count`, ... as llama.cpp
// writes them; the RoPE style follows the architecture (llama -> interleaved,
// because llama.cpp's converter permutes Q/K rows; qwen2/qwen3 -> NeoX).
// HF: config.json of LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM,
// Qwen3ForCausalLM; HF checkpoints always use NeoX (half-split) RoPE.
//
// Every loader validates before returning; errors name the missing or bad key.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "model/model_config.h"

namespace deepinfer {

class GgufFile;

StatusOr<ModelConfig> ModelConfigFromGguf(const GgufFile& gguf);

// `json_text` is the content of config.json; error messages do not include a
// file name (the caller adds it).
StatusOr<ModelConfig> ModelConfigFromHfJson(std::string_view json_text);

// Reads DIR/config.json.
StatusOr<ModelConfig> ModelConfigFromHfDir(const std::string& dir);

// Positive dimensions, heads that divide, rope_dim even and <= head_dim, one
// sliding_window entry per layer, known rope scaling. InvalidArgument naming
// the field otherwise.
Status ValidateModelConfig(const ModelConfig& config);

// Multi-line "key: value" summary (for `deepinfer info`).
std::string DescribeModelConfig(const ModelConfig& config);

}  // namespace deepinfer
