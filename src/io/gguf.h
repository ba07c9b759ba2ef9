// GGUF (v2/v3) reader and writer.
//
// GgufFile::Open mmaps the file and parses header, metadata and tensor infos
// with bounds checks on every read: a truncated or corrupted file yields a
// DataLoss status whose message names the file and the offending field
// (e.g. "m.gguf: metadata key #3 ('general.name'): string length 9e18 runs
// past end of file"). Tensor data stays in the mapping (no copies).
// Checked: magic, version (1 is rejected: v1 used 32-bit counts), counts vs.
// remaining bytes, string/array lengths (overflow-safe), nested arrays
// (rejected), duplicate keys and tensor names, general.alignment (u32, power
// of two), tensor rank <= 4, every dim > 0 and the element count and byte size
// free of overflow, ne[0] a whole number of blocks, offsets aligned and the
// data inside the file. Tensor types this engine cannot use (e.g. Q5_K) give
// Unimplemented naming the tensor and type.
// Thread-safety: a GgufFile is immutable after Open; share it freely.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/status.h"
#include "tensor/tensor_view.h"

namespace deepinfer {

// GGUF metadata value types (gguf spec: GGUF_TYPE_*).
enum class GgufType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

// One metadata value. Scalars are widened (ints to int64/uint64, floats to
// double); arrays keep their element type and hold widened elements.
struct GgufValue {
  GgufType type = GgufType::kUint32;
  GgufType array_type = GgufType::kUint32;  // element type when type == kArray
  std::variant<int64_t, uint64_t, double, bool, std::string, std::vector<int64_t>, std::vector<uint64_t>,
               std::vector<double>, std::vector<bool>, std::vector<std::string>>
      value;
};

class MappedFile;

class GgufFile {
 public:
  static StatusOr<std::unique_ptr<GgufFile>> Open(const std::string& path);
  // Parses an in-memory image (fuzzing, embedded files). `data` is NOT copied:
  // it must outlive the GgufFile. `name` stands in for the path in messages.
  static StatusOr<std::unique_ptr<GgufFile>> Parse(const void* data, size_t size, const std::string& name);
  ~GgufFile();

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }

  const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
  const GgufValue* Find(const std::string& key) const;

  // Typed getters: NotFound when absent, InvalidArgument (naming the key) on a
  // type mismatch. Integer getters accept any integer type that fits.
  StatusOr<std::string> GetString(const std::string& key) const;
  StatusOr<int64_t> GetInt(const std::string& key) const;
  StatusOr<double> GetFloat(const std::string& key) const;  // accepts ints too
  StatusOr<bool> GetBool(const std::string& key) const;
  StatusOr<std::vector<std::string>> GetStringArray(const std::string& key) const;
  StatusOr<std::vector<double>> GetFloatArray(const std::string& key) const;
  StatusOr<std::vector<int64_t>> GetIntArray(const std::string& key) const;
  // For optional keys: `def` when the key is absent or has the wrong type.
  int64_t GetIntOr(const std::string& key, int64_t def) const;
  double GetFloatOr(const std::string& key, double def) const;
  std::string GetStringOr(const std::string& key, const std::string& def) const;

  // Tensors in file order; data points into the mapping.
  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* FindTensor(const std::string& name) const;

 private:
  GgufFile() = default;
  friend class GgufParser;
  std::string path_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::map<std::string, GgufValue> metadata_;
  std::vector<TensorView> tensors_;
  std::map<std::string, size_t> tensor_index_;
  std::unique_ptr<MappedFile> file_;  // null for Parse()d images
};

// Produces a tensor's bytes on demand, during Write(), so a big checkpoint is
// streamed to disk one tensor at a time instead of held in memory.
using TensorBytesFn = std::function<StatusOr<std::vector<uint8_t>>()>;

// Builds a GGUF v3 file: metadata in insertion order (setting a key again
// replaces its value in place), tensors in AddTensor order, data aligned to
// 32 bytes (general.alignment is not written; 32 is the GGUF default).
// Write() writes PATH.tmp and renames it over PATH, so a failed write never
// leaves a truncated file at PATH. Errors: InvalidArgument for an unwritable
// tensor (size mismatch, U8 dtype), Internal for I/O errors, naming the path.
// Not thread-safe.
class GgufWriter {
 public:
  void SetU32(const std::string& key, uint32_t v);
  void SetI32(const std::string& key, int32_t v);
  void SetU64(const std::string& key, uint64_t v);
  void SetF32(const std::string& key, float v);
  void SetBool(const std::string& key, bool v);
  void SetString(const std::string& key, const std::string& v);
  void SetStringArray(const std::string& key, const std::vector<std::string>& v);
  void SetF32Array(const std::string& key, const std::vector<float>& v);
  void SetI32Array(const std::string& key, const std::vector<int32_t>& v);
  void SetBoolArray(const std::string& key, const std::vector<bool>& v);

  // shape outermost-first (as TensorView); bytes must be RowBytes * rows.
  void AddTensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                 std::vector<uint8_t> bytes);
  // Streaming variant: `make` runs once, inside Write(), in AddTensor order.
  void AddTensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape, TensorBytesFn make);

  Status Write(const std::string& path) const;

 private:
  void SetRaw(const std::string& key, std::vector<uint8_t> encoded);
  struct Tensor {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    TensorBytesFn make;
  };
  std::vector<std::pair<std::string, std::vector<uint8_t>>> kv_;  // key -> encoded type+value
  std::vector<Tensor> tensors_;
};

}  // namespace deepinfer
