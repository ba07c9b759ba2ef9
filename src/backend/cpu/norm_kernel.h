// RMSNorm of one row: out[i] = x[i] * (1 / sqrt(mean(x^2) + eps)) * weight[i].
// The mean of squares is accumulated in double in an order fixed by n alone
// (per ISA), so a row's result never depends on the batch. out may alias x.
// Thread-safety: pure.
#pragma once

#include <cstdint>

namespace deepinfer::cpu {

void RmsNorm(const float* x, const float* weight, int64_t n, double eps, float* out);  // active ISA
void RmsNormScalar(const float* x, const float* weight, int64_t n, double eps, float* out);
void RmsNormAvx512(const float* x, const float* weight, int64_t n, double eps, float* out);

}  // namespace deepinfer::cpu
