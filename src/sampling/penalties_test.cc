// Penalties and logit_bias against values worked out by hand.
#include "sampling/penalties.h"

#include <vector>

#include <gtest/gtest.h>

namespace deepinfer {
namespace {

TEST(PenaltiesTest, RepetitionDividesPositiveAndMultipliesNegativeOncePerSeenToken) {
  SamplingParams p;
  p.repetition_penalty = 2.0;
  std::vector<float> l = {4.f, -3.f, 1.f, 5.f, -1.f};
  const std::vector<int32_t> prompt = {0, 0, 1};  // 0 twice: still one division
  const std::vector<int32_t> output = {4};
  ApplyLogitAdjustments(p, prompt, output, l.data(), 5);
  EXPECT_FLOAT_EQ(l[0], 2.f);
  EXPECT_FLOAT_EQ(l[1], -6.f);
  EXPECT_FLOAT_EQ(l[2], 1.f);  // unseen
  EXPECT_FLOAT_EQ(l[3], 5.f);
  EXPECT_FLOAT_EQ(l[4], -2.f);
}

TEST(PenaltiesTest, PresenceAndFrequencyCountOnlyOutputTokens) {
  SamplingParams p;
  p.presence_penalty = 0.5;
  p.frequency_penalty = 0.25;
  std::vector<float> l = {1.f, 1.f, 1.f, 1.f};
  const std::vector<int32_t> prompt = {0, 0, 0};
  const std::vector<int32_t> output = {1, 2, 2, 2};
  ApplyLogitAdjustments(p, prompt, output, l.data(), 4);
  EXPECT_FLOAT_EQ(l[0], 1.f);                 // prompt only: untouched
  EXPECT_FLOAT_EQ(l[1], 1.f - 0.5f - 0.25f);  // once
  EXPECT_FLOAT_EQ(l[2], 1.f - 0.5f - 0.75f);  // three times
  EXPECT_FLOAT_EQ(l[3], 1.f);
}

TEST(PenaltiesTest, LogitBiasIsAddedBeforeRepetition) {
  SamplingParams p;
  p.logit_bias = {{1, 3.f}, {7, 100.f}};  // 7 is out of range: ignored
  p.repetition_penalty = 2.0;
  std::vector<float> l = {0.f, -1.f, 2.f};
  const std::vector<int32_t> output = {1, 99};
  ApplyLogitAdjustments(p, {}, output, l.data(), 3);
  EXPECT_FLOAT_EQ(l[1], 1.f);  // (-1 + 3) / 2
  EXPECT_FLOAT_EQ(l[2], 2.f);
  EXPECT_TRUE(HasLogitAdjustments(p));
  EXPECT_FALSE(HasLogitAdjustments(SamplingParams{}));
}

TEST(PenaltiesTest, ValidateRejectsOutOfRangeValues) {
  SamplingParams p;
  p.repetition_penalty = 0.0;
  EXPECT_EQ(p.Validate().code(), StatusCode::kInvalidArgument);
  p = {};
  p.presence_penalty = 2.5;
  EXPECT_EQ(p.Validate().code(), StatusCode::kInvalidArgument);
  p = {};
  p.frequency_penalty = -3;
  EXPECT_EQ(p.Validate().code(), StatusCode::kInvalidArgument);
  p = {};
  p.logit_bias = {{-1, 1.f}};
  EXPECT_EQ(p.Validate().code(), StatusCode::kInvalidArgument);
  p = {};
  p.frequency_penalty = 2.0;
  EXPECT_TRUE(p.Validate().ok());
}

}  // namespace
}  // namespace deepinfer
