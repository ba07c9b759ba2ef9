// HF safetensors reader/writer and sharded-checkpoint index.
//
// Format: u64 little-endian header length N, then N bytes of JSON
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]}, "__metadata__": {...}},
// then the data region. Every field is validated (dtype known, offsets inside
// the data region and consistent with shape * dtype size, no overlap past
// end); errors name the file and the tensor.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "tensor/tensor_view.h"

namespace deepinfer {

class SafetensorsFile {
 public:
  static StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);
  ~SafetensorsFile();
  const std::string& path() const { return path_; }
  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* FindTensor(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  SafetensorsFile() = default;
  friend class SafetensorsParser;
  std::string path_;
  std::vector<TensorView> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
};

// All tensors of an HF checkpoint directory: model.safetensors, or the shards
// listed by model.safetensors.index.json ("weight_map": name -> file).
class SafetensorsCheckpoint {
 public:
  static StatusOr<std::unique_ptr<SafetensorsCheckpoint>> Open(const std::string& dir);
  const TensorView* FindTensor(const std::string& name) const;
  std::vector<const TensorView*> tensors() const;

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorView*> by_name_;
};

// Writes one safetensors file (F32, F16, BF16 tensors; shape outermost-first).
class SafetensorsWriter {
 public:
  void AddTensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                 std::vector<uint8_t> bytes);
  void SetMetadata(const std::string& key, const std::string& value);
  Status Write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
  };
  std::vector<Tensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace deepinfer
