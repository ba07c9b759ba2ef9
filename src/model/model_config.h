// Hyper-parameters of a decoder-only transformer, independent of the file
// format they were read from (GGUF metadata or HF config.json).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace deepinfer {

// How RoPE pairs the dimensions of a head.
enum class RopeStyle {
  kInterleaved,  // pairs (2i, 2i+1): GGUF llama (weights permuted by the converter), llama2.c
  kNeox,         // pairs (i, i + d/2): HF Llama/Qwen/Mistral, GGUF qwen2/qwen3
};

struct RopeScaling {
  std::string type;  // "" (none), "linear", "llama3", "yarn" (later)
  double factor = 1.0;
  double low_freq_factor = 1.0;   // llama3
  double high_freq_factor = 4.0;  // llama3
  int64_t original_max_position = 8192;
};

struct ModelConfig {
  std::string arch;  // "llama", "mistral", "qwen2", "qwen3"
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t intermediate_size = 0;
  int64_t max_position = 2048;
  double rms_norm_eps = 1e-5;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  RopeStyle rope_style = RopeStyle::kNeox;
  int64_t rope_dim = 0;  // rotary dims per head (== head_dim unless partial)
  bool attention_bias = false;  // qkv bias (Qwen2)
  bool qk_norm = false;         // per-head RMSNorm on q and k (Qwen3)
  bool tie_word_embeddings = false;
  // Per layer: 0 = full attention, W > 0 = sliding window of W tokens (the
  // query attends to keys at positions > pos - W).
  std::vector<int64_t> sliding_window;

  int64_t q_dim() const { return num_heads * head_dim; }
  int64_t kv_dim() const { return num_kv_heads * head_dim; }
};

}  // namespace deepinfer
