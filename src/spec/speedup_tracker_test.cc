#include "spec/speedup_tracker.h"

#include <gtest/gtest.h>

#include <cmath>

namespace deepinfer {
namespace {

DraftSchedule Step(double expected, double seconds, double plain_seconds, double drafter_share) {
  DraftSchedule s;
  s.expected_tokens = expected;
  s.seconds = seconds;
  s.rows = 1;
  s.plain_seconds = plain_seconds;
  s.drafter_seconds = drafter_share * seconds;
  return s;
}

TEST(SpeedupTracker, EmptyPredictsNoChange) {
  const SpeedupTracker t(0.9);
  EXPECT_EQ(t.speedup(), 1.0);
  EXPECT_EQ(t.drafter_share(), 0.0);
}

TEST(SpeedupTracker, OneStepIsItsOwnPrediction) {
  SpeedupTracker t(0.9);
  t.Add(Step(3.0, 100e-6, 40e-6, 0.3));
  EXPECT_NEAR(t.speedup(), 1.2, 1e-12);  // (3 / 100) / (1 / 40)
  EXPECT_NEAR(t.drafter_share(), 0.3, 1e-12);
}

TEST(SpeedupTracker, StepsWeighByTheirTokensAndSeconds) {
  SpeedupTracker t(0.5);
  t.Add(Step(3.0, 100e-6, 40e-6, 0.3));
  t.Add(Step(1.2, 80e-6, 40e-6, 0.4));  // its own ratio: 0.6
  // Decayed sums (hand-computed): tokens 0.5 * 3 + 1.2 = 2.7, seconds
  // 50 + 80 = 130 us, rows 1.5, plain 20 + 40 = 60 us, drafter 15 + 32 = 47 us.
  EXPECT_NEAR(t.speedup(), (2.7 / 130) / (1.5 / 60), 1e-12);
  EXPECT_NEAR(t.drafter_share(), 47.0 / 130, 1e-12);
  // A mean of the two ratios with the same weights would say 0.8; the sums
  // weigh the weak step by its share of the tokens.
  EXPECT_GT(t.speedup(), 0.8);
}

TEST(SpeedupTracker, StepsWithoutACostAreIgnoredAndClearForgets) {
  SpeedupTracker t(0.9);
  t.Add(Step(3.0, 100e-6, 40e-6, 0.3));
  t.Add(DraftSchedule{});  // no cost known yet
  EXPECT_NEAR(t.speedup(), 1.2, 1e-12);
  EXPECT_EQ(t.steps(), 1);
  t.Clear();
  EXPECT_EQ(t.speedup(), 1.0);
  EXPECT_EQ(t.steps(), 0);
  t.Add(Step(1.0, 50e-6, 40e-6, 0.2));
  EXPECT_NEAR(t.speedup(), 0.8, 1e-12);
}

TEST(SpeedupTracker, TheStandardErrorMeasuresHowMuchTheStepsDisagree) {
  SpeedupTracker steady(0.95);
  for (int i = 0; i < 5; ++i) steady.Add(Step(0.9, 100e-6, 100e-6, 0.3));
  EXPECT_NEAR(steady.standard_error(), 0.0, 1e-9);
  SpeedupTracker t(0.5);
  t.Add(Step(1.0, 100e-6, 100e-6, 0.3));
  EXPECT_EQ(t.standard_error(), 0.0);  // one step: no spread to measure
  t.Add(Step(2.0, 100e-6, 100e-6, 0.3));
  // By hand: weights 0.5 and 1 (sum 1.5, squares 1.25: 1.8 effective
  // steps), mean 2.5 / 1.5, variance 4.5 / 1.5 - mean^2 = 2 / 9.
  EXPECT_NEAR(t.standard_error(), std::sqrt((2.0 / 9) / 1.8), 1e-12);
}

}  // namespace
}  // namespace deepinfer
