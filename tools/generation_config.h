// --generation-config: sampling defaults from a checkpoint's
// generation_config.json (temperature, top_k, top_p, min_p,
// repetition_penalty), as vLLM's `--generation-config auto` applies them.
// A request's own fields override these defaults.
#pragma once

#include <string>

#include "core/status.h"
#include "sampling/sampler.h"

namespace deepinfer::tools {

struct GenerationDefaults {
  SamplingParams sampling;  // SamplingParams' defaults where the file is silent
  std::string source;       // the file read; "" when none was
  std::string summary;      // "temperature=0.6 top_p=0.95"; "" when the file sets nothing used
};

// `mode`: "auto" (MODEL_DIR/generation_config.json if it exists, else
// nothing), "none", or a path to a generation_config.json (or a folder
// holding one). `model_path` is a .gguf file or an HF directory; a .gguf
// file has no generation_config.json beside its metadata, so "auto" reads
// nothing for it. InvalidArgument for a missing explicit file, bad JSON or
// an out-of-range value (naming the file and key).
StatusOr<GenerationDefaults> ReadGenerationDefaults(const std::string& mode, const std::string& model_path);

}  // namespace deepinfer::tools
