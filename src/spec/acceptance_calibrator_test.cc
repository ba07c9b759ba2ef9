#include "spec/acceptance_calibrator.h"

#include <gtest/gtest.h>

#include <cmath>

namespace deepinfer {
namespace {

TEST(AcceptanceCalibrator, StartsAtTheRawConfidenceAndConvergesToTheObservedRate) {
  AcceptanceCalibrator c(3);
  EXPECT_DOUBLE_EQ(c.Calibrated(0, 0.85f), double{0.85f});
  // The drafter says 0.85 but only 1 in 4 is accepted.
  for (int i = 0; i < 400; ++i) c.Observe(0, 0.85f, i % 4 == 0);
  EXPECT_NEAR(c.Calibrated(0, 0.85f), 0.25, 0.01);
  // Other depths and bins are untouched.
  EXPECT_DOUBLE_EQ(c.Calibrated(1, 0.85f), double{0.85f});
  EXPECT_DOUBLE_EQ(c.Calibrated(0, 0.15f), double{0.15f});
  // (100 + 4 * 0.85) / (400 + 4) after exactly 400 observations.
  EXPECT_DOUBLE_EQ(c.Calibrated(0, 0.85f), (100 + 4 * double{0.85f}) / 404.0);
}

TEST(AcceptanceCalibrator, ReliabilitySumsCompareThePredictionMadeBeforeEachOutcome) {
  AcceptanceCalibrator c(2);
  c.Observe(1, 0.5f, true);   // predicted 0.5
  c.Observe(1, 0.5f, false);  // predicted (1 + 2) / 5 = 0.6
  const DepthCalibration& d = c.depths()[1];
  EXPECT_EQ(d.trials, 2);
  EXPECT_EQ(d.accepted, 1);
  EXPECT_NEAR(d.predicted_sum, 0.5 + 0.6, 1e-12);
  EXPECT_EQ(c.depths()[0].trials, 0);
  c.Observe(7, 0.5f, true);  // beyond max depth: ignored
  EXPECT_EQ(c.depths().size(), 2u);
}

}  // namespace
}  // namespace deepinfer
