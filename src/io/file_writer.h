// Writes a file atomically: bytes go to PATH.tmp, Commit() flushes and
// renames it over PATH. Destroying an uncommitted writer removes PATH.tmp.
// Errors are Internal and name the path. Not thread-safe.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "core/status.h"

namespace deepinfer {

class FileWriter {
 public:
  explicit FileWriter(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp") {}
  ~FileWriter();
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  Status Open();
  Status Write(const void* data, size_t n);
  Status WriteZeros(size_t n);
  uint64_t written() const { return written_; }
  Status Commit();

 private:
  std::string path_, tmp_;
  FILE* f_ = nullptr;
  uint64_t written_ = 0;
};

}  // namespace deepinfer
