#include "spec/acceptance_calibrator.h"

#include <algorithm>
#include <cmath>

namespace deepinfer {
namespace {

constexpr double kMinRaw = 1e-4;  // log-odds of raw 0 or 1 stay finite

double LogOdds(double p) {
  p = std::clamp(p, kMinRaw, 1.0 - kMinRaw);
  return std::log(p / (1.0 - p));
}

double Logistic(double x) { return 1.0 / (1.0 + std::exp(-x)); }

}  // namespace

AcceptanceCalibrator::AcceptanceCalibrator(int32_t max_depth)
    : max_depth_(std::max(max_depth, 1)),
      bins_(static_cast<size_t>(max_depth_)),
      depths_(static_cast<size_t>(max_depth_)) {}

int AcceptanceCalibrator::BinOf(float raw) {
  const int bin = static_cast<int>(std::clamp(raw, 0.0f, 1.0f) * kBins);
  return std::min(bin, kBins - 1);
}

double AcceptanceCalibrator::Prior(float raw) const {
  const double p = std::clamp(static_cast<double>(raw), 0.0, 1.0);
  return offset_ == 0.0 ? p : Logistic(LogOdds(p) + offset_);
}

double AcceptanceCalibrator::Calibrated(int32_t depth, float raw) const {
  const double prior = Prior(raw);
  if (depth < 0 || depth >= max_depth_) return prior;
  const auto bin = static_cast<size_t>(BinOf(raw));
  const Bin& pooled = pooled_[bin];
  const double across_depths = (pooled.accepted + kPriorTrials * prior) / (pooled.trials + kPriorTrials);
  const Bin& b = bins_[static_cast<size_t>(depth)][bin];
  return (b.accepted + kPriorTrials * across_depths) / (b.trials + kPriorTrials);
}

void AcceptanceCalibrator::Observe(int32_t depth, float raw, bool accepted) {
  if (depth < 0 || depth >= max_depth_) return;
  DepthCalibration& d = depths_[static_cast<size_t>(depth)];
  ++d.trials;
  d.accepted += accepted ? 1 : 0;
  d.predicted_sum += Calibrated(depth, raw);  // the prediction made before seeing the outcome
  const auto bin = static_cast<size_t>(BinOf(raw));
  for (Bin* b : {&bins_[static_cast<size_t>(depth)][bin], &pooled_[bin]}) {
    b->trials += 1.0;
    b->accepted += accepted ? 1.0 : 0.0;
  }
  pooled_[bin].log_odds_sum += LogOdds(raw);
  FitOffset();
}

// Maximum a posteriori offset a of P(accept) = logistic(logodds(raw) + a),
// a ~ N(0, 1), each bin's observations taken at their mean log-odds: a few
// Newton steps from the last estimate (the objective is concave).
void AcceptanceCalibrator::FitOffset() {
  for (int iter = 0; iter < 3; ++iter) {
    double gradient = -offset_;
    double curvature = 1.0;
    for (const Bin& b : pooled_) {
      if (b.trials == 0) continue;
      const double p = Logistic(b.log_odds_sum / b.trials + offset_);
      gradient += b.accepted - b.trials * p;
      curvature += b.trials * p * (1.0 - p);
    }
    offset_ += gradient / curvature;
  }
}

}  // namespace deepinfer
