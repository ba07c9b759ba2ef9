#include "runner/row_sampler.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace deepinfer {
namespace {

constexpr int64_t kVocab = 40;

// Allows exactly the tokens of `literal` in order, then only end-of-generation (0).
class LiteralConstraint : public TokenConstraint {
 public:
  explicit LiteralConstraint(std::vector<int32_t> literal) : literal_(std::move(literal)) {}
  void FillAllowedMask(TokenBitmask* mask) override {
    mask->ClearAll();
    mask->Set(IsComplete() ? 0 : literal_[accepted_]);
  }
  bool Accept(int32_t token) override {
    if (IsComplete() || token != literal_[accepted_]) return false;
    ++accepted_;
    return true;
  }
  void Rollback(int n) override { accepted_ -= static_cast<size_t>(n); }
  bool IsComplete() const override { return accepted_ == literal_.size(); }
  std::vector<int32_t> ForcedTokens() override { return {literal_.begin() + accepted_, literal_.end()}; }
  std::vector<int32_t> FinishTokens() override { return ForcedTokens(); }
  size_t accepted() const { return accepted_; }

 private:
  std::vector<int32_t> literal_;
  size_t accepted_ = 0;
};

// Logits that prefer `token` (all others 0).
std::vector<float> Prefer(int32_t token) {
  std::vector<float> logits(kVocab, 0.0f);
  logits[static_cast<size_t>(token)] = 5.0f;
  return logits;
}

// The scheduler's record of a request: its prompt, then committed outputs.
std::shared_ptr<Request> RequestOf(std::vector<int32_t> prompt) {
  auto r = std::make_shared<Request>();
  r->id = 1;
  r->num_prompt_tokens = static_cast<int64_t>(prompt.size());
  r->tokens = std::move(prompt);
  return r;
}

SamplingContext GreedyContext(std::shared_ptr<Request> request, int64_t budget) {
  SamplingContext ctx;
  ctx.params.temperature = 0.0;
  ctx.request = std::move(request);
  ctx.output_budget = budget;
  return ctx;
}

// A greedy context constrained to the literal 3 4 5; *literal observes the constraint.
SamplingContext LiteralContext(std::shared_ptr<Request> request, int64_t budget,
                               LiteralConstraint** literal) {
  SamplingContext ctx = GreedyContext(std::move(request), budget);
  auto constraint = std::make_unique<LiteralConstraint>(std::vector<int32_t>{3, 4, 5});
  *literal = constraint.get();
  ctx.constraint = std::move(constraint);
  return ctx;
}

// The prefill row of a whole prompt (sampling its first output).
ScheduledSequence PrefillRow(std::vector<int32_t> prompt) {
  return {.request_id = 1, .start_pos = 0, .tokens = std::move(prompt), .samples = true, .block_table = {0}};
}

// The decode row of a request whose last known token is `last` at `position`.
ScheduledSequence DecodeRow(int64_t position, int32_t last) {
  return {.request_id = 1, .start_pos = position, .tokens = {last}, .samples = true, .block_table = {0}};
}

TEST(RowSamplerTest, UnconstrainedGreedyTakesTheArgmaxAndReportsLogprobs) {
  RowSampler sampler(kVocab, /*jump_forward=*/true);
  SamplingContext ctx = GreedyContext(RequestOf({1, 2}), 10);
  ctx.logprobs = 2;
  const ScheduledSequence row = PrefillRow({1, 2});
  TokenBitmask mask;
  EXPECT_FALSE(sampler.Prepare(row, ctx, &mask));
  EXPECT_TRUE(mask.empty());
  const std::vector<float> logits = Prefer(7);
  SampledRow out = sampler.Sample(row, ctx, logits.data(), nullptr);
  EXPECT_EQ(out.tokens, std::vector<int32_t>{7});
  EXPECT_TRUE(out.error.empty());
  ASSERT_EQ(out.logprobs.size(), 1u);
  EXPECT_EQ(out.logprobs[0].top.size(), 2u);
}

TEST(RowSamplerTest, MaskSteersTheTokenAndJumpForwardAppendsForcedOnes) {
  for (bool jump : {true, false}) {
    RowSampler sampler(kVocab, jump);
    LiteralConstraint* literal = nullptr;
    SamplingContext ctx = LiteralContext(RequestOf({1, 2}), 100, &literal);
    const ScheduledSequence row = PrefillRow({1, 2});
    TokenBitmask mask;
    ASSERT_TRUE(sampler.Prepare(row, ctx, &mask));  // room left: the constraint fills the mask
    sampler.FillMask(ctx, &mask);
    const std::vector<float> logits = Prefer(7);
    SampledRow out = sampler.Sample(row, ctx, logits.data(), &mask);
    EXPECT_EQ(out.tokens, std::vector<int32_t>{3}) << "jump " << jump;
    EXPECT_TRUE(out.error.empty());
    EXPECT_EQ(out.forced, jump ? (std::vector<int32_t>{4, 5}) : std::vector<int32_t>{});
    EXPECT_EQ(literal->accepted(), jump ? 3u : 1u);
    EXPECT_EQ(ctx.constraint_accepted, jump ? 3 : 1);
  }
}

TEST(RowSamplerTest, FinishSoonAllowsOnlyTheShortestEndingsNextToken) {
  RowSampler sampler(kVocab, /*jump_forward=*/false);
  LiteralConstraint* literal = nullptr;
  SamplingContext ctx = LiteralContext(RequestOf({1}), /*budget=*/2, &literal);  // the ending needs 3 tokens
  ASSERT_EQ(literal->FinishTokens().size(), 3u);
  const ScheduledSequence row = PrefillRow({1});
  TokenBitmask mask;
  EXPECT_FALSE(sampler.Prepare(row, ctx, &mask));  // final: no FillMask
  ASSERT_EQ(mask.size(), static_cast<size_t>(kVocab));
  EXPECT_EQ(mask.words()[0], 1u << 3);
  EXPECT_EQ(mask.words()[1], 0u);
}

TEST(RowSamplerTest, PrepareRollsTheConstraintBackToTheCommittedOutputs) {
  RowSampler sampler(kVocab, /*jump_forward=*/true);
  LiteralConstraint* literal = nullptr;
  std::shared_ptr<Request> request = RequestOf({1, 2});
  SamplingContext ctx = LiteralContext(request, 100, &literal);
  const ScheduledSequence prefill = PrefillRow({1, 2});
  TokenBitmask mask;
  ASSERT_TRUE(sampler.Prepare(prefill, ctx, &mask));
  sampler.FillMask(ctx, &mask);
  const std::vector<float> logits = Prefer(3);
  ASSERT_EQ(sampler.Sample(prefill, ctx, logits.data(), &mask).forced.size(), 2u);
  // The scheduler kept only the sampled token: the next row decodes it at position 2.
  request->tokens.push_back(3);
  ASSERT_TRUE(sampler.Prepare(DecodeRow(2, 3), ctx, &mask));
  EXPECT_EQ(literal->accepted(), 1u);
  EXPECT_EQ(ctx.constraint_accepted, 1);
}

// A verification row: drafts 3 4 9 after the decode input. Greedy logits
// prefer 3, then 4, then 5 at the three positions: 3 and 4 are accepted, 9 is
// not, and the third position's sample (5) is the row's last token. Each
// position's mask is the constraint's after the earlier accepted drafts.
TEST(RowSamplerTest, VerificationAcceptsWhileSamplesEqualTheDrafts) {
  RowSampler sampler(kVocab, /*jump_forward=*/false);
  LiteralConstraint* literal = nullptr;
  SamplingContext ctx = LiteralContext(RequestOf({1, 2}), 100, &literal);
  ScheduledSequence row = DecodeRow(1, 2);
  row.start_pos = 1;
  row.tokens = {2, 3, 4, 9};
  row.num_draft_tokens = 3;
  TokenBitmask mask;
  ASSERT_TRUE(sampler.Prepare(row, ctx, &mask));
  sampler.FillMask(ctx, &mask);
  std::vector<float> logits;
  for (int32_t t : {3, 4, 5, 6}) {
    const std::vector<float> one = Prefer(t);
    logits.insert(logits.end(), one.begin(), one.end());
  }
  SampledRow out = sampler.Sample(row, ctx, logits.data(), &mask);
  EXPECT_TRUE(out.error.empty()) << out.error;
  EXPECT_EQ(out.tokens, (std::vector<int32_t>{3, 4, 5}));
  EXPECT_EQ(out.num_drafts, 3);
  EXPECT_EQ(literal->accepted(), 3u);
  EXPECT_EQ(ctx.constraint_accepted, 3);
}

}  // namespace
}  // namespace deepinfer
