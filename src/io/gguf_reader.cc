// GGUF parsing. Layout (all little-endian):
//   "GGUF" u32 version u64 n_tensors u64 n_kv
//   n_kv x { string key, u32 type, value }           string = u64 len + bytes
//   n_tensors x { string name, u32 n_dims, u64 ne[n_dims] (innermost first),
//                 u32 ggml_type, u64 offset (from the data section start) }
//   padding to `alignment`, then the data section.
// Arrays are { u32 element type, u64 count, elements }.
#include <limits>

#include "io/byte_reader.h"
#include "io/gguf.h"
#include "io/mapped_file.h"

namespace deepinfer {
namespace {

constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS

// Bytes of one scalar of `t` on disk; 0 for string/array (variable).
size_t ScalarSize(GgufType t) {
  switch (t) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kBool:
      return 1;
    case GgufType::kUint16:
    case GgufType::kInt16:
      return 2;
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kFloat32:
      return 4;
    case GgufType::kUint64:
    case GgufType::kInt64:
    case GgufType::kFloat64:
      return 8;
    default:
      return 0;
  }
}

bool IsValidType(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::kFloat64); }

// Names of ggml types this engine cannot load, so errors say "q5_K" not "13".
const char* GgmlTypeName(uint32_t t) {
  static const char* const kNames[] = {"f32",
                                       "f16",
                                       "q4_0",
                                       "q4_1",
                                       "q4_2(removed)",
                                       "q4_3(removed)",
                                       "q5_0",
                                       "q5_1",
                                       "q8_0",
                                       "q8_1",
                                       "q2_K",
                                       "q3_K",
                                       "q4_K",
                                       "q5_K",
                                       "q6_K",
                                       "q8_K",
                                       "iq2_xxs",
                                       "iq2_xs",
                                       "iq3_xxs",
                                       "iq1_s",
                                       "iq4_nl",
                                       "iq3_s",
                                       "iq2_s",
                                       "iq4_xs",
                                       "i8",
                                       "i16",
                                       "i32",
                                       "i64",
                                       "f64",
                                       "iq1_m",
                                       "bf16",
                                       "q4_0_4_4(removed)",
                                       "q4_0_4_8(removed)",
                                       "q4_0_8_8(removed)",
                                       "tq1_0",
                                       "tq2_0",
                                       "iq4_nl_4_4(removed)",
                                       "iq4_nl_4_8(removed)",
                                       "iq4_nl_8_8(removed)",
                                       "mxfp4"};
  return t < std::size(kNames) ? kNames[t] : nullptr;
}

}  // namespace

// Parses one GGUF image into a GgufFile. Every failure names the file and the
// field; positions are byte offsets into the file.
class GgufParser {
 public:
  GgufParser(const uint8_t* data, size_t size, std::string name)
      : data_(data), size_(size), in_(data, size), name_(std::move(name)) {}

  StatusOr<std::unique_ptr<GgufFile>> Run() {
    file_.reset(new GgufFile());
    file_->path_ = name_;
    DI_RETURN_IF_ERROR(ParseHeader());
    for (uint64_t i = 0; i < n_kv_; ++i) DI_RETURN_IF_ERROR(ParseKeyValue(i));
    DI_RETURN_IF_ERROR(ReadAlignment());
    for (uint64_t i = 0; i < n_tensors_; ++i) DI_RETURN_IF_ERROR(ParseTensorInfo(i));
    DI_RETURN_IF_ERROR(PlaceTensorData());
    return std::move(file_);
  }

 private:
  Status Fail(const std::string& where, const std::string& what) const {
    return DataLoss(name_ + ": " + where + ": " + what);
  }
  Status Truncated(const std::string& where) const {
    return Fail(where, "truncated at byte " + std::to_string(in_.pos()) + " (file is " +
                           std::to_string(size_) + " bytes)");
  }

