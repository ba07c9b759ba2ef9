// Where a model's tensors come from, and what they are called.
//
// A WeightStore owns the bytes behind its TensorViews (an mmap'ed GGUF file,
// the safetensors shards of an HF directory, or in-memory buffers for tests)
// and says which naming convention its tensors follow. Model code asks for a
// tensor by role (TensorRole) and layer; WeightName turns that into the
// file's name, so architecture code never spells "blk.%d.attn_q.weight".
//
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "tensor/tensor_view.h"

namespace deepinfer {

class GgufFile;
class SafetensorsCheckpoint;

enum class WeightNaming { kGguf, kHf };

// The tensors of a Llama-family decoder. Per-layer roles take a layer index.
enum class TensorRole {
  kTokenEmbedding,  // [vocab, hidden]
  kOutputNorm,      // [hidden]
  kOutput,          // [vocab, hidden] (lm_head; optional when tied)
  kRopeFreqs,       // [rope_dim / 2] (GGUF llama3 frequency factors; optional)
  kAttnNorm,        // [hidden]
  kQ,
  kK,
  kV,  // [q_dim | kv_dim, hidden]
  kO,  // [hidden, q_dim]
  kQBias,
  kKBias,
  kVBias,
  kOBias,
  kQNorm,
  kKNorm,    // [head_dim] (Qwen3)
  kFfnNorm,  // [hidden]
  kGate,
  kUp,    // [intermediate, hidden]
  kDown,  // [hidden, intermediate]
  // Gemma-2/3's sandwich norms [hidden]. HF Gemma's `post_attention_layernorm`
  // scales the attention output (not the MLP input, as kFfnNorm's HF name
  // means elsewhere), and GGUF's `ffn_norm` is its pre-feedforward norm.
  kPostAttnNorm,
  kPreFfnNorm,
  kPostFfnNorm,
};

// The tensor name of `role` (at `layer` for per-layer roles) under `naming`.
std::string WeightName(WeightNaming naming, TensorRole role, int64_t layer = -1);

class WeightStore {
 public:
  virtual ~WeightStore() = default;
  virtual WeightNaming naming() const = 0;
  // nullptr when absent.
  virtual const TensorView* Find(const std::string& name) const = 0;
  virtual std::vector<const TensorView*> All() const = 0;
  // File or directory the tensors came from ("<memory>" for tests), for errors.
  virtual const std::string& source() const = 0;
};

std::unique_ptr<WeightStore> MakeGgufWeightStore(std::shared_ptr<const GgufFile> gguf);
std::unique_ptr<WeightStore> MakeHfWeightStore(std::unique_ptr<SafetensorsCheckpoint> checkpoint,
                                               std::string dir);

// Tensors owned in memory: for tests and tools that build weights on the fly.
class InMemoryWeightStore : public WeightStore {
 public:
  explicit InMemoryWeightStore(WeightNaming naming) : naming_(naming) {}
  // bytes must hold RowBytes(dtype, shape.back()) * rows bytes (checked).
  void Add(const std::string& name, DType dtype, std::vector<int64_t> shape, std::vector<uint8_t> bytes);
  void AddF32(const std::string& name, std::vector<int64_t> shape, const std::vector<float>& values);

  WeightNaming naming() const override { return naming_; }
  const TensorView* Find(const std::string& name) const override;
  std::vector<const TensorView*> All() const override;
  const std::string& source() const override { return source_; }

 private:
  struct Entry {
    std::vector<uint8_t> bytes;
    TensorView view;
  };
  WeightNaming naming_;
  std::string source_ = "<memory>";
  std::map<std::string, std::unique_ptr<Entry>> tensors_;  // stable addresses
};

// A tensor's shape as "[a, b]" for error messages.
std::string ShapeString(const std::vector<int64_t>& shape);

}  // namespace deepinfer
