// AVX-512 RowToF32 (row_to_f32.h) for F16 / BF16 rows.
#include <immintrin.h>

#include "backend/cpu/row_to_f32.h"
#include "backend/cpu/simd_avx512.h"
#include "core/check.h"

namespace deepinfer::cpu {

void HalfRowToF32Avx512(DType dtype, const uint8_t* row, int64_t n, float* out) {
  DI_CHECK(dtype == DType::kF16 || dtype == DType::kBF16);
  const bool f16 = dtype == DType::kF16;
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = TailMask(n - i);
    _mm512_mask_storeu_ps(out + i, m, f16 ? LoadF16AsF32(row + 2 * i, m) : LoadBf16AsF32(row + 2 * i, m));
  }
}

}  // namespace deepinfer::cpu
