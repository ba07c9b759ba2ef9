#include "spec/ngram_drafter.h"

#include <algorithm>

namespace deepinfer {
namespace {

// Whether sequence[start, start + n) equals the last n tokens.
bool MatchesSuffix(std::span<const int32_t> s, int64_t start, int64_t n) {
  const int64_t tail = static_cast<int64_t>(s.size()) - n;
  for (int64_t i = 0; i < n; ++i) {
    if (s[static_cast<size_t>(start + i)] != s[static_cast<size_t>(tail + i)]) return false;
  }
  return true;
}

}  // namespace

NgramDrafter::NgramDrafter(Options options) : options_(options) {}

std::vector<DraftProposal> NgramDrafter::ProposeStep(std::span<const DraftInput> inputs) {
  std::vector<DraftProposal> out;
  out.reserve(inputs.size());
  for (const DraftInput& in : inputs) out.push_back(Propose(in.sequence, in.max_tokens));
  return out;
}

DraftProposal NgramDrafter::Propose(std::span<const int32_t> s, int32_t max_tokens) const {
  DraftProposal out;
  const auto size = static_cast<int64_t>(s.size());
  if (max_tokens <= 0 || size < options_.min_ngram + 1) return out;
  const int64_t lo = std::max<int64_t>(0, size - options_.search_window);
  for (int64_t n = std::min<int64_t>(options_.max_ngram, size - 1); n >= options_.min_ngram; --n) {
    // Occurrences of the n-token suffix that end before the suffix itself
    // and have a continuation; the latest one supplies the proposal.
    int64_t latest = -1;
    int64_t occurrences = 0;
    for (int64_t start = size - n - 1; start >= lo; --start) {
      if (!MatchesSuffix(s, start, n)) continue;
      ++occurrences;
      if (latest < 0) latest = start;
    }
    if (latest < 0) continue;
    const int64_t from = latest + n;
    const int64_t count = std::min<int64_t>(max_tokens, size - from);
    // Agreement of the other occurrences on the first continuation token.
    int64_t agree = 0;
    for (int64_t start = size - n - 1; start >= lo; --start) {
      if (MatchesSuffix(s, start, n) && s[static_cast<size_t>(start + n)] == s[static_cast<size_t>(from)]) {
        ++agree;
      }
    }
    // Laplace-smoothed agreement; longer matches are more reliable.
    const float base = static_cast<float>(agree + 1) / static_cast<float>(occurrences + 2) *
                       static_cast<float>(n) / static_cast<float>(n + 1);
    for (int64_t i = 0; i < count; ++i) {
      out.tokens.push_back(s[static_cast<size_t>(from + i)]);
      out.confidence.push_back(std::clamp(base * (i == 0 ? 1.0f : 0.9f), 0.0f, 1.0f));
    }
    return out;
  }
  return out;
}

}  // namespace deepinfer
