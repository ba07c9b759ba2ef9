#include "model/ops.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/check.h"
#include "tensor/dequant.h"

namespace deepinfer::ops {

namespace {

constexpr int kDotLanes = 16;
// Rows of W dequantized together: each x row is then read once per tile
// instead of once per weight row.
constexpr int64_t kRowTile = 8;
// Below this many multiply-adds, waking the pool costs more than it saves.
constexpr int64_t kMinParallelCost = 1 << 15;

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

void RmsNorm(const float* x, const float* weight, int64_t n, double eps, float* out) {
  double sum_sq = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    sum_sq += static_cast<double>(x[i]) * x[i];
  }
  const float inv = static_cast<float>(1.0 / std::sqrt(sum_sq / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i) {
    out[i] = (x[i] * inv) * weight[i];
  }
}

void ParallelForCost(ThreadPool& pool, int64_t n, int64_t cost,
                     const std::function<void(int64_t, int64_t, int)>& body) {
  if (n <= 0) {
    return;
  }
  if (cost < kMinParallelCost || pool.num_threads() == 1) {
    body(0, n, 0);
  } else {
    pool.ParallelFor(n, body);
  }
}

void MatMul(const TensorView& w, const float* x, int64_t n_tokens, const float* bias, float* y,
            ThreadPool& pool) {
  const int64_t n_rows = w.rows(), k = w.cols();
  const int64_t row_bytes = RowBytes(w.dtype, k);
  DI_CHECK(row_bytes > 0);
  const auto* base = static_cast<const uint8_t*>(w.data);
  // f32 rows are used in place, unless the file leaves them misaligned
  // (safetensors does not promise alignment).
  const bool is_f32 = w.dtype == DType::kF32 && reinterpret_cast<uintptr_t>(base) % alignof(float) == 0;
  const int64_t n_tiles = (n_rows + kRowTile - 1) / kRowTile;

  ParallelForCost(pool, n_tiles, n_rows * k * n_tokens, [&](int64_t tb, int64_t te, int) {
    // Per-thread f32 copy of a tile of dequantized rows; persistent across
    // calls because pool threads live as long as the pool.
    thread_local std::vector<float> tile;
    if (!is_f32) {
      tile.resize(static_cast<size_t>(kRowTile * k));
    }
    for (int64_t t_idx = tb; t_idx < te; ++t_idx) {
      const int64_t r0 = t_idx * kRowTile, r1 = std::min(n_rows, r0 + kRowTile);
      const float* rows[kRowTile];
      for (int64_t r = r0; r < r1; ++r) {
        const uint8_t* src = base + r * row_bytes;
        if (is_f32) {
          rows[r - r0] = reinterpret_cast<const float*>(src);
        } else {
          float* dst = tile.data() + (r - r0) * k;
          DequantizeRow(w.dtype, src, dst, k);
          rows[r - r0] = dst;
        }
      }
      for (int64_t t = 0; t < n_tokens; ++t) {
        const float* xt = x + t * k;
        float* yt = y + t * n_rows;
        for (int64_t r = r0; r < r1; ++r) {
          float v = Dot(rows[r - r0], xt, k);
          yt[r] = bias ? v + bias[r] : v;
        }
      }
    }
  });
}

void SiluMul(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

}  // namespace deepinfer::ops
