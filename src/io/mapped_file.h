// A read-only memory mapping of a whole file (RAII).
//
// Ownership: the mapping lives as long as the MappedFile; views into data()
// must not outlive it. Thread-safety: immutable after Open; share freely.
// Errors: NotFound when the file cannot be opened, InvalidArgument when the
// path is not a regular file, Internal when mmap fails. Messages name the path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace deepinfer {

class MappedFile {
 public:
  static StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  // nullptr when size() == 0 (an empty file is mapped as nothing).
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  MappedFile() = default;
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace deepinfer
