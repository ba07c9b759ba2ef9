// A loaded model: configuration, weights bound to their tensors (kept in the
// file's dtype, usually mmap'ed), and a Forward over a ForwardBatch.
//
// Usage:
//   DI_ASSIGN_OR_RETURN(auto loaded, LoadModel(path, options));   // model + tokenizer
//   KvCache kv(loaded.model->config(), /*num_blocks=*/64, /*block_size=*/16);
//   std::vector<float> logits(batch.NumLogitRows() * vocab);
//   DI_RETURN_IF_ERROR(loaded.model->Forward(batch, kv, logits.data()));
//
// Thread-safety: Forward is not re-entrant (it uses the model's scratch and
// thread pool); the weights are immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "model/forward_batch.h"
#include "model/model_config.h"

namespace deepinfer {

class Tokenizer;
class WeightStore;

// f32 paged KV storage for every layer: [layer][block][slot][kv_head][head_dim]
// for K and for V. Owns memory; holds no per-sequence state (block tables live
// with the caller).
class KvCache {
 public:
  KvCache(const ModelConfig& config, int64_t num_blocks, int64_t block_size);
  int64_t num_layers() const { return num_layers_; }
  int64_t num_blocks() const { return num_blocks_; }
  int64_t block_size() const { return block_size_; }
  int64_t kv_dim() const { return kv_dim_; }
  // Pointer to K (or V) of (layer, block, slot): kv_dim floats.
  float* K(int64_t layer, int64_t block, int64_t slot);
  float* V(int64_t layer, int64_t block, int64_t slot);
  const float* K(int64_t layer, int64_t block, int64_t slot) const;
  const float* V(int64_t layer, int64_t block, int64_t slot) const;
  int64_t BytesPerToken() const;  // over all layers, K and V

 private:
  int64_t num_layers_, num_blocks_, block_size_, kv_dim_;
  std::vector<float> k_, v_;
};

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelConfig& config() const = 0;

  // Runs one step. logits_out receives batch.NumLogitRows() rows of
  // config().vocab_size floats (raw logits). InvalidArgument when a chunk's
  // block table does not cover its positions or a token id is out of range.
  virtual Status Forward(const ForwardBatch& batch, KvCache& kv, float* logits_out) = 0;
};

struct LoadOptions {
  int num_threads = 0;  // 0 = ThreadPool::DefaultThreadCount()
  // false: skip the tokenizer (LoadedModel::tokenizer stays null), for tools
  // that work on token ids only (`deepinfer score`).
  bool load_tokenizer = true;
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
  // Human-readable summary for `deepinfer info` (arch, hyper-parameters, dtypes).
  std::string Describe() const;
};

// Loads a .gguf file or an HF directory (config.json + safetensors + tokenizer.json).
StatusOr<LoadedModel> LoadModel(const std::string& path, const LoadOptions& options);

}  // namespace deepinfer
