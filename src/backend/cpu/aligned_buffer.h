// A growable array with 64-byte aligned storage (one cache line / one zmm),
// used for per-call scratch that SIMD kernels load with aligned loads.
// Resize never preserves contents. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

namespace deepinfer::cpu {

template <class T>
class AlignedBuffer {
 public:
  static constexpr size_t kAlignment = 64;

  AlignedBuffer() = default;
  ~AlignedBuffer() { std::free(data_); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  // Makes room for n elements (contents unspecified).
  void Resize(size_t n) {
    if (n > capacity_) {
      std::free(data_);
      const size_t bytes = (n * sizeof(T) + kAlignment - 1) / kAlignment * kAlignment;
      data_ = static_cast<T*>(std::aligned_alloc(kAlignment, bytes));
      if (data_ == nullptr) throw std::bad_alloc();
      capacity_ = n;
    }
    size_ = n;
  }
  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0, capacity_ = 0;
};

}  // namespace deepinfer::cpu
