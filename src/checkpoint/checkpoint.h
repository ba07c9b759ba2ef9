// A checkpoint on disk -> everything a caller serves it with: the model
// (config + weights + forward pass, src/model) and its tokenizer
// (src/tokenizer). This room sits above both so that neither knows the other:
// the model never sees a tokenizer, the tokenizer never sees weights.
//
// Usage:
//   LoadOptions options;
//   DI_ASSIGN_OR_RETURN(LoadedModel loaded, LoadModel(path, options));
//   loaded.model->Forward(...);  loaded.tokenizer->Encode(...);
//
// Formats: a .gguf file (config and tokenizer from its metadata, weights
// mmap'ed from it) or an HF directory (config.json, *.safetensors [+ index],
// tokenizer.json[.gz] + tokenizer_config.json).
// Ownership: a LoadedModel owns its model and tokenizer; see model/model.h
// and tokenizer/tokenizer.h for what each part allows concurrently.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "model/model.h"

namespace deepinfer {

class Tokenizer;
class WeightStore;

struct LoadOptions {
  int num_threads = 0;  // 0 = ThreadPool::DefaultThreadCount()
  // false: skip the tokenizer (LoadedModel::tokenizer stays null), for tools
  // that work on token ids only (`deepinfer score`).
  bool load_tokenizer = true;
  // The tokenizer from elsewhere (--tokenizer, as vLLM has it): a .gguf with
  // tokenizer metadata, a tokenizer.json[.gz], or a folder holding one.
  // Empty: the checkpoint's own. Its vocabulary must fit the model's.
  std::string tokenizer_path;
};

struct LoadedModel {
  // Out of line, so users need not include tokenizer.h.
  LoadedModel();
  ~LoadedModel();
  LoadedModel(LoadedModel&&) noexcept;
  LoadedModel& operator=(LoadedModel&&) noexcept;

  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;  // may be null only for tokenizer-less checkpoints
  std::string format;                    // "gguf" or "hf"
  std::string path;                      // as given to LoadModel
  // Every tensor of the checkpoint, including those the model does not bind
  // (e.g. an MTP layer after the last decoder layer). Shared with the model.
  std::shared_ptr<const WeightStore> weights;
  int num_threads = 0;  // the model's thread count as loaded (0 = the default); a draft model's too
  // Human-readable summary for `deepinfer info` (arch, hyper-parameters, dtypes).
  std::string Describe() const;
};

// Loads a .gguf file or an HF directory (config.json + safetensors + tokenizer.json).
// NotFound if `path` does not exist, InvalidArgument if it is neither a file
// nor a directory; otherwise the config, weight or tokenizer loader's error.
// A checkpoint without tokenizer metadata loads with a null tokenizer (and a warning).
// Every tokenizer (the checkpoint's or --tokenizer's) must fit the model:
// InvalidArgument naming both sizes when it has more tokens than the model
// has embedding rows, so the mismatch is found at load, not at a request.
StatusOr<LoadedModel> LoadModel(const std::string& path, const LoadOptions& options);

// The checkpoint's config alone (GGUF metadata, or config.json), validated,
// without binding weights or reading the tokenizer: for checks a command
// makes before a long load (`serve --max-model-len`). Errors as LoadModel's.
StatusOr<ModelConfig> ReadModelConfig(const std::string& path);

}  // namespace deepinfer
