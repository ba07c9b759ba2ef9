#include "model/weights.h"

#include <cstring>
#include <utility>

#include "core/check.h"
#include "io/gguf.h"
#include "io/safetensors.h"

namespace deepinfer {

namespace {

struct RoleNames {
  const char* gguf;  // per-layer names are prefixed by "blk.N."
  const char* hf;    // per-layer names are prefixed by "model.layers.N."
  bool per_layer;
};

RoleNames NamesOf(TensorRole role) {
  // One role per line, as a table.
  // clang-format off
  switch (role) {
    case TensorRole::kTokenEmbedding: return {"token_embd.weight", "model.embed_tokens.weight", false};
    case TensorRole::kOutputNorm: return {"output_norm.weight", "model.norm.weight", false};
    case TensorRole::kOutput: return {"output.weight", "lm_head.weight", false};
    case TensorRole::kRopeFreqs: return {"rope_freqs.weight", "rope_freqs.weight", false};
    case TensorRole::kAttnNorm: return {"attn_norm.weight", "input_layernorm.weight", true};
    case TensorRole::kQ: return {"attn_q.weight", "self_attn.q_proj.weight", true};
    case TensorRole::kK: return {"attn_k.weight", "self_attn.k_proj.weight", true};
    case TensorRole::kV: return {"attn_v.weight", "self_attn.v_proj.weight", true};
    case TensorRole::kO: return {"attn_output.weight", "self_attn.o_proj.weight", true};
    case TensorRole::kQBias: return {"attn_q.bias", "self_attn.q_proj.bias", true};
    case TensorRole::kKBias: return {"attn_k.bias", "self_attn.k_proj.bias", true};
    case TensorRole::kVBias: return {"attn_v.bias", "self_attn.v_proj.bias", true};
    case TensorRole::kOBias: return {"attn_output.bias", "self_attn.o_proj.bias", true};
    case TensorRole::kQNorm: return {"attn_q_norm.weight", "self_attn.q_norm.weight", true};
    case TensorRole::kKNorm: return {"attn_k_norm.weight", "self_attn.k_norm.weight", true};
    case TensorRole::kFfnNorm: return {"ffn_norm.weight", "post_attention_layernorm.weight", true};
    case TensorRole::kGate: return {"ffn_gate.weight", "mlp.gate_proj.weight", true};
    case TensorRole::kUp: return {"ffn_up.weight", "mlp.up_proj.weight", true};
    case TensorRole::kDown: return {"ffn_down.weight", "mlp.down_proj.weight", true};
    case TensorRole::kPostAttnNorm: return {"post_attention_norm.weight", "post_attention_layernorm.weight", true};
    case TensorRole::kPreFfnNorm: return {"ffn_norm.weight", "pre_feedforward_layernorm.weight", true};
    case TensorRole::kPostFfnNorm: return {"post_ffw_norm.weight", "post_feedforward_layernorm.weight", true};
  }
  // clang-format on
  DI_CHECK_MSG(false, "unknown TensorRole");
  return {};
}

class GgufWeightStore : public WeightStore {
 public:
  explicit GgufWeightStore(std::shared_ptr<const GgufFile> gguf) : gguf_(std::move(gguf)) {}
  WeightNaming naming() const override { return WeightNaming::kGguf; }
  const TensorView* Find(const std::string& name) const override { return gguf_->FindTensor(name); }
  std::vector<const TensorView*> All() const override {
    std::vector<const TensorView*> out;
    for (const auto& t : gguf_->tensors()) {
      out.push_back(&t);
    }
    return out;
  }
  const std::string& source() const override { return gguf_->path(); }

 private:
  std::shared_ptr<const GgufFile> gguf_;
};

class HfWeightStore : public WeightStore {
 public:
  HfWeightStore(std::unique_ptr<SafetensorsCheckpoint> checkpoint, std::string dir)
      : checkpoint_(std::move(checkpoint)), dir_(std::move(dir)) {}
  WeightNaming naming() const override { return WeightNaming::kHf; }
  const TensorView* Find(const std::string& name) const override { return checkpoint_->FindTensor(name); }
  std::vector<const TensorView*> All() const override { return checkpoint_->tensors(); }
  const std::string& source() const override { return dir_; }

 private:
  std::unique_ptr<SafetensorsCheckpoint> checkpoint_;
  std::string dir_;
};

}  // namespace

std::string WeightName(WeightNaming naming, TensorRole role, int64_t layer) {
  RoleNames names = NamesOf(role);
  const char* base = naming == WeightNaming::kGguf ? names.gguf : names.hf;
  if (!names.per_layer) {
    return base;
  }
  DI_CHECK_MSG(layer >= 0, "per-layer tensor role needs a layer index");
  const char* prefix = naming == WeightNaming::kGguf ? "blk." : "model.layers.";
  return prefix + std::to_string(layer) + "." + base;
}

std::unique_ptr<WeightStore> MakeGgufWeightStore(std::shared_ptr<const GgufFile> gguf) {
  return std::make_unique<GgufWeightStore>(std::move(gguf));
}

std::unique_ptr<WeightStore> MakeHfWeightStore(std::unique_ptr<SafetensorsCheckpoint> checkpoint,
                                               std::string dir) {
  return std::make_unique<HfWeightStore>(std::move(checkpoint), std::move(dir));
}

void InMemoryWeightStore::Add(const std::string& name, DType dtype, std::vector<int64_t> shape,
                              std::vector<uint8_t> bytes) {
  auto entry = std::make_unique<Entry>();
  entry->bytes = std::move(bytes);
  entry->view.name = name;
  entry->view.dtype = dtype;
  entry->view.shape = std::move(shape);
  int64_t row_bytes = RowBytes(dtype, entry->view.cols());
  DI_CHECK_MSG(row_bytes >= 0, name.c_str());
  DI_CHECK_MSG(row_bytes * entry->view.rows() == static_cast<int64_t>(entry->bytes.size()), name.c_str());
  entry->view.data = entry->bytes.data();
  entry->view.nbytes = static_cast<int64_t>(entry->bytes.size());
  tensors_[name] = std::move(entry);
}

void InMemoryWeightStore::AddF32(const std::string& name, std::vector<int64_t> shape,
                                 const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  if (!values.empty()) {
    std::memcpy(bytes.data(), values.data(), bytes.size());
  }
  Add(name, DType::kF32, std::move(shape), std::move(bytes));
}

const TensorView* InMemoryWeightStore::Find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second->view;
}

std::vector<const TensorView*> InMemoryWeightStore::All() const {
  std::vector<const TensorView*> out;
  for (const auto& [name, entry] : tensors_) {
    out.push_back(&entry->view);
  }
  return out;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) {
      s += ", ";
    }
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace deepinfer
