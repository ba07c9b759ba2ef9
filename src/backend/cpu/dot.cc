#include "backend/cpu/dot.h"

#include <cmath>

#include "backend/cpu/isa.h"

namespace deepinfer::cpu {

namespace {
constexpr int kDotLanes = 16;
}  // namespace

float DotScalar(const float* a, const float* b, int64_t n) {
  float acc[kDotLanes] = {};
  int64_t i = 0;
  for (; i + kDotLanes <= n; i += kDotLanes) {
    for (int l = 0; l < kDotLanes; ++l) {
      acc[l] = std::fma(a[i + l], b[i + l], acc[l]);
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
    tail = std::fma(a[i], b[i], tail);
  }
  return acc[0] + tail;
}

void AddScaledScalar(float* y, float a, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::fma(a, x[i], y[i]);
}

float Dot(const float* a, const float* b, int64_t n) {
  static const Isa isa = ActiveIsa();
  if (isa == Isa::kAvx512) return DotAvx512(a, b, n);
  if (isa == Isa::kAvx2) return DotAvx2(a, b, n);
  return DotScalar(a, b, n);
}

void AddScaled(float* y, float a, const float* x, int64_t n) {
  static const Isa isa = ActiveIsa();
  if (isa == Isa::kAvx512) return AddScaledAvx512(y, a, x, n);
  if (isa == Isa::kAvx2) return AddScaledAvx2(y, a, x, n);
  AddScaledScalar(y, a, x, n);
}

void DotRows(const float* a, const float* const* rows, int64_t count, int64_t n, float* out) {
  static const Isa isa = ActiveIsa();
  if (isa == Isa::kAvx512) return DotRowsAvx512(a, rows, count, n, out);
  if (isa == Isa::kAvx2) return DotRowsAvx2(a, rows, count, n, out);
  for (int64_t j = 0; j < count; ++j) out[j] = DotScalar(a, rows[j], n);
}

void AddScaledRows(float* y, const float* p, const float* const* rows, int64_t count, int64_t n) {
  static const Isa isa = ActiveIsa();
  if (isa == Isa::kAvx512) return AddScaledRowsAvx512(y, p, rows, count, n);
  if (isa == Isa::kAvx2) return AddScaledRowsAvx2(y, p, rows, count, n);
  for (int64_t j = 0; j < count; ++j) AddScaledScalar(y, p[j], rows[j], n);
}

void DotRowsBlockScalar(const float* const* a, int64_t num_a, const float* const* rows, int64_t count,
                        int64_t n, float* out, int64_t out_stride) {
  for (int64_t h = 0; h < num_a; ++h) {
    for (int64_t j = 0; j < count; ++j) out[h * out_stride + j] = DotScalar(a[h], rows[j], n);
  }
}

void AddScaledRowsBlockScalar(float* const* y, const float* p, int64_t p_stride, int64_t num_y,
                              const float* const* rows, int64_t count, int64_t n) {
  for (int64_t h = 0; h < num_y; ++h) {
    for (int64_t j = 0; j < count; ++j) AddScaledScalar(y[h], p[h * p_stride + j], rows[j], n);
  }
}

void DotRowsBlock(const float* const* a, int64_t num_a, const float* const* rows, int64_t count, int64_t n,
                  float* out, int64_t out_stride) {
  static const Isa isa = ActiveIsa();
  if (isa == Isa::kAvx512) return DotRowsBlockAvx512(a, num_a, rows, count, n, out, out_stride);
  if (isa == Isa::kAvx2) return DotRowsBlockAvx2(a, num_a, rows, count, n, out, out_stride);
  DotRowsBlockScalar(a, num_a, rows, count, n, out, out_stride);
}

void AddScaledRowsBlock(float* const* y, const float* p, int64_t p_stride, int64_t num_y,
                        const float* const* rows, int64_t count, int64_t n) {
  static const Isa isa = ActiveIsa();
  if (isa == Isa::kAvx512) return AddScaledRowsBlockAvx512(y, p, p_stride, num_y, rows, count, n);
  if (isa == Isa::kAvx2) return AddScaledRowsBlockAvx2(y, p, p_stride, num_y, rows, count, n);
  AddScaledRowsBlockScalar(y, p, p_stride, num_y, rows, count, n);
}

}  // namespace deepinfer::cpu
