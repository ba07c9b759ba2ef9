// The GeGLU gate (tanh-approximated GELU) and soft-capping (activation_kernels.h).
#include <cmath>

#include "backend/cpu/activation_kernels.h"

namespace deepinfer::cpu {

void GeluTanhMul(float* gate, const float* up, int64_t n) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = 0.5f * g * (1.0f + std::tanh(k * (g + 0.044715f * g * g * g))) * up[i];
  }
}

void SoftCap(float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] / cap);
}

}  // namespace deepinfer::cpu
