// SafetensorsFile: header validation and zero-copy tensor views.
#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "io/mapped_file.h"
#include "io/safetensors.h"

namespace deepinfer {
namespace {

using json = nlohmann::json;

// The HF library refuses headers over 100 MB; so do we (it also bounds the
// JSON parser's memory on a corrupted length field).
constexpr uint64_t kMaxHeaderBytes = 100u << 20;
constexpr int kMaxJsonDepth = 16;  // a valid header nests 3 deep

struct SafetensorsDType {
  const char* name;
  std::optional<DType> dtype;  // nullopt: valid safetensors dtype we cannot use
};
constexpr SafetensorsDType kDTypes[] = {
    {"F32", DType::kF32},   {"F16", DType::kF16},      {"BF16", DType::kBF16},    {"I32", DType::kI32},
    {"I64", DType::kI64},   {"I8", DType::kI8},        {"U8", DType::kU8},        {"F64", std::nullopt},
    {"I16", std::nullopt},  {"U16", std::nullopt},     {"U32", std::nullopt},     {"U64", std::nullopt},
    {"BOOL", std::nullopt}, {"F8_E4M3", std::nullopt}, {"F8_E5M2", std::nullopt},
};

// Nesting depth of a JSON text, skipping strings; a cheap guard so a hostile
// header like "[[[[..." cannot exhaust the parser's memory or stack.
int JsonDepth(const char* p, size_t n) {
  int depth = 0, max_depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < n; ++i) {
    const char c = p[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
      if (max_depth > kMaxJsonDepth) return max_depth;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max_depth;
}

}  // namespace

class SafetensorsParser {
 public:
  SafetensorsParser(const uint8_t* data, size_t size, std::string name)
      : data_(data), size_(size), name_(std::move(name)) {}

  StatusOr<std::unique_ptr<SafetensorsFile>> Run() {
    file_.reset(new SafetensorsFile());
    file_->path_ = name_;
    if (size_ < 8) return Fail("header", "file of " + std::to_string(size_) + " bytes is too short");
    uint64_t n = 0;
    std::memcpy(&n, data_, 8);
    if (n > kMaxHeaderBytes) return Fail("header", "header length " + std::to_string(n) + " exceeds 100 MB");
    if (n > size_ - 8) {
      return Fail("header", "header length " + std::to_string(n) + " runs past end of file (" +
                                std::to_string(size_) + " bytes)");
    }
    const char* text = reinterpret_cast<const char*>(data_ + 8);
    if (JsonDepth(text, n) > kMaxJsonDepth) return Fail("header", "JSON nested too deeply");
    json header = json::parse(text, text + n, nullptr, /*allow_exceptions=*/false);
    if (header.is_discarded()) return Fail("header", "invalid JSON");
    if (!header.is_object()) return Fail("header", "JSON is not an object");
    data_start_ = 8 + n;
    for (auto it = header.begin(); it != header.end(); ++it) {
      if (it.key() == "__metadata__") {
        DI_RETURN_IF_ERROR(ParseMetadata(it.value()));
      } else {
        DI_RETURN_IF_ERROR(ParseTensor(it.key(), it.value()));
      }
    }
    DI_RETURN_IF_ERROR(CheckNoOverlap());
    for (size_t i = 0; i < file_->tensors_.size(); ++i) file_->index_[file_->tensors_[i].name] = i;
    return std::move(file_);
  }

 private:
  Status Fail(const std::string& where, const std::string& what) const {
    return DataLoss(name_ + ": " + where + ": " + what);
  }

  Status ParseMetadata(const json& m) {
    if (!m.is_object()) return Fail("__metadata__", "is not an object");
    for (auto it = m.begin(); it != m.end(); ++it) {
      if (!it.value().is_string()) return Fail("__metadata__ '" + it.key() + "'", "value is not a string");
      file_->metadata_[it.key()] = it.value().get<std::string>();
    }
    return Status::Ok();
  }

