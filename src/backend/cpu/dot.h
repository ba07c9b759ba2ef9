// The f32 dot product of the model's small reductions (MLA's latent
// scores, norms of short vectors): a fixed summation order so a result
// depends only on the inputs and n, never on the batch or the thread split.
// Thread-safety: pure.
#pragma once

#include <cstdint>

namespace deepinfer::cpu {

// sum_i a[i] * b[i]: 16 strided partial sums (lane l takes i = l mod 16),
// combined pairwise, plus the tail in index order. Depends only on n.
float Dot(const float* a, const float* b, int64_t n);

}  // namespace deepinfer::cpu
