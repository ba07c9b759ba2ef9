#include "spec/speedup_tracker.h"

namespace deepinfer {

void SpeedupTracker::Add(const DraftSchedule& schedule) {
  if (schedule.seconds <= 0 || schedule.plain_seconds <= 0) return;
  expected_tokens_ = decay_ * expected_tokens_ + schedule.expected_tokens;
  seconds_ = decay_ * seconds_ + schedule.seconds;
  rows_ = decay_ * rows_ + schedule.rows;
  plain_seconds_ = decay_ * plain_seconds_ + schedule.plain_seconds;
  drafter_seconds_ = decay_ * drafter_seconds_ + schedule.drafter_share * schedule.seconds;
  ++steps_;
}

double SpeedupTracker::speedup() const {
  if (seconds_ <= 0 || rows_ <= 0 || plain_seconds_ <= 0) return 1.0;
  return (expected_tokens_ / seconds_) / (rows_ / plain_seconds_);
}

double SpeedupTracker::drafter_share() const { return seconds_ > 0 ? drafter_seconds_ / seconds_ : 0.0; }

}  // namespace deepinfer
