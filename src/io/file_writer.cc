#include "io/file_writer.h"

#include <cerrno>
#include <cstring>

namespace deepinfer {

FileWriter::~FileWriter() {
  if (f_ != nullptr) {
    std::fclose(f_);
    std::remove(tmp_.c_str());
  }
}

Status FileWriter::Open() {
  f_ = std::fopen(tmp_.c_str(), "wb");
  if (f_ == nullptr) return Internal(path_ + ": cannot create " + tmp_ + ": " + std::strerror(errno));
  return Status::Ok();
}

Status FileWriter::Write(const void* data, size_t n) {
  if (n == 0) return Status::Ok();
  if (std::fwrite(data, 1, n, f_) != n) return Internal(path_ + ": write failed: " + std::strerror(errno));
  written_ += n;
  return Status::Ok();
}

Status FileWriter::WriteZeros(size_t n) {
  static const char kZeros[64] = {};
  while (n > 0) {
    const size_t k = n < sizeof(kZeros) ? n : sizeof(kZeros);
    DI_RETURN_IF_ERROR(Write(kZeros, k));
    n -= k;
  }
  return Status::Ok();
}

Status FileWriter::Commit() {
  const bool flushed = std::fflush(f_) == 0;
  const int err = errno;
  const bool closed = std::fclose(f_) == 0;
  f_ = nullptr;
  if (!flushed || !closed) {
    std::remove(tmp_.c_str());
    return Internal(path_ + ": write failed: " + std::strerror(err));
  }
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp_.c_str());
    return Internal(path_ + ": rename from " + tmp_ + " failed: " + std::strerror(e));
  }
  return Status::Ok();
}

}  // namespace deepinfer
