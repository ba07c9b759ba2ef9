// Speculative rejection sampling (Leviathan et al. / Chen et al. 2023): a
// draft token d drawn from the draft's distribution q is kept with
// probability min(1, p(d) / q(d)) under the target's p; a rejected one is
// replaced by a draw from the residual max(0, p - q), normalized. The kept
// or replaced token is distributed exactly as a draw from p, whatever q is.
//
// The uniforms come from the caller (the engine keys them by seed, position
// and a draw stream of their own, so a request's speculative output is
// reproducible), which keeps these functions pure.
#pragma once

#include <cstdint>

namespace deepinfer {

// Whether draft d is kept: u < p_d / q_d, with u uniform in [0, 1). q_d > 0
// for a token the draft sampled; q_d == 0 (which cannot be drawn) keeps it
// only if p_d > 0.
bool KeepDraft(float p_d, float q_d, double u);

// A token from the residual max(0, p - q) over [0, vocab), u uniform in
// [0, 1), by the cumulative sum in id order. When the residual is all zero
// (p == q up to rounding; then no draft is ever rejected by KeepDraft except
// through rounding) it draws from p instead.
int32_t SampleResidual(const float* p, const float* q, int64_t vocab, double u);

}  // namespace deepinfer
