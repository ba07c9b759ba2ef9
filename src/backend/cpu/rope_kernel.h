// The rotation step of rotary position embedding, for every head of a token.
// Pair i of a head is (x[i], x[i + half]) in the NeoX pairing and
// (x[2i], x[2i+1]) when interleaved; it is rotated by angle_i:
//   a' = a cos - b sin,   b' = a sin + b cos.
// The caller computes cos/sin (per position; model/rope.h does it in double).
// Only the first 2 * half dims of each head rotate. Thread-safety: pure.
#pragma once

#include <cstdint>

namespace deepinfer::cpu {

struct RopeRotation {
  const float* cos = nullptr;  // [half]
  const float* sin = nullptr;  // [half]
  int64_t half = 0;
  bool interleaved = false;
};

// x: n_heads heads of head_dim floats each, rotated in place.
void RopeRotate(float* x, int64_t n_heads, int64_t head_dim, const RopeRotation& r);  // active ISA
void RopeRotateScalar(float* x, int64_t n_heads, int64_t head_dim, const RopeRotation& r);
void RopeRotateAvx512(float* x, int64_t n_heads, int64_t head_dim, const RopeRotation& r);

}  // namespace deepinfer::cpu
