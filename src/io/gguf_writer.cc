// GgufWriter: encodes metadata eagerly (small), tensors lazily (big).
#include <cstring>

#include "io/file_writer.h"
#include "io/gguf.h"

namespace deepinfer {
namespace {

constexpr uint64_t kAlignment = 32;

template <typename T>
void Put(std::vector<uint8_t>& out, T v) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

void PutString(std::vector<uint8_t>& out, const std::string& s) {
  Put<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

std::vector<uint8_t> Typed(GgufType t) {
  std::vector<uint8_t> out;
  Put<uint32_t>(out, static_cast<uint32_t>(t));
  return out;
}

std::vector<uint8_t> ArrayHeader(GgufType elem, size_t count) {
  std::vector<uint8_t> out = Typed(GgufType::kArray);
  Put<uint32_t>(out, static_cast<uint32_t>(elem));
  Put<uint64_t>(out, count);
  return out;
}

}  // namespace

void GgufWriter::SetRaw(const std::string& key, std::vector<uint8_t> encoded) {
  for (auto& kv : kv_) {
    if (kv.first == key) {
      kv.second = std::move(encoded);
      return;
    }
  }
  kv_.emplace_back(key, std::move(encoded));
}

void GgufWriter::SetU32(const std::string& key, uint32_t v) {
  auto e = Typed(GgufType::kUint32);
  Put(e, v);
  SetRaw(key, std::move(e));
}
void GgufWriter::SetI32(const std::string& key, int32_t v) {
  auto e = Typed(GgufType::kInt32);
  Put(e, v);
  SetRaw(key, std::move(e));
}
void GgufWriter::SetU64(const std::string& key, uint64_t v) {
  auto e = Typed(GgufType::kUint64);
  Put(e, v);
  SetRaw(key, std::move(e));
}
void GgufWriter::SetF32(const std::string& key, float v) {
  auto e = Typed(GgufType::kFloat32);
  Put(e, v);
  SetRaw(key, std::move(e));
}
void GgufWriter::SetBool(const std::string& key, bool v) {
  auto e = Typed(GgufType::kBool);
  Put<uint8_t>(e, v ? 1 : 0);
  SetRaw(key, std::move(e));
}
void GgufWriter::SetString(const std::string& key, const std::string& v) {
  auto e = Typed(GgufType::kString);
  PutString(e, v);
  SetRaw(key, std::move(e));
}
void GgufWriter::SetStringArray(const std::string& key, const std::vector<std::string>& v) {
  auto e = ArrayHeader(GgufType::kString, v.size());
  for (const auto& s : v) PutString(e, s);
  SetRaw(key, std::move(e));
}
void GgufWriter::SetF32Array(const std::string& key, const std::vector<float>& v) {
  auto e = ArrayHeader(GgufType::kFloat32, v.size());
  for (float x : v) Put(e, x);
  SetRaw(key, std::move(e));
}
void GgufWriter::SetI32Array(const std::string& key, const std::vector<int32_t>& v) {
  auto e = ArrayHeader(GgufType::kInt32, v.size());
  for (int32_t x : v) Put(e, x);
  SetRaw(key, std::move(e));
}
void GgufWriter::SetBoolArray(const std::string& key, const std::vector<bool>& v) {
  auto e = ArrayHeader(GgufType::kBool, v.size());
  for (bool x : v) Put<uint8_t>(e, x ? 1 : 0);
  SetRaw(key, std::move(e));
}

void GgufWriter::AddTensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                           std::vector<uint8_t> bytes) {
  auto shared = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  AddTensor(name, dtype, shape, [shared]() -> StatusOr<std::vector<uint8_t>> {
    return *shared;
  });  // a copy: Write() may run again
}

void GgufWriter::AddTensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                           TensorBytesFn make) {
  tensors_.push_back(Tensor{name, dtype, shape, std::move(make)});
}

Status GgufWriter::Write(const std::string& path) const {
  // Sizes and aligned offsets first: the tensor infos precede the data.
  std::vector<uint64_t> sizes, offsets;
  uint64_t data_size = 0;
  for (const Tensor& t : tensors_) {
    if (GgmlTypeFromDType(t.dtype) == kNoGgmlType) {
      return InvalidArgument(path + ": tensor '" + t.name + "': dtype " + DTypeName(t.dtype) +
                             " cannot be stored in GGUF");
    }
    if (t.shape.empty() || t.shape.size() > 4) {
      return InvalidArgument(path + ": tensor '" + t.name + "': rank must be 1..4");
    }
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < t.shape.size(); ++d) rows *= t.shape[d];
    const int64_t row_bytes = RowBytes(t.dtype, t.shape.back());
    if (row_bytes < 0) {
      return InvalidArgument(path + ": tensor '" + t.name + "': row is not a whole number of blocks");
    }
    offsets.push_back(data_size);
    sizes.push_back(static_cast<uint64_t>(row_bytes * rows));
    data_size += (sizes.back() + kAlignment - 1) / kAlignment * kAlignment;
  }

  std::vector<uint8_t> head;
  Put<uint32_t>(head, 0x46554747u);  // "GGUF"
  Put<uint32_t>(head, 3);
  Put<uint64_t>(head, tensors_.size());
  Put<uint64_t>(head, kv_.size());
  for (const auto& [key, encoded] : kv_) {
    PutString(head, key);
    head.insert(head.end(), encoded.begin(), encoded.end());
  }
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    PutString(head, t.name);
    Put<uint32_t>(head, static_cast<uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it) {
      Put<uint64_t>(head, static_cast<uint64_t>(*it));
    }
    Put<uint32_t>(head, GgmlTypeFromDType(t.dtype));
    Put<uint64_t>(head, offsets[i]);
  }

  FileWriter out(path);
  DI_RETURN_IF_ERROR(out.Open());
  DI_RETURN_IF_ERROR(out.Write(head.data(), head.size()));
  DI_RETURN_IF_ERROR(out.WriteZeros((kAlignment - head.size() % kAlignment) % kAlignment));
  const uint64_t data_start = out.written();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    DI_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, t.make());
    if (bytes.size() != sizes[i]) {
      return InvalidArgument(path + ": tensor '" + t.name + "': got " + std::to_string(bytes.size()) +
                             " bytes, shape and dtype need " + std::to_string(sizes[i]));
    }
    DI_RETURN_IF_ERROR(out.WriteZeros(data_start + offsets[i] - out.written()));
    DI_RETURN_IF_ERROR(out.Write(bytes.data(), bytes.size()));
  }
  // Pad the last tensor too, as llama.cpp does, so the data section is a whole number of alignments.
  DI_RETURN_IF_ERROR(out.WriteZeros(data_start + data_size - out.written()));
  return out.Commit();
}

}  // namespace deepinfer
