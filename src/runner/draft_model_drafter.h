// DraftModelDrafter: drafts with a separate small model that shares the
// target's vocabulary (--speculative-method draft --draft-model PATH).
//
// The draft model keeps its own paged KV, one sequence per request, holding
// the tokens it last computed. Every step it compares them with the
// request's known sequence (DraftInput::sequence), keeps the common prefix
// (accepted drafts included: their KV was computed while chaining), computes
// the rest in one chunk per request — batched over the step's proposing
// requests — and then chains one token per depth, batched too.
//
// How a draft token is chosen (each draft at the position it would occupy):
//   - greedy requests: the draft model's argmax;
//   - sampled requests, Sampling::kCoupled (default): SampleToken over the
//     draft's logits with the request's params, seed and draw — the very
//     uniform the target uses at that position. Verification keeps the
//     "accept while the sample equals the draft" rule, so the output is
//     token for token the output without speculation, and a draft model
//     close to the target agrees often (the same uniform picks the same
//     token where the two distributions are alike).
//   - sampled requests, Sampling::kRejection: an independent draw from the
//     draft's distribution q, returned in DraftProposal::probs for standard
//     rejection sampling (sampling/rejection.h): distribution-exact, but not
//     the same tokens as a run without speculation.
// Confidence: the draft's probability of the token it chose.
//
// Memory: the drafter owns its pool; when it runs dry a request gets no
// drafts until blocks free up. Thread-safety: runner thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "model/kv_cache.h"
#include "model/model.h"
#include "runner/draft_block_pool.h"
#include "spec/drafter.h"

namespace deepinfer {

class DraftModelDrafter final : public Drafter {
 public:
  enum class Sampling { kCoupled, kRejection };

  // num_blocks x block_size tokens of the draft model's KV for all requests together.
  DraftModelDrafter(std::unique_ptr<Model> model, int64_t num_blocks, int64_t block_size, Sampling sampling);

  bool NeedsSequence() const override { return true; }
  std::vector<DraftProposal> ProposeStep(std::span<const DraftInput> inputs) override;
  void Release(std::span<const int64_t> request_ids) override;
  double last_fixed_seconds() const override { return catch_up_seconds_; }

  int64_t blocks_in_use() const { return pool_.blocks_in_use(); }

 private:
  struct Sequence {
    std::vector<int32_t> computed;  // the tokens at positions 0, 1, ... whose KV the cache holds
    std::vector<int32_t> blocks;    // in position order
  };
  void Forget(Sequence& s);
  // Chooses the draft at `position` from a logits row (see the file comment);
  // appends token, confidence (and for rejection drafts q) to *p.
  void Choose(const DraftInput& in, const float* logits, int64_t position, DraftProposal* p);

  std::unique_ptr<Model> model_;
  std::unique_ptr<KvCache> kv_;
  DraftBlockPool pool_;
  const int64_t vocab_;
  const Sampling sampling_;
  std::unordered_map<int64_t, Sequence> seqs_;
  double catch_up_seconds_ = 0.0;
  std::vector<float> logits_, scratch_, probs_;
  std::vector<int32_t> outputs_;  // a request's outputs and drafts so far (penalties)
};

}  // namespace deepinfer
