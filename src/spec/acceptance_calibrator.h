// AcceptanceCalibrator: turns a drafter's raw confidence into a calibrated
// probability that the draft is accepted, online, per depth (0 = the first
// draft after the last known token). Each (depth, raw-confidence bin) keeps
// the observed accept/trial counts of conditional acceptance (depth i counts
// only when drafts 0..i-1 were accepted). Estimates shrink in three levels,
// each by kPriorTrials pseudo-trials: a (depth, bin) toward the bin's rate
// pooled over all depths, that toward the drafter's raw confidence shifted
// by one learned log-odds offset (fitted to every observation, so it moves
// after a handful of verifications). A depth that is rarely verified (the
// schedule seldom reaches it) thus borrows what the shallower depths saw,
// and a drafter whose raw confidence is off by a roughly constant factor
// in the odds (a small model's top probability) is corrected from the
// first steps -- without it, an underconfident drafter would never be
// verified deep enough to learn better.
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
    double log_odds_sum = 0.0;  // of the raw confidences seen (pooled bins only)
  };
  static int BinOf(float raw);
  // The raw confidence shifted by the learned offset.
  double Prior(float raw) const;
  void FitOffset();
  int32_t max_depth_;
  std::vector<std::array<Bin, kBins>> bins_;  // [depth][bin]
  std::array<Bin, kBins> pooled_{};           // [bin], summed over depths
  std::vector<DepthCalibration> depths_;
  double offset_ = 0.0;  // log-odds added to the raw confidence
};

}  // namespace deepinfer
