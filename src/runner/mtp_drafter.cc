#include "runner/mtp_drafter.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "core/log.h"
#include "model/ops.h"
#include "sampling/sampler.h"

namespace deepinfer {

MtpDrafter::MtpDrafter(std::unique_ptr<MtpDraft> draft, int64_t num_blocks, int64_t block_size)
    : draft_(std::move(draft)),
      kv_(draft_->NewKvCache(num_blocks, block_size)),
      pool_(num_blocks, block_size),
      hidden_(draft_->config().hidden_size),
      vocab_(draft_->config().vocab_size) {}

void MtpDrafter::Restart(Sequence& s, int64_t position) {
  pool_.Release(&s.blocks);
  s.offset = position;
  s.len = 0;
  s.pending.clear();
  s.next.clear();
}

void MtpDrafter::Reconcile(Sequence& s, const DraftInput& in) {
  const int64_t held = s.offset + s.len;  // MTP entries end here
  const int64_t known = held + s.PendingRows(hidden_);
  if (in.start_pos < s.offset || in.start_pos > known) {
    Restart(s, in.start_pos);  // before what s holds (preemption), or a gap
    return;
  }
  if (in.start_pos < held) {  // a rollback into the MTP entries
    s.len = in.start_pos - s.offset;
    s.pending.clear();
    s.next.clear();
    return;
  }
  // Keep the pending rows before start_pos; the last one's next token comes
  // from this input again.
  const int64_t keep = in.start_pos - held;
  s.pending.resize(static_cast<size_t>(keep * hidden_));
  s.next.resize(static_cast<size_t>(
      std::min<int64_t>(static_cast<int64_t>(s.next.size()), std::max<int64_t>(keep - 1, 0))));
}

void MtpDrafter::Release(std::span<const int64_t> request_ids) {
  for (int64_t id : request_ids) {
    auto it = seqs_.find(id);
    if (it == seqs_.end()) continue;
    Restart(it->second, 0);
    seqs_.erase(it);
  }
}

std::vector<DraftProposal> MtpDrafter::ProposeStep(std::span<const DraftInput> inputs) {
  const auto start = std::chrono::steady_clock::now();
  catch_up_seconds_ = 0.0;
  std::vector<DraftProposal> out(inputs.size());
  // One state per input (references into the map stay valid as it grows).
  std::vector<Sequence*> state(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) state[i] = &seqs_[inputs[i].request_id];
  // 1. Take in the step: the new hidden rows and the tokens after them.
  for (size_t i = 0; i < inputs.size(); ++i) {
    const DraftInput& in = inputs[i];
    Sequence& s = *state[i];
    Reconcile(s, in);
    if (in.hidden != nullptr && in.num_computed > 0) {
      s.pending.insert(s.pending.end(), in.hidden, in.hidden + in.num_computed * hidden_);
    }
    const int64_t rows = s.PendingRows(hidden_);
    for (auto i = static_cast<int64_t>(s.next.size()); i < rows; ++i) {
      const int64_t at = s.offset + s.len + i + 1 - in.start_pos;  // x_{q+1}'s index in in.tokens
      if (at < 0 || at >= static_cast<int64_t>(in.tokens.size())) break;
      s.next.push_back(in.tokens[static_cast<size_t>(at)]);
    }
  }

  // 2. Catch the MTP KV up: every pending row whose next token is known, one
  // chunk per request, logits where the request proposes from its newest position.
  ForwardBatch batch;
  std::vector<size_t> caught;     // input index of each chunk
  std::vector<size_t> proposing;  // input index of each logit row
  hidden_in_.clear();
  for (size_t i = 0; i < inputs.size(); ++i) {
    Sequence& s = *state[i];
    const auto ready = static_cast<int64_t>(s.next.size());
    if (ready == 0) continue;
    if (!pool_.Cover(&s.blocks, s.len + ready + std::max(inputs[i].max_tokens - 1, 0))) {
      DI_LOG_WARN("mtp drafter: KV pool exhausted; request %lld drafts from scratch later",
                  static_cast<long long>(inputs[i].request_id));
      Restart(s, s.offset + s.len + s.PendingRows(hidden_));
      continue;
    }
    SequenceChunk c;
    c.tokens = s.next;
    c.start_pos = s.len;
    c.block_table = s.blocks;
    const bool proposes = inputs[i].max_tokens > 0 && ready == s.PendingRows(hidden_);
    c.logits = proposes ? SequenceChunk::Logits::kLast : SequenceChunk::Logits::kNone;
    if (proposes) proposing.push_back(i);
    hidden_in_.insert(hidden_in_.end(), s.pending.begin(), s.pending.begin() + ready * hidden_);
    batch.seqs.push_back(std::move(c));
    caught.push_back(i);
  }
  if (batch.seqs.empty()) return out;
  auto rows = static_cast<size_t>(batch.NumLogitRows());
  logits_.resize(rows * static_cast<size_t>(vocab_));
  g_.resize(rows * static_cast<size_t>(hidden_));
  Status st = draft_->Forward(batch, hidden_in_.data(), *kv_, logits_.data(), g_.data());
  if (!st.ok()) {
    DI_LOG_ERROR("mtp drafter: %s", st.ToString().c_str());
    for (size_t i = 0; i < inputs.size(); ++i)
      Restart(*state[i], inputs[i].start_pos + inputs[i].num_computed);
    return out;
  }
  for (size_t i : caught) {
    Sequence& s = *state[i];
    const auto ready = static_cast<int64_t>(s.next.size());
    s.len += ready;
    s.pending.erase(s.pending.begin(), s.pending.begin() + ready * hidden_);
    s.next.clear();
  }
  catch_up_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // 3. Chain: depth d's draft from depth d-1's (g, draft), batched per depth.
  std::vector<float> prefix_confidence(proposing.size(), 1.0f);  // per proposing entry
  for (int32_t depth = 0; !proposing.empty(); ++depth) {
    std::vector<size_t> still;
    std::vector<float> still_prefix;
    for (size_t r = 0; r < proposing.size(); ++r) {
      const size_t i = proposing[r];
      const float* row = logits_.data() + r * static_cast<size_t>(vocab_);
      const int32_t best = ArgMax(row, vocab_);
      out[i].tokens.push_back(best);
      const float confidence = ops::ArgMaxProbability(row, vocab_, best);
      out[i].confidence.push_back(confidence);
      prefix_confidence[r] *= inputs[i].calibration != nullptr
                                  ? static_cast<float>(inputs[i].calibration->Calibrated(depth, confidence))
                                  : confidence;
      if (depth + 1 < inputs[i].max_tokens && prefix_confidence[r] >= inputs[i].stop_below_confidence) {
        still.push_back(i);  // in proposing order
        still_prefix.push_back(prefix_confidence[r]);
      }
    }
    if (still.empty()) break;
    ForwardBatch chain;
    hidden_in_.clear();
    for (size_t r = 0, next = 0; r < proposing.size(); ++r) {
      const size_t i = proposing[r];
      if (next == still.size() || still[next] != i) continue;
      ++next;
      const Sequence& s = *state[i];
      SequenceChunk c;
      c.tokens = {out[i].tokens.back()};
      c.start_pos = s.len + depth;  // the draft's own position, after the newest true one
      c.block_table = s.blocks;
      hidden_in_.insert(hidden_in_.end(), g_.begin() + static_cast<std::ptrdiff_t>(r * hidden_),
                        g_.begin() + static_cast<std::ptrdiff_t>((r + 1) * hidden_));
      chain.seqs.push_back(std::move(c));
    }
    rows = still.size();
    logits_.resize(rows * static_cast<size_t>(vocab_));
    g_next_.resize(rows * static_cast<size_t>(hidden_));
    st = draft_->Forward(chain, hidden_in_.data(), *kv_, logits_.data(), g_next_.data());
    if (!st.ok()) {
      DI_LOG_ERROR("mtp drafter: %s", st.ToString().c_str());
      break;
    }
    g_.swap(g_next_);
    proposing = std::move(still);
    prefix_confidence = std::move(still_prefix);
  }
  return out;
}

}  // namespace deepinfer
