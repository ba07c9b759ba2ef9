#include "backend/cpu/dot.h"

namespace deepinfer::cpu {

namespace {
constexpr int kDotLanes = 16;
}  // namespace

float Dot(const float* a, const float* b, int64_t n) {
  float acc[kDotLanes] = {};
  int64_t i = 0;
  for (; i + kDotLanes <= n; i += kDotLanes) {
    for (int l = 0; l < kDotLanes; ++l) {
      acc[l] += a[i + l] * b[i + l];
    }
  }
  // Pairwise combine: 16 -> 8 -> 4 -> 2 -> 1.
  for (int width = kDotLanes / 2; width >= 1; width /= 2) {
    for (int l = 0; l < width; ++l) {
      acc[l] += acc[l + width];
    }
  }
  float tail = 0.0f;
  for (; i < n; ++i) {
    tail += a[i] * b[i];
  }
  return acc[0] + tail;
}

}  // namespace deepinfer::cpu
