// The predicted speedup of speculation over recent steps, for the decision
// to pause the drafter (EngineImpl::UpdateDraftingPauseLocked).
//
// It is a ratio of exponentially decayed sums, not a smoothed mean of each
// step's own ratio: (sum of expected tokens / sum of predicted seconds) over
// (sum of rows / sum of the same steps' seconds without speculation). So a
// step with weak proposals (its own prediction can be ~0.75 at batch 1 where
// the average is ~1.3: the catch-up is paid whatever is drafted) moves it by
// its share of the tokens and seconds, and no initial value biases the
// first steps. A smoothed mean of per-step ratios with a 5-step horizon
// paused a drafter that paid in most 200-token requests at batch 1 on
// stories260K-mtp (docs/speculative.md, "Session 22").
#pragma once

#include <cstdint>

#include "spec/draft_length_policy.h"

namespace deepinfer {

class SpeedupTracker {
 public:
  // decay: the weight left to a step after each newer one (0 < decay < 1).
  explicit SpeedupTracker(double decay) : decay_(decay) {}

  // A step's chosen schedule; ignored when it has no cost prediction.
  void Add(const DraftSchedule& schedule);
  void Clear() { *this = SpeedupTracker(decay_); }

  // 1 with no step added.
  double speedup() const;
  // The drafter's part of the predicted seconds (0 with no step added).
  double drafter_share() const;
  // Steps added since construction or Clear.
  int64_t steps() const { return steps_; }
  // The standard error of the steps' own predicted speedups (their decayed
  // mean and spread over the effective number of steps; 0 below 2 steps):
  // how far the prediction may be off for lack of steps. Where it is noisy
  // (batch 1: a step's own prediction ranges 0.7-2.0 on stories260K-mtp)
  // a dip says little; where it is steady (a random MTP layer: 0.90 +-
  // 0.001) a few steps settle it.
  double standard_error() const;

 private:
  double decay_;
  double expected_tokens_ = 0.0;
  double seconds_ = 0.0;
  double rows_ = 0.0;
  double plain_seconds_ = 0.0;
  double drafter_seconds_ = 0.0;
  int64_t steps_ = 0;
  // Decayed weights, their squares, and the weighted sums of the steps'
  // speedups and squares.
  double weight_ = 0.0, weight_squared_ = 0.0, speedup_sum_ = 0.0, speedup_squared_sum_ = 0.0;
};

}  // namespace deepinfer
