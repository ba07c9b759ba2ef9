#include "backend/cpu/f16_convert.h"

#include <cstring>

#include "backend/cpu/isa.h"
#include "tensor/dequant.h"

namespace deepinfer::cpu {

void F32ToF16StridedScalar(const float* src, uint8_t* dst, int64_t n, int64_t stride) {
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = F32ToF16(src[i]);
    std::memcpy(dst + 2 * i * stride, &h, sizeof(h));
  }
}

void F32ToF16Strided(const float* src, uint8_t* dst, int64_t n, int64_t stride) {
  static const bool avx512 = ActiveIsa() == Isa::kAvx512;
  if (avx512) {
    F32ToF16StridedAvx512(src, dst, n, stride);
  } else {
    F32ToF16StridedScalar(src, dst, n, stride);
  }
}

}  // namespace deepinfer::cpu
