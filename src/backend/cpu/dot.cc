#include "backend/cpu/dot.h"

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

void AddScaledScalar(float* y, float a, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

float Dot(const float* a, const float* b, int64_t n) {
  static const bool avx512 = ActiveIsa() == Isa::kAvx512;
  return avx512 ? DotAvx512(a, b, n) : DotScalar(a, b, n);
}

void AddScaled(float* y, float a, const float* x, int64_t n) {
  static const bool avx512 = ActiveIsa() == Isa::kAvx512;
  if (avx512) {
    AddScaledAvx512(y, a, x, n);
  } else {
    AddScaledScalar(y, a, x, n);
  }
}

void DotRows(const float* a, const float* const* rows, int64_t count, int64_t n, float* out) {
  static const bool avx512 = ActiveIsa() == Isa::kAvx512;
  if (avx512) {
    DotRowsAvx512(a, rows, count, n, out);
    return;
  }
  for (int64_t j = 0; j < count; ++j) out[j] = DotScalar(a, rows[j], n);
}

void AddScaledRows(float* y, const float* p, const float* const* rows, int64_t count, int64_t n) {
  static const bool avx512 = ActiveIsa() == Isa::kAvx512;
  if (avx512) {
    AddScaledRowsAvx512(y, p, rows, count, n);
    return;
  }
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
  static const bool avx512 = ActiveIsa() == Isa::kAvx512;
  if (avx512) {
    DotRowsBlockAvx512(a, num_a, rows, count, n, out, out_stride);
  } else {
    DotRowsBlockScalar(a, num_a, rows, count, n, out, out_stride);
  }
}

void AddScaledRowsBlock(float* const* y, const float* p, int64_t p_stride, int64_t num_y,
                        const float* const* rows, int64_t count, int64_t n) {
  static const bool avx512 = ActiveIsa() == Isa::kAvx512;
  if (avx512) {
    AddScaledRowsBlockAvx512(y, p, p_stride, num_y, rows, count, n);
  } else {
    AddScaledRowsBlockScalar(y, p, p_stride, num_y, rows, count, n);
  }
}

}  // namespace deepinfer::cpu