  Status ParseHeader() {
    uint32_t magic = 0;
    if (!in_.Read(&magic)) return Truncated("header");
    if (magic != 0x46554747u) return Fail("header", "bad magic (not a GGUF file)");
    if (!in_.Read(&file_->version_)) return Truncated("header version");
    const uint32_t v = file_->version_;
    if (v == 1) return Fail("header", "GGUF version 1 is not supported (only v2 and v3)");
    if (v != 2 && v != 3) {
      return Fail("header", "unsupported GGUF version " + std::to_string(v) +
                                (v > 0xffff ? " (big-endian file?)" : "") + "; expected 2 or 3");
    }
    if (!in_.Read(&n_tensors_) || !in_.Read(&n_kv_)) return Truncated("header counts");
    // Each tensor info takes >= 24 bytes (8 name length, 4 rank, 4 type, 8 offset)
    // and each key/value >= 13 (8 key length, 4 type, 1 value): reject counts the
    // file cannot hold before anything is allocated for them.
    if (n_tensors_ > in_.remaining() / 24) {
      return Fail("header", "tensor count " + std::to_string(n_tensors_) + " exceeds what the file can hold");
    }
    if (n_kv_ > in_.remaining() / 13) {
      return Fail("header", "metadata count " + std::to_string(n_kv_) + " exceeds what the file can hold");
    }
    return Status::Ok();
  }

  Status ReadString(const std::string& where, std::string* out) {
    uint64_t len = 0;
    if (!in_.Read(&len)) return Truncated(where + " length");
    if (len > in_.remaining()) {
      return Fail(where, "string length " + std::to_string(len) + " runs past end of file");
    }
    in_.ReadString(len, out);
    return Status::Ok();
  }

  template <typename Disk, typename Wide>
  Status ReadScalar(const std::string& where, Wide* out) {
    Disk d;
    if (!in_.Read(&d)) return Truncated(where);
    // GGUF int8 values are signed: the sign extension is meant.
    *out = static_cast<Wide>(d);  // NOLINT(bugprone-signed-char-misuse)
    return Status::Ok();
  }

  // Reads one scalar of type t into the widened variant slot.
  Status ReadScalarValue(const std::string& where, GgufType t, GgufValue* v) {
    int64_t i = 0;
    uint64_t u = 0;
    double f = 0;
    switch (t) {
      case GgufType::kUint8:
        DI_RETURN_IF_ERROR((ReadScalar<uint8_t>(where, &u)));
        v->value = u;
        break;
      case GgufType::kUint16:
        DI_RETURN_IF_ERROR((ReadScalar<uint16_t>(where, &u)));
        v->value = u;
        break;
      case GgufType::kUint32:
        DI_RETURN_IF_ERROR((ReadScalar<uint32_t>(where, &u)));
        v->value = u;
        break;
      case GgufType::kUint64:
        DI_RETURN_IF_ERROR((ReadScalar<uint64_t>(where, &u)));
        v->value = u;
        break;
      case GgufType::kInt8:
        DI_RETURN_IF_ERROR((ReadScalar<int8_t>(where, &i)));
        v->value = i;
        break;
      case GgufType::kInt16:
        DI_RETURN_IF_ERROR((ReadScalar<int16_t>(where, &i)));
        v->value = i;
        break;
      case GgufType::kInt32:
        DI_RETURN_IF_ERROR((ReadScalar<int32_t>(where, &i)));
        v->value = i;
        break;
      case GgufType::kInt64:
        DI_RETURN_IF_ERROR((ReadScalar<int64_t>(where, &i)));
        v->value = i;
        break;
      case GgufType::kFloat32:
        DI_RETURN_IF_ERROR((ReadScalar<float>(where, &f)));
        v->value = f;
        break;
      case GgufType::kFloat64:
        DI_RETURN_IF_ERROR((ReadScalar<double>(where, &f)));
        v->value = f;
        break;
      case GgufType::kBool: {
        uint8_t b = 0;
        if (!in_.Read(&b)) return Truncated(where);
        v->value = b != 0;
        break;
      }
      case GgufType::kString: {
        std::string s;
        DI_RETURN_IF_ERROR(ReadString(where, &s));
        v->value = std::move(s);
        break;
      }
      default:
        return Fail(where, "unexpected value type");
    }
    return Status::Ok();
  }

