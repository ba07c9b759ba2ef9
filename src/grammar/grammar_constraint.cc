#include "grammar/grammar_constraint.h"

#include <algorithm>

namespace deepinfer::grammar {

GrammarConstraint::GrammarConstraint(std::shared_ptr<const CompiledGrammar> grammar)
    : grammar_(std::move(grammar)), matcher_(grammar_) {}

void GrammarConstraint::FillAllowedMask(TokenBitmask* mask) {
  if (mask->empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (mask->size() == grammar_->vocab().size()) {
    matcher_.FillNextTokenBitmask(mask);
    return;
  }
  // Sizes differ: fill the vocabulary's mask, then copy the common ids.
  matcher_.FillNextTokenBitmask(&scratch_);
  mask->CopyCommon(scratch_);
}

bool GrammarConstraint::Accept(int32_t token) {
  std::lock_guard<std::mutex> lock(mutex_);
  return matcher_.AcceptToken(token);
}

void GrammarConstraint::Rollback(int n) {
  std::lock_guard<std::mutex> lock(mutex_);
  matcher_.Rollback(n);
}

bool GrammarConstraint::IsComplete() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return matcher_.IsCompleted();
}

std::vector<int32_t> GrammarConstraint::ForcedTokens() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string bytes = matcher_.ForcedBytes();
  if (bytes.empty()) return {};
  return GreedyTokenize(grammar_->vocab(), bytes);
}

std::vector<int32_t> GrammarConstraint::FinishTokens() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string bytes = matcher_.ShortestCompletion();
  if (bytes.empty()) return {};
  return GreedyTokenize(grammar_->vocab(), bytes);
}

std::vector<int32_t> GreedyTokenize(const Vocabulary& vocab, std::string_view bytes) {
  // Binary search in the byte-sorted token list for each prefix length,
  // longest first (tokens are at most max_token_length() bytes).
  const auto& sorted = vocab.sorted_ids();
  std::vector<int32_t> out;
  size_t pos = 0;
  while (pos < bytes.size()) {
    size_t longest = std::min(bytes.size() - pos, vocab.max_token_length());
    int32_t found = -1;
    size_t found_len = 0;
    for (size_t len = longest; len >= 1 && found < 0; --len) {
      std::string_view want = bytes.substr(pos, len);
      size_t lo = 0, hi = sorted.size();
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (vocab.sorted_token(static_cast<uint32_t>(mid)) < want) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      if (lo < sorted.size() && vocab.sorted_token(static_cast<uint32_t>(lo)) == want) {
        found = sorted[lo];
        found_len = len;
      }
    }
    if (found < 0) break;
    out.push_back(found);
    pos += found_len;
  }
  return out;
}

}  // namespace deepinfer::grammar
