// Log-softmax and top-k alternatives against hand-computed values.
#include "sampling/logprobs.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

namespace deepinfer {
namespace {

TEST(LogprobsTest, LogSoftmaxOfSmallRow) {
  // softmax([0, ln 3, 0, NaN]) = [1/5, 3/5, 1/5, 0].
  std::vector<float> l = {0.f, static_cast<float>(std::log(3.0)), 0.f, NAN};
  LogprobResult r = ComputeLogprobs(l.data(), 4, 2, 3);
  EXPECT_NEAR(r.logprob, std::log(0.2), 1e-6);
  ASSERT_EQ(r.top.size(), 3u);
  EXPECT_EQ(r.top[0].first, 1);
  EXPECT_NEAR(r.top[0].second, std::log(0.6), 1e-6);
  EXPECT_EQ(r.top[1].first, 0);  // tie with 2: lower id first
  EXPECT_EQ(r.top[2].first, 2);
  EXPECT_TRUE(std::isinf(ComputeLogprobs(l.data(), 4, 3, 0).logprob));
}

TEST(LogprobsTest, LargeLogitsDoNotOverflowAndTopIsCappedAtVocab) {
  std::vector<float> l = {1000.f, 1000.f};
  LogprobResult r = ComputeLogprobs(l.data(), 2, 0, 10);
  EXPECT_NEAR(r.logprob, std::log(0.5), 1e-6);
  EXPECT_EQ(r.top.size(), 2u);
}

}  // namespace
}  // namespace deepinfer
