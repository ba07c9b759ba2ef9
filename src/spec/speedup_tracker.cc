#include "spec/speedup_tracker.h"

#include <algorithm>
#include <cmath>

namespace deepinfer {

void SpeedupTracker::Add(const DraftSchedule& schedule) {
  if (schedule.seconds <= 0 || schedule.plain_seconds <= 0) return;
  expected_tokens_ = decay_ * expected_tokens_ + schedule.expected_tokens;
  seconds_ = decay_ * seconds_ + schedule.seconds;
  rows_ = decay_ * rows_ + schedule.rows;
  plain_seconds_ = decay_ * plain_seconds_ + schedule.plain_seconds;
  drafter_seconds_ = decay_ * drafter_seconds_ + schedule.drafter_seconds;
  ++steps_;
  weight_ = decay_ * weight_ + 1.0;
  weight_squared_ = decay_ * decay_ * weight_squared_ + 1.0;
  const double speedup = schedule.speedup();
  speedup_sum_ = decay_ * speedup_sum_ + speedup;
  speedup_squared_sum_ = decay_ * speedup_squared_sum_ + speedup * speedup;
}

double SpeedupTracker::standard_error() const {
  if (steps_ < 2) return 0.0;
  const double mean = speedup_sum_ / weight_;
  const double variance = std::max(speedup_squared_sum_ / weight_ - mean * mean, 0.0);
  const double effective_steps = weight_ * weight_ / weight_squared_;
  return std::sqrt(variance / effective_steps);
}

double SpeedupTracker::speedup() const {
  if (seconds_ <= 0 || rows_ <= 0 || plain_seconds_ <= 0) return 1.0;
  return (expected_tokens_ / seconds_) / (rows_ / plain_seconds_);
}

double SpeedupTracker::drafter_share() const { return seconds_ > 0 ? drafter_seconds_ / seconds_ : 0.0; }

}  // namespace deepinfer
