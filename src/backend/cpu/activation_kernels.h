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

// gate[i] = gelu_tanh(gate[i]) * up[i], the tanh approximation of GELU
// (GeGLU, Gemma): gelu_tanh(g) = 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))),
// evaluated in f32 with std::tanh. Portable only: Gemma's MLP spends its time
// in the matmuls, not here (activation_gelu.cc).
void GeluTanhMul(float* gate, const float* up, int64_t n);

// x[i] = cap * tanh(x[i] / cap) (cap > 0): Gemma-2's soft-capping of the
// attention scores and the final logits.
void SoftCap(float* x, int64_t n, float cap);

// x[i] = exp(x[i] - max) / sum_j exp(x[j] - max), in place (n >= 1): f32
// exp, the sum in double in index order, then one f32 multiply by
// float(1 / sum). One portable implementation on every ISA (its callers,
// MoE routing over a few dozen experts, are not worth a SIMD copy whose
// bits would differ).
void Softmax(float* x, int64_t n);

// sum_i exp(x[i] - shift) over n >= 0 values, in f32 (relative error about
// 1e-6; exp(-inf) = 0): the normalizer of a softmax whose probabilities only
// steer a decision and never reach an output (a draft's confidence over a
// whole vocabulary, which in double with std::exp cost more than the draft).
// A fixed summation order per ISA, so the same row gives the same bits.
float SumExp(const float* x, int64_t n, float shift);  // active ISA
float SumExpScalar(const float* x, int64_t n, float shift);
float SumExpAvx512(const float* x, int64_t n, float shift);

}  // namespace deepinfer::cpu
