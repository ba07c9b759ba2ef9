// HF safetensors reader/writer and sharded-checkpoint index.
//
// Format: u64 little-endian header length N, then N bytes of JSON
// {"name": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]}, "__metadata__": {...}},
// then the data region. Every field is validated (header length within the
// file and <= 100 MB, JSON valid and not absurdly nested, dtype known, shape
// of non-negative ints without overflow, offsets inside the data region and
// equal to shape * dtype size, no two tensors overlapping); errors are
// DataLoss naming the file and the tensor. Readable dtypes: F32, F16, BF16,
// I32, I64, I8, U8; other valid safetensors dtypes (F64, BOOL, F8_*, ...)
// give Unimplemented. Tensor data is not necessarily aligned.
// Thread-safety: readers are immutable after Open; share them freely.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/gguf.h"  // TensorBytesFn
#include "tensor/tensor_view.h"

namespace deepinfer {

class MappedFile;

class SafetensorsFile {
 public:
  static StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);
  // Parses an in-memory image (fuzzing). `data` is NOT copied and must
  // outlive the result; `name` stands in for the path in messages.
  static StatusOr<std::unique_ptr<SafetensorsFile>> Parse(const void* data, size_t size,
                                                          const std::string& name);
  ~SafetensorsFile();
  const std::string& path() const { return path_; }
  // In data-offset order.
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
  std::unique_ptr<MappedFile> file_;  // null for Parse()d images
};

// All tensors of an HF checkpoint directory: the shards listed by
// model.safetensors.index.json ("weight_map": name -> file) when it exists,
// else model.safetensors. `dir` may also name a single .safetensors file.
// Checked: shard names stay inside dir, every weight_map entry exists in its
// shard, no tensor name appears in two files. Errors name the file.
class SafetensorsCheckpoint {
 public:
  static StatusOr<std::unique_ptr<SafetensorsCheckpoint>> Open(const std::string& dir);
  const TensorView* FindTensor(const std::string& name) const;
  std::vector<const TensorView*> tensors() const;  // file by file, in data order

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorView*> by_name_;
};

// Writes one safetensors file (F32, F16, BF16, I32, I64, I8, U8 tensors;
// shape outermost-first), tensors in AddTensor order, header padded with
// spaces to 8 bytes (as the HF library does). Write() goes through PATH.tmp
// + rename. Errors: InvalidArgument (quantized dtype, size mismatch, duplicate
// name), Internal (I/O). Not thread-safe.
class SafetensorsWriter {
 public:
  void AddTensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                 std::vector<uint8_t> bytes);
  // Streaming variant: `make` runs once, inside Write(), in AddTensor order.
  void AddTensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape, TensorBytesFn make);
  void SetMetadata(const std::string& key, const std::string& value);
  Status Write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    TensorBytesFn make;
  };
  std::vector<Tensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace deepinfer
