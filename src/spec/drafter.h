// Drafter: proposes the tokens a request will most likely produce next, each
// with a confidence, for speculative decoding (docs/speculative.md). The
// target model then verifies the proposals in one forward pass; verification
// is lossless (runner/row_sampler.h), so a drafter only decides speed, never
// output.
//
// Contract: Propose sees the request's whole known sequence (prompt, then
// outputs) and returns at most max_tokens drafts continuing it, with
// confidence[i] in [0, 1] the drafter's estimate that draft i is accepted
// given drafts 0..i-1 were (uncalibrated; see AcceptanceCalibrator). An empty
// proposal is always valid.
//
// Thread-safety: Propose is called from the runner thread only.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace deepinfer {

struct DraftProposal {
  std::vector<int32_t> tokens;
  std::vector<float> confidence;  // one per token, conditional on the earlier drafts
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  virtual DraftProposal Propose(std::span<const int32_t> sequence, int32_t max_tokens) = 0;
};

}  // namespace deepinfer
