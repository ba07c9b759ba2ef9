#include "backend/cpu/isa.h"
#include "backend/cpu/rope_kernel.h"

namespace deepinfer::cpu {

void RopeRotateScalar(float* x, int64_t n_heads, int64_t head_dim, const RopeRotation& r) {
  const int64_t stride = r.interleaved ? 2 : 1;
  const int64_t partner = r.interleaved ? 1 : r.half;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* head = x + h * head_dim;
    for (int64_t i = 0; i < r.half; ++i) {
      float* a = head + i * stride;
      float* b = a + partner;
      const float c = r.cos[i], s = r.sin[i];
      const float x0 = *a, x1 = *b;
      *a = x0 * c - x1 * s;
      *b = x0 * s + x1 * c;
    }
  }
}

void RopeRotate(float* x, int64_t n_heads, int64_t head_dim, const RopeRotation& r) {
  static const bool avx512 = ActiveIsa() == Isa::kAvx512;
  if (avx512) {
    RopeRotateAvx512(x, n_heads, head_dim, r);
  } else {
    RopeRotateScalar(x, n_heads, head_dim, r);
  }
}

}  // namespace deepinfer::cpu