  template <typename Elem>
  Status ReadArrayOf(const std::string& where, GgufType t, uint64_t count, GgufValue* v) {
    std::vector<Elem> out;
    out.reserve(static_cast<size_t>(count));  // count already bounded by the file size
    GgufValue elem;
    for (uint64_t k = 0; k < count; ++k) {
      // `where` gets the element index only on failure: vocab arrays hold 1e5+ strings.
      Status st = ReadScalarValue(where, t, &elem);
      if (!st.ok()) return Status(st.code(), st.message() + " (array element " + std::to_string(k) + ")");
      out.push_back(std::get<Elem>(std::move(elem.value)));
    }
    v->value = std::move(out);
    return Status::Ok();
  }

  Status ReadArray(const std::string& where, GgufValue* v) {
    uint32_t et = 0;
    uint64_t count = 0;
    if (!in_.Read(&et)) return Truncated(where + " array type");
    if (!IsValidType(et)) return Fail(where, "unknown array element type " + std::to_string(et));
    if (et == static_cast<uint32_t>(GgufType::kArray)) return Fail(where, "nested arrays are not supported");
    if (!in_.Read(&count)) return Truncated(where + " array length");
    const GgufType t = static_cast<GgufType>(et);
    // Strings take >= 8 bytes each (their length field). Division, not
    // multiplication, so a huge count cannot overflow the check.
    const size_t min_elem = t == GgufType::kString ? 8 : ScalarSize(t);
    if (count > in_.remaining() / min_elem) {
      return Fail(where, "array of " + std::to_string(count) + " elements runs past end of file");
    }
    v->array_type = t;
    switch (t) {
      case GgufType::kUint8:
      case GgufType::kUint16:
      case GgufType::kUint32:
      case GgufType::kUint64:
        return ReadArrayOf<uint64_t>(where, t, count, v);
      case GgufType::kInt8:
      case GgufType::kInt16:
      case GgufType::kInt32:
      case GgufType::kInt64:
        return ReadArrayOf<int64_t>(where, t, count, v);
      case GgufType::kFloat32:
      case GgufType::kFloat64:
        return ReadArrayOf<double>(where, t, count, v);
      case GgufType::kBool:
        return ReadArrayOf<bool>(where, t, count, v);
      case GgufType::kString:
        return ReadArrayOf<std::string>(where, t, count, v);
      default:
        return Fail(where, "unexpected array type");
    }
  }

  Status ParseKeyValue(uint64_t index) {
    std::string where = "metadata key #" + std::to_string(index);
    std::string key;
    DI_RETURN_IF_ERROR(ReadString(where, &key));
    where += " ('" + key + "')";
    uint32_t type = 0;
    if (!in_.Read(&type)) return Truncated(where + " type");
    if (!IsValidType(type)) return Fail(where, "unknown value type " + std::to_string(type));
    GgufValue v;
    v.type = static_cast<GgufType>(type);
    if (v.type == GgufType::kArray) {
      DI_RETURN_IF_ERROR(ReadArray(where, &v));
    } else {
      DI_RETURN_IF_ERROR(ReadScalarValue(where, v.type, &v));
    }
    if (!file_->metadata_.emplace(key, std::move(v)).second) return Fail(where, "duplicate key");
    return Status::Ok();
  }

  Status ReadAlignment() {
    const GgufValue* v = file_->Find("general.alignment");
    if (v == nullptr) return Status::Ok();
    if (v->type != GgufType::kUint32) return Fail("general.alignment", "must be a uint32");
    const uint64_t a = std::get<uint64_t>(v->value);
    if (a == 0 || (a & (a - 1)) != 0) {
      return Fail("general.alignment", std::to_string(a) + " is not a power of two");
    }
    file_->alignment_ = a;
    return Status::Ok();
  }

