// StepCostModel: seconds a model step takes as a function of the tokens in
// it, seconds ~= fixed + per_token * tokens, fitted online by least squares
// over the steps the engine has run (exponentially forgetting old ones, so it
// follows the machine's load). Speculation uses the marginal per_token cost
// against the fixed cost: while a step is memory-bound (fixed >> per_token *
// tokens) extra verified tokens are nearly free; once it is compute-bound
// they cost as much as the tokens they may save.
//
// The cold assumption: per_token = fixed / cold_tokens_per_fixed, with
// kColdTokensPerFixed for a model step and 1 for a drafter's model (a
// chained draft costs about what its fixed part does). It holds alone for
// the first kMinSteps steps and is the prior the fit shrinks toward
// afterwards: a fit through few distinct token counts on a shared machine
// can be anything (one slow 5-token step among 1-token ones once made
// per_token 40x a token's real cost, and so turned speculation off).
// The prior errs on the dear side on purpose (docs/speculative.md has the
// measured ratios): a token that looks dear makes the schedule verify
// fewer drafts where confidence is low, so lengths vary and the fit gets
// the token-count spread it learns the slope from; a token that looks
// nearly free makes it verify every draft, every step the same length,
// and the fit never moves off the prior.
//
// Thread-safety: none (the engine loop thread, under the engine's lock).
#pragma once

#include <cstdint>

namespace deepinfer {

class StepCostModel {
 public:
  static constexpr double kForget = 0.98;
  static constexpr double kColdTokensPerFixed = 8.0;
  static constexpr double kMinSteps = 8.0;  // (forgetting-weighted)
  // Once warm, a step is taken as at most this many times its prediction.
  static constexpr double kMaxOverPrediction = 3.0;
  // The cold slope's weight in the fit, in units of sum of squared token
  // deviations (one step 4 tokens off the mean).
  static constexpr double kPriorSpread = 16.0;

  explicit StepCostModel(double cold_tokens_per_fixed = kColdTokensPerFixed)
      : cold_tokens_per_fixed_(cold_tokens_per_fixed) {}

  void Observe(int64_t tokens, double seconds);
  double fixed_seconds() const;
  double per_token_seconds() const;
  double Predict(double tokens) const { return fixed_seconds() + per_token_seconds() * tokens; }

 private:
  double cold_tokens_per_fixed_;
  // Weighted sums for the regression seconds = a + b * tokens.
  double w_ = 0, sx_ = 0, sy_ = 0, sxx_ = 0, sxy_ = 0;
};

}  // namespace deepinfer
