#include "spec/acceptance_calibrator.h"

#include <algorithm>

namespace deepinfer {

AcceptanceCalibrator::AcceptanceCalibrator(int32_t max_depth)
    : max_depth_(std::max(max_depth, 1)),
      bins_(static_cast<size_t>(max_depth_)),
      depths_(static_cast<size_t>(max_depth_)) {}

int AcceptanceCalibrator::BinOf(float raw) {
  const int bin = static_cast<int>(std::clamp(raw, 0.0f, 1.0f) * kBins);
  return std::min(bin, kBins - 1);
}

double AcceptanceCalibrator::Calibrated(int32_t depth, float raw) const {
  const double prior = std::clamp(static_cast<double>(raw), 0.0, 1.0);
  if (depth < 0 || depth >= max_depth_) return prior;
  const Bin& b = bins_[static_cast<size_t>(depth)][static_cast<size_t>(BinOf(raw))];
  return (b.accepted + kPriorTrials * prior) / (b.trials + kPriorTrials);
}

void AcceptanceCalibrator::Observe(int32_t depth, float raw, bool accepted) {
  if (depth < 0 || depth >= max_depth_) return;
  DepthCalibration& d = depths_[static_cast<size_t>(depth)];
  ++d.trials;
  d.accepted += accepted ? 1 : 0;
  d.predicted_sum += Calibrated(depth, raw);  // the prediction made before seeing the outcome
  Bin& b = bins_[static_cast<size_t>(depth)][static_cast<size_t>(BinOf(raw))];
  b.trials += 1.0;
  b.accepted += accepted ? 1.0 : 0.0;
}

}  // namespace deepinfer