  Status ParseTensorInfo(uint64_t index) {
    std::string where = "tensor #" + std::to_string(index);
    TensorView t;
    DI_RETURN_IF_ERROR(ReadString(where + " name", &t.name));
    where += " ('" + t.name + "')";
    uint32_t n_dims = 0;
    if (!in_.Read(&n_dims)) return Truncated(where + " rank");
    if (n_dims > kMaxDims) return Fail(where, "rank " + std::to_string(n_dims) + " exceeds 4");
    std::vector<int64_t> ne(n_dims);
    int64_t elems = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t dim = 0;
      if (!in_.Read(&dim)) return Truncated(where + " dims");
      if (dim == 0 || dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Fail(where, "dimension " + std::to_string(d) + " is " + std::to_string(dim));
      }
      ne[d] = static_cast<int64_t>(dim);
      if (elems > std::numeric_limits<int64_t>::max() / ne[d]) return Fail(where, "element count overflows");
      elems *= ne[d];
    }
    uint32_t ggml_type = 0;
    uint64_t offset = 0;
    if (!in_.Read(&ggml_type)) return Truncated(where + " type");
    if (!in_.Read(&offset)) return Truncated(where + " offset");
    const auto dtype = DTypeFromGgmlType(ggml_type);
    if (!dtype) {
      const char* known = GgmlTypeName(ggml_type);
      if (known != nullptr) {
        return Unimplemented(name_ + ": " + where + ": ggml type " + known + " is not supported");
      }
      return Fail(where, "unknown ggml type " + std::to_string(ggml_type));
    }
    t.dtype = *dtype;
    const int64_t row = n_dims == 0 ? 1 : ne[0];
    const int64_t row_bytes = RowBytes(t.dtype, row);
    if (row % BlockElems(t.dtype) != 0) {
      return Fail(where, "row of " + std::to_string(row) + " is not a whole number of " + DTypeName(t.dtype) +
                             " blocks");
    }
    if (row_bytes < 0) return Fail(where, "byte size overflows");
    const int64_t rows = elems / row;
    if (row_bytes != 0 && rows > std::numeric_limits<int64_t>::max() / row_bytes) {
      return Fail(where, "byte size overflows");
    }
    t.nbytes = row_bytes * rows;
    if (offset % file_->alignment_ != 0) {
      return Fail(where, "offset " + std::to_string(offset) + " is not a multiple of the alignment " +
                             std::to_string(file_->alignment_));
    }
    t.shape.assign(ne.rbegin(), ne.rend());  // GGUF is innermost-first; views are outermost-first
    if (!file_->tensor_index_.emplace(t.name, file_->tensors_.size()).second) {
      return Fail(where, "duplicate tensor name");
    }
    offsets_.push_back(offset);
    file_->tensors_.push_back(std::move(t));
    return Status::Ok();
  }

  Status PlaceTensorData() {
    if (file_->tensors_.empty()) return Status::Ok();  // vocab-only files may end right here
    const uint64_t a = file_->alignment_;
    const uint64_t data_start = (in_.pos() + a - 1) / a * a;  // pos <= size, so no overflow for sane a
    if (data_start > size_) return Fail("data section", "starts past end of file");
    const uint64_t data_size = size_ - data_start;
    for (size_t i = 0; i < file_->tensors_.size(); ++i) {
      TensorView& t = file_->tensors_[i];
      const uint64_t off = offsets_[i], n = static_cast<uint64_t>(t.nbytes);
      if (off > data_size || n > data_size - off) {
        return Fail("tensor '" + t.name + "'", "data [" + std::to_string(off) + ", +" + std::to_string(n) +
                                                   ") runs past end of file (data section is " +
                                                   std::to_string(data_size) + " bytes)");
      }
      t.data = data_ + data_start + off;
    }
    return Status::Ok();
  }

  const uint8_t* data_;
  size_t size_;
  ByteReader in_;
  std::string name_;
  std::unique_ptr<GgufFile> file_;
  uint64_t n_tensors_ = 0, n_kv_ = 0;
  std::vector<uint64_t> offsets_;
};

StatusOr<std::unique_ptr<GgufFile>> GgufFile::Parse(const void* data, size_t size, const std::string& name) {
  static const uint8_t kEmpty = 0;
  return GgufParser(data != nullptr ? static_cast<const uint8_t*>(data) : &kEmpty, size, name).Run();
}

StatusOr<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  DI_ASSIGN_OR_RETURN(auto mapped, MappedFile::Open(path));
  DI_ASSIGN_OR_RETURN(auto file, Parse(mapped->data(), mapped->size(), path));
  file->file_ = std::move(mapped);
  return file;
}

GgufFile::~GgufFile() = default;

const TensorView* GgufFile::FindTensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace deepinfer
