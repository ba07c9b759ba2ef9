#include "sampling/min_tokens_constraint.h"

#include <algorithm>

namespace deepinfer {

MinTokensConstraint::MinTokensConstraint(std::unique_ptr<TokenConstraint> inner, int32_t min_tokens,
                                         std::vector<int32_t> end_ids)
    : inner_(std::move(inner)), min_tokens_(min_tokens), end_ids_(std::move(end_ids)) {}

void MinTokensConstraint::FillAllowedMask(TokenBitmask* mask) {
  if (inner_) {
    inner_->FillAllowedMask(mask);
    if (inner_->IsComplete()) return;  // only the end may follow
  } else {
    mask->SetAll();
  }
  if (accepted_ >= min_tokens_) return;
  for (int32_t id : end_ids_) {
    if (id >= 0 && static_cast<size_t>(id) < mask->size()) mask->Clear(id);
  }
}

bool MinTokensConstraint::Accept(int32_t token) {
  if (inner_ && !inner_->Accept(token)) return false;
  ++accepted_;
  return true;
}

void MinTokensConstraint::Rollback(int n) {
  if (inner_) inner_->Rollback(n);
  accepted_ = std::max(0, accepted_ - n);
}

bool MinTokensConstraint::IsComplete() const { return inner_ && inner_->IsComplete(); }

std::vector<int32_t> MinTokensConstraint::ForcedTokens() {
  return inner_ ? inner_->ForcedTokens() : std::vector<int32_t>{};
}

std::vector<int32_t> MinTokensConstraint::FinishTokens() {
  return inner_ ? inner_->FinishTokens() : std::vector<int32_t>{};
}

}  // namespace deepinfer
