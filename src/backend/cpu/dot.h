// The f32 dot product of the model's small reductions (MLA's latent
// scores, norms of short vectors): a fixed summation order so a result
// depends only on the inputs and n, never on the batch or the thread split
// - nor on the ISA level: the AVX-512 and AVX2 versions give the scalar bits.
// Every product is fused into its sum (one rounding, as fmaf): the SIMD
// levels run one fma per 16 lanes instead of a multiply and an add.
// Thread-safety: pure.
#pragma once

#include <cstdint>

namespace deepinfer::cpu {

// sum_i a[i] * b[i]: 16 strided partial sums (lane l takes i = l mod 16;
// acc = fma(a[i], b[i], acc)), combined pairwise (l += l + 8, + 4, + 2, + 1),
// plus the tail in index order (fma too). Depends only on n.
float Dot(const float* a, const float* b, int64_t n);  // active ISA
float DotScalar(const float* a, const float* b, int64_t n);
float DotAvx512(const float* a, const float* b, int64_t n);
float DotAvx2(const float* a, const float* b, int64_t n);

// y[i] = fma(a, x[i], y[i]), i < n.
void AddScaled(float* y, float a, const float* x, int64_t n);  // active ISA
void AddScaledScalar(float* y, float a, const float* x, int64_t n);
void AddScaledAvx512(float* y, float a, const float* x, int64_t n);
void AddScaledAvx2(float* y, float a, const float* x, int64_t n);

// out[j] = Dot(a, rows[j], n) for j < count (the same bits; several rows at
// a time so the additions do not wait on one chain).
void DotRows(const float* a, const float* const* rows, int64_t count, int64_t n, float* out);  // active ISA
void DotRowsAvx512(const float* a, const float* const* rows, int64_t count, int64_t n, float* out);
void DotRowsAvx2(const float* a, const float* const* rows, int64_t count, int64_t n, float* out);

// For j = 0 .. count - 1 in order: y[i] += p[j] * rows[j][i] (AddScaled of
// each row in turn: the same bits), i < n.
void AddScaledRows(float* y, const float* p, const float* const* rows, int64_t count,
                   int64_t n);  // active ISA
void AddScaledRowsAvx512(float* y, const float* p, const float* const* rows, int64_t count, int64_t n);
void AddScaledRowsAvx2(float* y, const float* p, const float* const* rows, int64_t count, int64_t n);

// Several query vectors against the same rows (MLA: all heads of a token
// read the same latent rows). out[h * out_stride + j] = Dot(a[h], rows[j],
// n) for h < num_a, j < count: each (h, j) keeps its own 16-lane chain, so
// the bits of one Dot call whatever num_a, count or the blocking; each row
// chunk is loaded once per block of a instead of once per a.
void DotRowsBlock(const float* const* a, int64_t num_a, const float* const* rows, int64_t count, int64_t n,
                  float* out, int64_t out_stride);  // active ISA
void DotRowsBlockScalar(const float* const* a, int64_t num_a, const float* const* rows, int64_t count,
                        int64_t n, float* out, int64_t out_stride);
void DotRowsBlockAvx512(const float* const* a, int64_t num_a, const float* const* rows, int64_t count,
                        int64_t n, float* out, int64_t out_stride);
void DotRowsBlockAvx2(const float* const* a, int64_t num_a, const float* const* rows, int64_t count,
                      int64_t n, float* out, int64_t out_stride);

// For h < num_y: AddScaledRows(y[h], p + h * p_stride, rows, count, n) - the
// same bits (each element of y[h] sees the rows in order) - with each row
// chunk loaded once per block of y.
void AddScaledRowsBlock(float* const* y, const float* p, int64_t p_stride, int64_t num_y,
                        const float* const* rows, int64_t count, int64_t n);  // active ISA
void AddScaledRowsBlockScalar(float* const* y, const float* p, int64_t p_stride, int64_t num_y,
                              const float* const* rows, int64_t count, int64_t n);
void AddScaledRowsBlockAvx512(float* const* y, const float* p, int64_t p_stride, int64_t num_y,
                              const float* const* rows, int64_t count, int64_t n);
void AddScaledRowsBlockAvx2(float* const* y, const float* p, int64_t p_stride, int64_t num_y,
                            const float* const* rows, int64_t count, int64_t n);

}  // namespace deepinfer::cpu
