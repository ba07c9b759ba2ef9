// MinTokensConstraint: `min_tokens` (vLLM) as a TokenConstraint: until
// `min_tokens` tokens were accepted, the end-of-generation ids (EOS, extra
// end ids, stop_token_ids) are masked out; everything else is the inner
// constraint's (structured output), or allowed when there is none.
// A grammar that is complete before min_tokens wins: its end ids stay
// allowed there, as nothing else may follow. Stop strings still end the
// request early (they are text, not ids).
// Thread-safety: one per request, like any TokenConstraint.
#pragma once

#include <memory>
#include <vector>

#include "sampling/token_constraint.h"

namespace deepinfer {

class MinTokensConstraint final : public TokenConstraint {
 public:
  // `inner` may be null.
  MinTokensConstraint(std::unique_ptr<TokenConstraint> inner, int32_t min_tokens,
                      std::vector<int32_t> end_ids);

  void FillAllowedMask(TokenBitmask* mask) override;
  bool Accept(int32_t token) override;
  void Rollback(int n) override;
  bool IsComplete() const override;
  std::vector<int32_t> ForcedTokens() override;
  std::vector<int32_t> FinishTokens() override;

 private:
  std::unique_ptr<TokenConstraint> inner_;
  const int32_t min_tokens_;
  const std::vector<int32_t> end_ids_;
  int32_t accepted_ = 0;
};

}  // namespace deepinfer
