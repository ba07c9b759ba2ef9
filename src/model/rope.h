// Rotary position embedding: per-dimension-pair frequencies (base theta,
// linear or llama3 scaling, optional per-pair frequency factors as GGUF's
// rope_freqs tensor stores them) and the rotation itself in both pairings.
//
// Angles are pos * inv_freq in double and cos/sin are taken in double, so the
// rotation is as accurate as f32 storage allows at any position.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "model/model_config.h"

namespace deepinfer {

class Rope {
 public:
  // freq_factors: empty, or rope_dim / 2 divisors of the pair frequencies.
  static StatusOr<Rope> Create(const ModelConfig& config, std::vector<float> freq_factors = {});

  // Rotates the first rope_dim dims of each of `n_heads` heads (head_dim
  // floats apart, starting at x) for position `pos`.
  void Apply(float* x, int64_t n_heads, int64_t head_dim, int64_t pos) const;

  const std::vector<double>& inv_freq() const { return inv_freq_; }  // [rope_dim / 2]

 private:
  // cos (rope_dim / 2 floats) then sin of the angles at `pos`, from a
  // per-thread cache by position: every layer of a forward pass rotates the
  // same positions, q and k each, and the angles in double cost more than
  // the rotation at a small head_dim.
  const float* CosSin(int64_t pos) const;

  RopeStyle style_ = RopeStyle::kNeox;
  int64_t rope_dim_ = 0;
  std::vector<double> inv_freq_;
  uint64_t id_ = 0;  // the cache's key with the position (copies share it: same frequencies)
};

}  // namespace deepinfer
