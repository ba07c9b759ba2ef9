// MtpDrafter: drafts with the checkpoint's multi-token-prediction (next-n)
// layer (model/mtp.h), chaining it on its own normed output for drafts past
// the first, as DeepSeek-V3's MTP and shared/models/stories260K-mtp define.
//
// The MTP block has its own paged KV, one entry per target position q built
// from (h_q, x_{q+1}): the target's post-norm hidden at q and the token after
// it. Every step the drafter catches the MTP KV up with the positions whose
// next token became known (prompt chunks, accepted tokens — one batched MTP
// forward for the whole step), then chains: draft 1 from the newest position,
// then draft j at the next position from (g_{j-1}, draft_{j-1}), batched over
// the proposing requests per depth. Chained entries sit at positions the
// next catch-up overwrites with true ones, so rejected drafts need no
// rollback here. Confidence: the MTP's softmax probability of its (argmax) draft.
//
// Memory: the drafter owns its blocks (its own pool of one layer), so a
// request's MTP context can begin later than its target context: after a
// prefix-cache hit or a gap it starts at the first position the target
// computed, at MTP position 0 (RoPE is relative, so the shift is exact up to
// rounding) — fewer context tokens, lower acceptance, never wrong output.
// When the pool runs dry a request simply gets no drafts until it has blocks.
//
// Thread-safety: runner thread only (Drafter's contract).
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "model/kv_cache.h"
#include "model/mtp.h"
#include "runner/draft_block_pool.h"
#include "spec/drafter.h"

namespace deepinfer {

class MtpDrafter final : public Drafter {
 public:
  // num_blocks x block_size tokens of MTP KV for all requests together.
  MtpDrafter(std::unique_ptr<MtpDraft> draft, int64_t num_blocks, int64_t block_size);

  bool NeedsHidden() const override { return true; }
  bool NeedsSequence() const override { return false; }  // its KV holds the history
  std::vector<DraftProposal> ProposeStep(std::span<const DraftInput> inputs) override;
  void Release(std::span<const int64_t> request_ids) override;
  double last_fixed_seconds() const override { return catch_up_seconds_; }

  // Blocks held by requests (tests: Release returns them all).
  int64_t blocks_in_use() const { return pool_.blocks_in_use(); }

 private:
  struct Sequence {
    int64_t offset = 0;           // the target position at MTP position 0
    int64_t len = 0;              // MTP entries hold target positions [offset, offset + len)
    std::vector<float> pending;   // f32 [rows, hidden]: h of target positions offset + len, ...
    std::vector<int32_t> next;    // the known x_{q+1} of the first pending rows
    std::vector<int32_t> blocks;  // MTP KV blocks, in position order
    int64_t PendingRows(int64_t hidden) const { return static_cast<int64_t>(pending.size()) / hidden; }
  };

  // Brings s in line with an input: forgets positions at or after start_pos,
  // or starts over where the input does not continue what s holds.
  void Reconcile(Sequence& s, const DraftInput& in);
  void Restart(Sequence& s, int64_t position);

  std::unique_ptr<MtpDraft> draft_;
  std::unique_ptr<KvCache> kv_;
  DraftBlockPool pool_;
  const int64_t hidden_, vocab_;
  std::unordered_map<int64_t, Sequence> seqs_;
  double catch_up_seconds_ = 0.0;  // of the last ProposeStep
  std::vector<float> hidden_in_, logits_, g_,
      g_next_;  // one MTP forward's buffers; g_next_: a chain step's g
};

}  // namespace deepinfer