  Status ParseTensor(const std::string& name, const json& e) {
    const std::string where = "tensor '" + name + "'";
    if (!e.is_object()) return Fail(where, "entry is not an object");
    auto dt = e.find("dtype");
    auto sh = e.find("shape");
    auto off = e.find("data_offsets");
    if (dt == e.end() || !dt->is_string()) return Fail(where, "missing string 'dtype'");
    if (sh == e.end() || !sh->is_array()) return Fail(where, "missing array 'shape'");
    if (off == e.end() || !off->is_array() || off->size() != 2) {
      return Fail(where, "'data_offsets' is not [begin, end]");
    }

    TensorView t;
    t.name = name;
    const std::string dname = dt->get<std::string>();
    const SafetensorsDType* known = nullptr;
    for (const auto& k : kDTypes) {
      if (dname == k.name) known = &k;
    }
    if (known == nullptr) return Fail(where, "unknown dtype '" + dname + "'");
    if (!known->dtype) return Unimplemented(name_ + ": " + where + ": dtype " + dname + " is not supported");
    t.dtype = *known->dtype;

    int64_t elems = 1;
    for (const json& d : *sh) {
      if (!d.is_number_unsigned()) return Fail(where, "shape has a non-integer or negative dimension");
      const uint64_t v = d.get<uint64_t>();
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Fail(where, "dimension overflows");
      }
      const auto dim = static_cast<int64_t>(v);
      if (dim != 0 && elems > std::numeric_limits<int64_t>::max() / dim) {
        return Fail(where, "element count overflows");
      }
      elems *= dim;
      t.shape.push_back(dim);
    }
    const int64_t elem_bytes = BlockBytes(t.dtype);  // plain types: one element per block
    if (elems > std::numeric_limits<int64_t>::max() / elem_bytes) return Fail(where, "byte size overflows");
    t.nbytes = elems * elem_bytes;

    const json& b = (*off)[0];
    const json& en = (*off)[1];
    if (!b.is_number_unsigned() || !en.is_number_unsigned()) {
      return Fail(where, "data_offsets are not unsigned integers");
    }
    const uint64_t begin = b.get<uint64_t>(), end = en.get<uint64_t>();
    const uint64_t data_size = size_ - data_start_;
    if (begin > end || end > data_size) {
      return Fail(where, "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                             ") outside the data region of " + std::to_string(data_size) + " bytes");
    }
    if (end - begin != static_cast<uint64_t>(t.nbytes)) {
      return Fail(where, "data_offsets span " + std::to_string(end - begin) + " bytes but shape and " +
                             dname + " need " + std::to_string(t.nbytes));
    }
    t.data = data_ + data_start_ + begin;
    file_->tensors_.push_back(std::move(t));
    return Status::Ok();
  }

  // Sorts tensors by offset (file order) and rejects overlapping ranges.
  Status CheckNoOverlap() {
    auto& ts = file_->tensors_;
    std::sort(ts.begin(), ts.end(), [](const TensorView& a, const TensorView& b) {
      return a.data != b.data ? a.data < b.data : a.nbytes < b.nbytes;
    });
    for (size_t i = 1; i < ts.size(); ++i) {
      const auto* prev_end = static_cast<const uint8_t*>(ts[i - 1].data) + ts[i - 1].nbytes;
      if (static_cast<const uint8_t*>(ts[i].data) < prev_end) {
        return Fail("tensor '" + ts[i].name + "'", "data overlaps tensor '" + ts[i - 1].name + "'");
      }
    }
    return Status::Ok();
  }

  const uint8_t* data_;
  size_t size_;
  std::string name_;
  uint64_t data_start_ = 0;
  std::unique_ptr<SafetensorsFile> file_;
};

StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Parse(const void* data, size_t size,
                                                                  const std::string& name) {
  static const uint8_t kEmpty = 0;
  return SafetensorsParser(data != nullptr ? static_cast<const uint8_t*>(data) : &kEmpty, size, name).Run();
}

StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  DI_ASSIGN_OR_RETURN(auto mapped, MappedFile::Open(path));
  DI_ASSIGN_OR_RETURN(auto file, Parse(mapped->data(), mapped->size(), path));
  file->file_ = std::move(mapped);
  return file;
}

SafetensorsFile::~SafetensorsFile() = default;

const TensorView* SafetensorsFile::FindTensor(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace deepinfer
