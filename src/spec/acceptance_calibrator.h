// AcceptanceCalibrator: turns a drafter's raw confidence into a calibrated
// probability that the draft is accepted, online, per depth (0 = the first
// draft after the last known token). Each (depth, raw-confidence bin) keeps
// the observed accept/trial counts of conditional acceptance (depth i counts
// only when drafts 0..i-1 were accepted); the estimate shrinks toward the raw
// confidence with a weight of kPriorTrials pseudo-trials, so a new bin starts
// at the drafter's own estimate and converges to the observed rate.
//
// It also keeps, per depth, the sums the reliability diagram needs: the mean
// calibrated prediction and the observed acceptance of the drafts verified.
//
// Thread-safety: none (the engine loop thread, under the engine's lock).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace deepinfer {

struct DepthCalibration {
  int64_t trials = 0;          // drafts verified at this depth (their prefix accepted)
  int64_t accepted = 0;        // of which accepted
  double predicted_sum = 0.0;  // sum of calibrated confidences of those drafts
};

class AcceptanceCalibrator {
 public:
  static constexpr int kBins = 10;
  static constexpr double kPriorTrials = 4.0;

  explicit AcceptanceCalibrator(int32_t max_depth);

  // Calibrated P(accept | depth, raw), in [0, 1].
  double Calibrated(int32_t depth, float raw) const;
  // One verified draft: its depth, the raw confidence, and the outcome.
  void Observe(int32_t depth, float raw, bool accepted);

  const std::vector<DepthCalibration>& depths() const { return depths_; }

 private:
  struct Bin {
    double trials = 0.0;
    double accepted = 0.0;
  };
  static int BinOf(float raw);
  int32_t max_depth_;
  std::vector<std::array<Bin, kBins>> bins_;  // [depth][bin]
  std::vector<DepthCalibration> depths_;
};

}  // namespace deepinfer
