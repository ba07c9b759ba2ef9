#include <immintrin.h>

#include <cstring>

#include "backend/cpu/f16_convert.h"
#include "backend/cpu/simd_avx512.h"

namespace deepinfer::cpu {

void F32ToF16StridedAvx512(const float* src, uint8_t* dst, int64_t n, int64_t stride) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = TailMask(n - i);
    const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, src + i), _MM_FROUND_TO_NEAREST_INT);
    if (stride == 1) {
      _mm256_mask_storeu_epi16(dst + 2 * i, m, h);
      continue;
    }
    alignas(32) uint16_t lanes[16];  // a dim-major K row: one element per 16-bit slot, stride apart
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), h);
    for (int64_t j = 0; j < 16 && i + j < n; ++j) std::memcpy(dst + 2 * (i + j) * stride, lanes + j, 2);
  }
}

}  // namespace deepinfer::cpu
