#include "spec/step_cost_model.h"

#include <algorithm>

namespace deepinfer {

void StepCostModel::Observe(int64_t tokens, double seconds) {
  if (tokens <= 0 || seconds <= 0) return;
  const auto x = static_cast<double>(tokens);
  // A stalled step (the process descheduled on a shared machine) is clipped:
  // in a fit where most steps have one token count, one slow step of another
  // count sets the slope alone -- it once made lambda 1 and so turned
  // speculation off until the step was forgotten.
  if (w_ >= kMinSteps) seconds = std::min(seconds, kMaxOverPrediction * Predict(x));
  w_ = w_ * kForget + 1.0;
  sx_ = sx_ * kForget + x;
  sy_ = sy_ * kForget + seconds;
  sxx_ = sxx_ * kForget + x * x;
  sxy_ = sxy_ * kForget + x * seconds;
}

double StepCostModel::per_token_seconds() const {
  if (w_ <= 0) return 0.0;
  const double mx = sx_ / w_;
  const double cold = (sy_ / w_) / (cold_tokens_per_fixed_ + mx);
  if (w_ < kMinSteps) return cold;
  // Least squares shrunk toward the cold slope by kPriorSpread pseudo-units
  // of centered sum of squares: with token counts that barely vary (decode
  // steps of one batch size) the slope stays near the cold one instead of
  // following one odd step; with real spread the data decide.
  const double sxx_centered = std::max(sxx_ - sx_ * sx_ / w_, 0.0);
  const double sxy_centered = sxy_ - sx_ * sy_ / w_;
  return std::max((sxy_centered + kPriorSpread * cold) / (sxx_centered + kPriorSpread), 0.0);
}

double StepCostModel::fixed_seconds() const {
  if (w_ <= 0) return 0.0;
  const double mx = sx_ / w_;
  return std::max(sy_ / w_ - per_token_seconds() * mx, 0.0);
}

}  // namespace deepinfer
