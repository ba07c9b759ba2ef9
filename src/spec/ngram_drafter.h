// NgramDrafter ("prompt lookup"): drafts by finding the longest suffix of the
// request's sequence (at most max_ngram, at least min_ngram tokens) that also
// occurs earlier in it, and proposing the tokens that followed its latest
// earlier occurrence. Needs no second model; pays on outputs that copy from
// the prompt (summaries, code edits, extraction, structured output).
//
// Confidence: the share of the suffix's earlier occurrences that continue
// with the proposed token (a match-statistics estimate), decayed with depth;
// calibrated against observed acceptance elsewhere (AcceptanceCalibrator).
//
// Cost: O(n * max_ngram) per proposal over the last `search_window` tokens.
#pragma once

#include <cstdint>

#include "spec/drafter.h"

namespace deepinfer {

class NgramDrafter final : public Drafter {
 public:
  struct Options {
    int32_t min_ngram = 2;
    int32_t max_ngram = 4;
    int64_t search_window = 8192;  // tokens searched back from the end
  };
  NgramDrafter() : NgramDrafter(Options{}) {}
  explicit NgramDrafter(Options options);
  // Each input's proposal from its sequence alone (the drafter keeps no state).
  std::vector<DraftProposal> ProposeStep(std::span<const DraftInput> inputs) override;
  DraftProposal Propose(std::span<const int32_t> sequence, int32_t max_tokens) const;

 private:
  Options options_;
};

}  // namespace deepinfer
