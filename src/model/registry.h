// The architecture registry: the one place that maps an architecture name
// (GGUF `general.architecture`, HF `architectures[0]`) to its properties and
// to the code that builds its Model. Adding an architecture = one file in
// model/ plus one line in registry.cc.
#pragma once

#include <memory>
#include <string_view>

#include "core/status.h"
#include "model/model.h"
#include "model/model_config.h"
#include "model/weights.h"

namespace deepinfer {

// Builds a Model over bound weights. The model keeps `weights` alive.
using ModelFactory = StatusOr<std::unique_ptr<Model>> (*)(const ModelConfig& config,
                                                          std::shared_ptr<const WeightStore> weights,
                                                          int num_threads);

struct ArchitectureSpec {
  const char* name;      // ModelConfig::arch, also the GGUF architecture name
  const char* hf_class;  // HF config.json "architectures" entry
  RopeStyle gguf_rope;   // how llama.cpp's converter lays out Q/K rows in GGUF
  bool qkv_bias;         // q/k/v projections always carry a bias (Qwen2)
  bool qk_norm;          // per-head RMSNorm on q and k (Qwen3)
  ModelFactory factory;
};

// nullptr when unknown.
const ArchitectureSpec* FindArchitectureByName(std::string_view name);
const ArchitectureSpec* FindArchitectureByHfClass(std::string_view hf_class);

// Comma-separated list of the supported names (for error messages).
std::string SupportedArchitectures();

// Looks up config.arch and calls its factory.
StatusOr<std::unique_ptr<Model>> CreateModel(const ModelConfig& config,
                                             std::shared_ptr<const WeightStore> weights, int num_threads);

}  // namespace deepinfer
