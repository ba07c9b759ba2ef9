#include "spec/step_cost_model.h"

#include <algorithm>

namespace deepinfer {

void StepCostModel::Observe(int64_t tokens, double seconds) {
  if (tokens <= 0 || seconds <= 0) return;
  const auto x = static_cast<double>(tokens);
  w_ = w_ * kForget + 1.0;
  sx_ = sx_ * kForget + x;
  sy_ = sy_ * kForget + seconds;
  sxx_ = sxx_ * kForget + x * x;
  sxy_ = sxy_ * kForget + x * seconds;
}

namespace {
// Below this spread of token counts the slope is not identifiable.
constexpr double kMinVariance = 0.25;
}  // namespace

double StepCostModel::per_token_seconds() const {
  if (w_ <= 0) return 0.0;
  const double mx = sx_ / w_;
  const double var = sxx_ / w_ - mx * mx;
  if (var < kMinVariance) return (sy_ / w_) / (cold_tokens_per_fixed_ + mx);
  const double slope = (sxy_ / w_ - mx * (sy_ / w_)) / var;
  return std::max(slope, 0.0);
}

double StepCostModel::fixed_seconds() const {
  if (w_ <= 0) return 0.0;
  const double mx = sx_ / w_;
  return std::max(sy_ / w_ - per_token_seconds() * mx, 0.0);
}

}  // namespace deepinfer
