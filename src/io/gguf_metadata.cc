// GgufFile's typed metadata getters.
#include <limits>

#include "io/gguf.h"

namespace deepinfer {
namespace {

const char* TypeName(GgufType t) {
  static const char* const kNames[] = {"uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
                                       "bool",  "string", "array",  "uint64", "int64",  "float64"};
  const auto i = static_cast<size_t>(t);
  return i < std::size(kNames) ? kNames[i] : "?";
}

Status Mismatch(const std::string& path, const std::string& key, const GgufValue& v, const char* want) {
  std::string have = TypeName(v.type);
  if (v.type == GgufType::kArray) have += std::string(" of ") + TypeName(v.array_type);
  return InvalidArgument(path + ": metadata '" + key + "' is " + have + ", expected " + want);
}

}  // namespace

const GgufValue* GgufFile::Find(const std::string& key) const {
  auto it = metadata_.find(key);
  return it == metadata_.end() ? nullptr : &it->second;
}

// `v` is the name being declared: it cannot be parenthesized.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define DI_FIND_OR_NOT_FOUND(v, key) \
  const GgufValue* v = Find(key);    \
  if (v == nullptr) return NotFound(path_ + ": metadata key '" + key + "' not found")
// NOLINTEND(bugprone-macro-parentheses)

StatusOr<std::string> GgufFile::GetString(const std::string& key) const {
  DI_FIND_OR_NOT_FOUND(v, key);
  if (v->type != GgufType::kString) return Mismatch(path_, key, *v, "string");
  return std::get<std::string>(v->value);
}

StatusOr<int64_t> GgufFile::GetInt(const std::string& key) const {
  DI_FIND_OR_NOT_FOUND(v, key);
  if (const auto* i = std::get_if<int64_t>(&v->value)) return *i;
  if (const auto* u = std::get_if<uint64_t>(&v->value)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return InvalidArgument(path_ + ": metadata '" + key + "' value " + std::to_string(*u) +
                             " overflows int64");
    }
    return static_cast<int64_t>(*u);
  }
  return Mismatch(path_, key, *v, "an integer");
}

StatusOr<double> GgufFile::GetFloat(const std::string& key) const {
  DI_FIND_OR_NOT_FOUND(v, key);
  if (const auto* d = std::get_if<double>(&v->value)) return *d;
  if (const auto* i = std::get_if<int64_t>(&v->value)) return static_cast<double>(*i);
  if (const auto* u = std::get_if<uint64_t>(&v->value)) return static_cast<double>(*u);
  return Mismatch(path_, key, *v, "a number");
}

StatusOr<bool> GgufFile::GetBool(const std::string& key) const {
  DI_FIND_OR_NOT_FOUND(v, key);
  if (v->type != GgufType::kBool) return Mismatch(path_, key, *v, "bool");
  return std::get<bool>(v->value);
}

StatusOr<std::vector<std::string>> GgufFile::GetStringArray(const std::string& key) const {
  DI_FIND_OR_NOT_FOUND(v, key);
  if (const auto* a = std::get_if<std::vector<std::string>>(&v->value)) return *a;
  return Mismatch(path_, key, *v, "array of string");
}

StatusOr<std::vector<double>> GgufFile::GetFloatArray(const std::string& key) const {
  DI_FIND_OR_NOT_FOUND(v, key);
  if (const auto* a = std::get_if<std::vector<double>>(&v->value)) return *a;
  if (const auto* a = std::get_if<std::vector<int64_t>>(&v->value)) {
    return std::vector<double>(a->begin(), a->end());
  }
  if (const auto* a = std::get_if<std::vector<uint64_t>>(&v->value)) {
    return std::vector<double>(a->begin(), a->end());
  }
  return Mismatch(path_, key, *v, "array of numbers");
}

StatusOr<std::vector<int64_t>> GgufFile::GetIntArray(const std::string& key) const {
  DI_FIND_OR_NOT_FOUND(v, key);
  if (const auto* a = std::get_if<std::vector<int64_t>>(&v->value)) return *a;
  if (const auto* a = std::get_if<std::vector<uint64_t>>(&v->value)) {
    std::vector<int64_t> out;
    out.reserve(a->size());
    for (uint64_t x : *a) {
      if (x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return InvalidArgument(path_ + ": metadata '" + key + "' has an element that overflows int64");
      }
      out.push_back(static_cast<int64_t>(x));
    }
    return out;
  }
  if (const auto* a = std::get_if<std::vector<bool>>(&v->value)) {
    return std::vector<int64_t>(a->begin(), a->end());
  }
  return Mismatch(path_, key, *v, "array of integers");
}

#undef DI_FIND_OR_NOT_FOUND

int64_t GgufFile::GetIntOr(const std::string& key, int64_t def) const {
  auto v = GetInt(key);
  return v.ok() ? *v : def;
}

double GgufFile::GetFloatOr(const std::string& key, double def) const {
  auto v = GetFloat(key);
  return v.ok() ? *v : def;
}

std::string GgufFile::GetStringOr(const std::string& key, const std::string& def) const {
  auto v = GetString(key);
  return v.ok() ? *v : def;
}

}  // namespace deepinfer
