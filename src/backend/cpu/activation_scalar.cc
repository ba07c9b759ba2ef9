#include <algorithm>
#include <cmath>

#include "backend/cpu/activation_kernels.h"
#include "backend/cpu/isa.h"

namespace deepinfer::cpu {

namespace {
bool UseAvx512() {
  static const bool avx512 = ActiveIsa() == Isa::kAvx512;
  return avx512;
}
}  // namespace

void SiluMulScalar(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void Softmax(float* x, int64_t n) {
  const float m = *std::max_element(x, x + n);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - m);
    sum += x[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

float SumExpScalar(const float* x, int64_t n, float shift) {
  double sum = 0.0;  // a float running sum drifts by 1e-5 over a 128k vocabulary
  for (int64_t i = 0; i < n; ++i) sum += std::exp(x[i] - shift);
  return static_cast<float>(sum);
}

float SumExp(const float* x, int64_t n, float shift) {
  return UseAvx512() ? SumExpAvx512(x, n, shift) : SumExpScalar(x, n, shift);
}

void SiluMul(float* gate, const float* up, int64_t n) {
  if (UseAvx512()) {
    SiluMulAvx512(gate, up, n);
  } else {
    SiluMulScalar(gate, up, n);
  }
}

}  // namespace deepinfer::cpu
