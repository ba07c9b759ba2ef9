#include "spec/acceptance_calibrator.h"

#include <gtest/gtest.h>

#include <cmath>

namespace deepinfer {
namespace {

double LogOdds(double p) { return std::log(p / (1 - p)); }
double Logistic(double x) { return 1 / (1 + std::exp(-x)); }

TEST(AcceptanceCalibrator, StartsAtTheRawConfidenceAndConvergesToTheObservedRate) {
  AcceptanceCalibrator c(3);
  EXPECT_DOUBLE_EQ(c.Calibrated(0, 0.85f), double{0.85f});
  // The drafter says 0.85 but only 1 in 4 is accepted.
  for (int i = 0; i < 400; ++i) c.Observe(0, 0.85f, i % 4 == 0);
  EXPECT_NEAR(c.Calibrated(0, 0.85f), 0.25, 0.01);
  // A depth never verified borrows the pooled rate of its bin.
  EXPECT_NEAR(c.Calibrated(2, 0.85f), 0.25, 0.01);
  // Other bins follow the learned log-odds offset a, the MAP estimate under
  // a ~ N(0, 1): 100 - 400 * logistic(logodds(0.85) + a) - a = 0.
  const double a = LogOdds(c.Calibrated(0, 0.15f)) - LogOdds(double{0.15f});
  EXPECT_LT(a, -2.0);
  EXPECT_NEAR(100 - 400 * Logistic(LogOdds(double{0.85f}) + a) - a, 0.0, 1e-6);
}

TEST(AcceptanceCalibrator, AnUnderconfidentDrafterIsCorrectedAtDepthsAndBinsNotYetVerified) {
  // Raw 0.3 at depth 0, accepted 3 times in 5: after 20 verifications, an
  // unseen depth and bin (raw 0.45 at depth 3) is already predicted well above 0.45.
  AcceptanceCalibrator c(5);
  for (int i = 0; i < 20; ++i) c.Observe(0, 0.3f, i % 5 < 3);
  EXPECT_GT(c.Calibrated(3, 0.45f), 0.55);
  EXPECT_LT(c.Calibrated(3, 0.45f), 0.8);
}

TEST(AcceptanceCalibrator, ADepthsOwnObservationsOutweighThePooledRate) {
  AcceptanceCalibrator c(2);
  for (int i = 0; i < 400; ++i) c.Observe(0, 0.55f, true);        // depth 0: always accepted
  for (int i = 0; i < 400; ++i) c.Observe(1, 0.55f, i % 2 == 0);  // depth 1: half
  EXPECT_NEAR(c.Calibrated(0, 0.55f), 1.0, 0.01);
  EXPECT_NEAR(c.Calibrated(1, 0.55f), 0.5, 0.01);
}

TEST(AcceptanceCalibrator, ReliabilitySumsCompareThePredictionMadeBeforeEachOutcome) {
  AcceptanceCalibrator c(2);
  c.Observe(1, 0.5f, true);  // predicted 0.5 (nothing learned yet)
  const double second = c.Calibrated(1, 0.5f);
  EXPECT_GT(second, 0.5);  // one acceptance moved it up
  c.Observe(1, 0.5f, false);
  const DepthCalibration& d = c.depths()[1];
  EXPECT_EQ(d.trials, 2);
  EXPECT_EQ(d.accepted, 1);
  EXPECT_NEAR(d.predicted_sum, 0.5 + second, 1e-12);
  EXPECT_EQ(c.depths()[0].trials, 0);
  c.Observe(7, 0.5f, true);  // beyond max depth: ignored
  EXPECT_EQ(c.depths().size(), 2u);
}

}  // namespace
}  // namespace deepinfer
