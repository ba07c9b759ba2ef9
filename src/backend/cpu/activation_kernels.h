// Element-wise kernels of the MLP and the samplers/routers: the SiLU-gated
// product of SwiGLU and a numerically safe softmax. Each output element
// depends only on its own inputs (softmax: on its own row), so results never
// depend on the batch. Thread-safety: pure.
#pragma once

#include <cstdint>

namespace deepinfer::cpu {

// gate[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + exp(-g)).
void SiluMul(float* gate, const float* up, int64_t n);  // active ISA
void SiluMulScalar(float* gate, const float* up, int64_t n);
void SiluMulAvx512(float* gate, const float* up, int64_t n);

// x[i] = exp(x[i] - max) / sum_j exp(x[j] - max), in place (n >= 1): f32
// exp, the sum in double in index order, then one f32 multiply by
// float(1 / sum). One portable implementation on every ISA (its callers,
// MoE routing over a few dozen experts, are not worth a SIMD copy whose
// bits would differ).
void Softmax(float* x, int64_t n);

}  // namespace deepinfer::cpu
