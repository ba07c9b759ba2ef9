// A bounds-checked little-endian cursor over a byte range, for parsing
// untrusted files. Every read either succeeds completely or returns false
// and leaves the cursor unchanged; nothing reads past the end.
// Not thread-safe (it is a cursor); the bytes are not owned.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace deepinfer {

static_assert(std::endian::native == std::endian::little,
              "file readers assume a little-endian host (as GGUF and safetensors data are)");

class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }

  template <typename T>
  bool Read(T* out) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (remaining() < sizeof(T)) return false;
    std::memcpy(out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }

  // Points *out at the next n bytes (no copy).
  bool ReadBytes(uint64_t n, const uint8_t** out) {
    if (n > remaining()) return false;
    *out = data_ + pos_;
    pos_ += static_cast<size_t>(n);
    return true;
  }

  bool ReadString(uint64_t n, std::string* out) {
    const uint8_t* p;
    if (!ReadBytes(n, &p)) return false;
    out->assign(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
    return true;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace deepinfer
