#include "model/rope.h"

#include <array>
#include <atomic>
#include <cmath>
#include <numbers>

#include "model/ops.h"

namespace deepinfer {

namespace {

// Llama 3.1 frequency scaling (HF `_compute_llama3_parameters`): long
// wavelengths are divided by `factor`, short ones kept, and the band between
// the two thresholds interpolated smoothly.
double Llama3Scale(double inv_freq, const RopeScaling& s) {
  const double old_len = static_cast<double>(s.original_max_position);
  const double low_freq_wavelen = old_len / s.low_freq_factor;
  const double high_freq_wavelen = old_len / s.high_freq_factor;
  const double wavelen = 2.0 * std::numbers::pi / inv_freq;
  if (wavelen < high_freq_wavelen) {
    return inv_freq;
  }
  if (wavelen > low_freq_wavelen) {
    return inv_freq / s.factor;
  }
  const double smooth = (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
  return (1.0 - smooth) * inv_freq / s.factor + smooth * inv_freq;
}

std::atomic<uint64_t> next_rope_id{1};

}  // namespace

StatusOr<Rope> Rope::Create(const ModelConfig& config, std::vector<float> freq_factors) {
  Rope rope;
  rope.id_ = next_rope_id.fetch_add(1, std::memory_order_relaxed);
  rope.style_ = config.rope_style;
  rope.rope_dim_ = config.rope_dim > 0 ? config.rope_dim : config.head_dim;
  if (rope.rope_dim_ % 2 != 0 || rope.rope_dim_ > config.head_dim) {
    return InvalidArgument("rope_dim " + std::to_string(rope.rope_dim_) +
                           " must be even and at most head_dim " + std::to_string(config.head_dim));
  }
  const int64_t half = rope.rope_dim_ / 2;
  if (!freq_factors.empty() && static_cast<int64_t>(freq_factors.size()) != half) {
    return InvalidArgument("rope frequency factors: expected " + std::to_string(half) + " values, got " +
                           std::to_string(freq_factors.size()));
  }
  const RopeScaling& scaling = config.rope_scaling;
  rope.inv_freq_.resize(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    double f =
        std::pow(config.rope_theta, -2.0 * static_cast<double>(i) / static_cast<double>(rope.rope_dim_));
    if (scaling.type == "linear") {
      f /= scaling.factor;
    } else if (scaling.type == "llama3") {
      f = Llama3Scale(f, scaling);
    } else if (!scaling.type.empty()) {
      return Unimplemented("rope scaling type '" + scaling.type + "' is not supported");
    }
    if (!freq_factors.empty()) {
      f /= static_cast<double>(freq_factors[static_cast<size_t>(i)]);
    }
    rope.inv_freq_[static_cast<size_t>(i)] = f;
  }
  return rope;
}

const float* Rope::CosSin(int64_t pos) const {
  constexpr int64_t kSlots = 64;  // > the positions of one decode or verification step
  struct Slot {
    uint64_t rope = 0;
    int64_t pos = -1;
    std::vector<float> cos_sin;
  };
  thread_local std::array<Slot, kSlots> cache;
  // Each Rope starts its positions at its own slot: a speculative step
  // alternates the target's and the MTP draft's Ropes over nearby
  // positions, which on shared slots recomputed every table.
  const int64_t at = pos + static_cast<int64_t>(id_ % kSlots) * 29;
  Slot& slot = cache[static_cast<size_t>(((at % kSlots) + kSlots) % kSlots)];
  if (slot.rope != id_ || slot.pos != pos) {
    const int64_t half = rope_dim_ / 2;
    slot.cos_sin.resize(static_cast<size_t>(2 * half));
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(pos) * inv_freq_[static_cast<size_t>(i)];
      slot.cos_sin[static_cast<size_t>(i)] = static_cast<float>(std::cos(angle));
      slot.cos_sin[static_cast<size_t>(half + i)] = static_cast<float>(std::sin(angle));
    }
    slot.rope = id_;
    slot.pos = pos;
  }
  return slot.cos_sin.data();
}

void Rope::Apply(float* x, int64_t n_heads, int64_t head_dim, int64_t pos) const {
  const int64_t half = rope_dim_ / 2;
  const float* cos_sin = CosSin(pos);
  ops::RopeRotate(x, n_heads, head_dim, cos_sin, cos_sin + half, half, style_ == RopeStyle::kInterleaved);
}

}  // namespace deepinfer
