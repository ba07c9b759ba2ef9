// The f32 dot product of the model's small reductions (MLA's latent
// scores, norms of short vectors): a fixed summation order so a result
// depends only on the inputs and n, never on the batch or the thread split
// - nor on the ISA level: the AVX-512 versions give the scalar bits.
// Thread-safety: pure.
#pragma once

#include <cstdint>

namespace deepinfer::cpu {

// sum_i a[i] * b[i]: 16 strided partial sums (lane l takes i = l mod 16;
// each product rounded, then added), combined pairwise (l += l + 8, + 4, + 2,
// + 1), plus the tail in index order. Depends only on n.
float Dot(const float* a, const float* b, int64_t n);  // active ISA
float DotScalar(const float* a, const float* b, int64_t n);
float DotAvx512(const float* a, const float* b, int64_t n);

// y[i] += a * x[i] (the product rounded, then added: no fma), i < n.
void AddScaled(float* y, float a, const float* x, int64_t n);  // active ISA
void AddScaledScalar(float* y, float a, const float* x, int64_t n);
void AddScaledAvx512(float* y, float a, const float* x, int64_t n);

// out[j] = Dot(a, rows[j], n) for j < count (the same bits; several rows at
// a time so the additions do not wait on one chain).
void DotRows(const float* a, const float* const* rows, int64_t count, int64_t n, float* out);  // active ISA
void DotRowsAvx512(const float* a, const float* const* rows, int64_t count, int64_t n, float* out);

// For j = 0 .. count - 1 in order: y[i] += p[j] * rows[j][i] (AddScaled of
// each row in turn: the same bits), i < n.
void AddScaledRows(float* y, const float* p, const float* const* rows, int64_t count,
                   int64_t n);  // active ISA
void AddScaledRowsAvx512(float* y, const float* p, const float* const* rows, int64_t count, int64_t n);

}  // namespace deepinfer::cpu
