// Dot products of weight rows with one f32 vector, the weights' values taken
// exactly as stored (no rounding of x, unlike MatMul's int8 activations): the
// per-head absorbed MLA projections, whose result the naive (expanded) form
// must match to f32 rounding.
//
// Order, the same at every ISA level (so the AVX-512 and scalar results are
// bit-identical): 16 lane sums acc[l], then combined pairwise 16 -> 8 -> 4
// -> 2 -> 1 (acc[l] += acc[l + w] for w = 8, 4, 2, 1).
//   - Q8_0 / Q4_0, per 32-block b with scale d and integer values q[0..32):
//     s = fma(q[l + 16], x[l + 16], q[l] * x[l]);  acc[l] = fma(d, s, acc[l])
//   - F32, per 16 elements i = 16c + l: acc[l] = fma(w[i], x[i], acc[l]);
//     a tail of k mod 16 elements goes to lanes 0.. in index order.
//   - any other type DequantizeRow accepts: its row as f32 (exact), then F32.
// Thread-safety: pure (the fallback uses a thread-local row).
#pragma once

#include <cstdint>

#include "backend/cpu/isa.h"
#include "tensor/dtype.h"

namespace deepinfer::cpu {

// y[r] = sum_i W[r][i] * x[i] for r < rows: W's rows of `dtype`, `row_bytes`
// apart from w, each of k elements (Q8_0 / Q4_0: k a multiple of 32); x f32 [k].
// F32 rows are read as floats: w and row_bytes multiples of 4 (as in every
// checkpoint; the other types are read bytewise).
void RowsDotF32(DType dtype, const uint8_t* w, int64_t row_bytes, int64_t rows, int64_t k, const float* x,
                float* y);  // active ISA
// The same rows against several vectors (MLA: one head's up-projection for
// every token of a prefill): ys[t][r] = RowsDotF32(..., xs[t], ...)'s y[r]
// for t < num_x, the same bits whatever num_x; each weight block is read and
// decoded once per block of vectors instead of once per vector.
void RowsDotF32Multi(DType dtype, const uint8_t* w, int64_t row_bytes, int64_t rows, int64_t k,
                     const float* const* xs, int64_t num_x, float* const* ys);  // active ISA
// Q8_0 / Q4_0 only (the other types loop over the vectors).
void RowsDotF32MultiAvx512(DType dtype, const uint8_t* w, int64_t row_bytes, int64_t rows, int64_t k,
                           const float* const* xs, int64_t num_x, float* const* ys);
void RowsDotF32WithIsa(Isa isa, DType dtype, const uint8_t* w, int64_t row_bytes, int64_t rows, int64_t k,
                       const float* x, float* y);

// out[0..n) = the row's values as f32, the same bits as DequantizeRow (a
// conversion without rounding for F16 / BF16, vectorized at AVX-512; other
// types go through DequantizeRow; an f16 NaN's payload may come back
// quieted): the latent cache rows MLA attends over.
void RowToF32(DType dtype, const uint8_t* row, int64_t n, float* out);            // active ISA
void HalfRowToF32Avx512(DType dtype, const uint8_t* row, int64_t n, float* out);  // F16 / BF16 only

// The ISA levels' kernels (AVX-512 only reached after a CPUID check).
void RowsDotF32Scalar(DType dtype, const uint8_t* w, int64_t row_bytes, int64_t rows, int64_t k,
                      const float* x, float* y);
void RowsDotF32Avx512(DType dtype, const uint8_t* w, int64_t row_bytes, int64_t rows, int64_t k,
                      const float* x, float* y);

}  // namespace deepinfer::cpu
