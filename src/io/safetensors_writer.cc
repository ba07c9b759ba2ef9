// SafetensorsWriter: JSON header (offsets known from shapes), then tensors
// streamed one at a time.
#include <nlohmann/json.hpp>
#include <set>

#include "io/file_writer.h"
#include "io/safetensors.h"

namespace deepinfer {
namespace {

const char* SafetensorsDTypeName(DType t) {
  switch (t) {
    case DType::kF32:
      return "F32";
    case DType::kF16:
      return "F16";
    case DType::kBF16:
      return "BF16";
    case DType::kI32:
      return "I32";
    case DType::kI64:
      return "I64";
    case DType::kI8:
      return "I8";
    case DType::kU8:
      return "U8";
    default:
      return nullptr;  // quantized blocks have no safetensors dtype
  }
}

}  // namespace

void SafetensorsWriter::AddTensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                                  std::vector<uint8_t> bytes) {
  auto shared = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  AddTensor(name, dtype, shape, [shared]() -> StatusOr<std::vector<uint8_t>> { return *shared; });
}

void SafetensorsWriter::AddTensor(const std::string& name, DType dtype, const std::vector<int64_t>& shape,
                                  TensorBytesFn make) {
  tensors_.push_back(Tensor{name, dtype, shape, std::move(make)});
}

void SafetensorsWriter::SetMetadata(const std::string& key, const std::string& value) {
  metadata_[key] = value;
}

Status SafetensorsWriter::Write(const std::string& path) const {
  // nlohmann's ordered_json keeps insertion order, so the header lists
  // tensors in data order, which makes files easy to inspect.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  std::vector<uint64_t> sizes;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    const char* dname = SafetensorsDTypeName(t.dtype);
    if (dname == nullptr) {
      return InvalidArgument(path + ": tensor '" + t.name + "': dtype " + DTypeName(t.dtype) +
                             " cannot be stored in safetensors");
    }
    if (t.name == "__metadata__" || !names.insert(t.name).second) {
      return InvalidArgument(path + ": tensor name '" + t.name + "' is reserved or repeated");
    }
    int64_t elems = 1;
    for (int64_t d : t.shape) elems *= d;
    sizes.push_back(static_cast<uint64_t>(elems * BlockBytes(t.dtype)));
    header[t.name] = {
        {"dtype", dname}, {"shape", t.shape}, {"data_offsets", {offset, offset + sizes.back()}}};
    offset += sizes.back();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');

  FileWriter out(path);
  DI_RETURN_IF_ERROR(out.Open());
  const uint64_t n = text.size();
  DI_RETURN_IF_ERROR(out.Write(&n, 8));
  DI_RETURN_IF_ERROR(out.Write(text.data(), text.size()));
  for (size_t i = 0; i < tensors_.size(); ++i) {
    DI_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, tensors_[i].make());
    if (bytes.size() != sizes[i]) {
      return InvalidArgument(path + ": tensor '" + tensors_[i].name + "': got " +
                             std::to_string(bytes.size()) + " bytes, shape and dtype need " +
                             std::to_string(sizes[i]));
    }
    DI_RETURN_IF_ERROR(out.Write(bytes.data(), bytes.size()));
  }
  return out.Commit();
}

}  // namespace deepinfer
