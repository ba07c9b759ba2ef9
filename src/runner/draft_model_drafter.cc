#include "runner/draft_model_drafter.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "core/log.h"
#include "model/ops.h"
#include "sampling/penalties.h"

namespace deepinfer {
namespace {

// The draw stream of independently sampled (rejection) drafts: apart from
// every stream the target samples with (n > 1 uses small draw numbers).
constexpr uint32_t kIndependentDraftDraw = 0x40000000u;

}  // namespace

DraftModelDrafter::DraftModelDrafter(std::unique_ptr<Model> model, int64_t num_blocks, int64_t block_size,
                                     Sampling sampling)
    : model_(std::move(model)),
      kv_(std::make_unique<KvCache>(model_->config(), num_blocks, block_size)),
      pool_(num_blocks, block_size),
      vocab_(model_->config().vocab_size),
      sampling_(sampling) {}

void DraftModelDrafter::Forget(Sequence& s) {
  pool_.Release(&s.blocks);
  s.computed.clear();
}

void DraftModelDrafter::Release(std::span<const int64_t> request_ids) {
  for (int64_t id : request_ids) {
    auto it = seqs_.find(id);
    if (it == seqs_.end()) continue;
    Forget(it->second);
    seqs_.erase(it);
  }
}

void DraftModelDrafter::Choose(const DraftInput& in, const float* logits, int64_t position,
                               DraftProposal* p) {
  const SamplingParams* params = in.sampling;
  if (params == nullptr || params->IsGreedy()) {
    const int32_t best = ArgMax(logits, vocab_);
    p->tokens.push_back(best);
    p->confidence.push_back(ops::ArgMaxProbability(logits, vocab_, best));
    return;
  }
  const float* work = logits;
  if (HasLogitAdjustments(*params)) {
    // The target's adjustments, over the outputs so far and the earlier drafts.
    scratch_.assign(logits, logits + vocab_);
    const auto prompt = static_cast<size_t>(
        std::min<int64_t>(in.num_prompt_tokens, static_cast<int64_t>(in.sequence.size())));
    outputs_.assign(in.sequence.begin() + static_cast<std::ptrdiff_t>(prompt), in.sequence.end());
    outputs_.insert(outputs_.end(), p->tokens.begin(), p->tokens.end());
    ApplyLogitAdjustments(*params, in.sequence.first(prompt), outputs_, scratch_.data(), vocab_);
    work = scratch_.data();
  }
  probs_.resize(static_cast<size_t>(vocab_));
  SamplingProbabilities(work, vocab_, *params, probs_.data());
  const uint32_t draw =
      sampling_ == Sampling::kCoupled ? in.draw_stream : in.draw_stream ^ kIndependentDraftDraw;
  const int32_t token = SampleToken(work, vocab_, *params, static_cast<uint64_t>(position), draw);
  p->tokens.push_back(token);
  p->confidence.push_back(probs_[static_cast<size_t>(token)]);
  if (sampling_ == Sampling::kRejection) p->probs.insert(p->probs.end(), probs_.begin(), probs_.end());
}

std::vector<DraftProposal> DraftModelDrafter::ProposeStep(std::span<const DraftInput> inputs) {
  const auto start = std::chrono::steady_clock::now();
  catch_up_seconds_ = 0.0;
  std::vector<DraftProposal> out(inputs.size());
  // 1. Catch up: per proposing request, the tokens after the common prefix
  // of what the draft KV holds and the known sequence, logits at the newest.
  ForwardBatch batch;
  std::vector<size_t> proposing;  // input index per batch sequence
  std::vector<Sequence*> state;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const DraftInput& in = inputs[i];
    if (in.max_tokens <= 0 || in.sequence.empty()) continue;
    const auto n = static_cast<int64_t>(in.sequence.size());
    if (n + in.max_tokens - 1 > model_->config().max_position) continue;  // past the draft's context
    Sequence& s = seqs_[in.request_id];
    // At most n - 1 positions are reused: the newest token is the input of
    // the row whose logits give draft 1.
    const size_t limit = std::min(s.computed.size(), static_cast<size_t>(n - 1));
    const auto diverge =
        std::mismatch(s.computed.begin(), s.computed.begin() + static_cast<std::ptrdiff_t>(limit),
                      in.sequence.begin())
            .first;
    s.computed.erase(diverge, s.computed.end());
    if (!pool_.Cover(&s.blocks, n + in.max_tokens - 1)) {
      DI_LOG_WARN("draft model: KV pool exhausted; request %lld gets no drafts this step",
                  static_cast<long long>(in.request_id));
      Forget(s);
      continue;
    }
    SequenceChunk c;
    c.start_pos = static_cast<int64_t>(s.computed.size());
    c.tokens.assign(in.sequence.begin() + c.start_pos, in.sequence.end());
    c.block_table = s.blocks;
    c.logits = SequenceChunk::Logits::kLast;
    batch.seqs.push_back(std::move(c));
    proposing.push_back(i);
    state.push_back(&s);
  }
  if (batch.seqs.empty()) return out;
  logits_.resize(proposing.size() * static_cast<size_t>(vocab_));
  Status st = model_->Forward(batch, *kv_, logits_.data());
  if (!st.ok()) {
    DI_LOG_ERROR("draft model: %s", st.ToString().c_str());
    for (Sequence* s : state) Forget(*s);
    return out;
  }
  for (size_t r = 0; r < proposing.size(); ++r) {
    const SequenceChunk& c = batch.seqs[r];
    state[r]->computed.insert(state[r]->computed.end(), c.tokens.begin(), c.tokens.end());
  }
  catch_up_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // 2. Chain: one token per depth, batched over the requests still drafting.
  std::vector<float> prefix_confidence(proposing.size(), 1.0f);
  for (int32_t depth = 0; !proposing.empty(); ++depth) {
    std::vector<size_t> still;
    std::vector<Sequence*> still_state;
    std::vector<float> still_prefix;
    for (size_t r = 0; r < proposing.size(); ++r) {
      const size_t i = proposing[r];
      const DraftInput& in = inputs[i];
      const auto position = static_cast<int64_t>(in.sequence.size()) + depth;
      Choose(in, logits_.data() + r * static_cast<size_t>(vocab_), position, &out[i]);
      const float confidence = out[i].confidence.back();
      prefix_confidence[r] *= in.calibration != nullptr
                                  ? static_cast<float>(in.calibration->Calibrated(depth, confidence))
                                  : confidence;
      if (depth + 1 < in.max_tokens && prefix_confidence[r] >= in.stop_below_confidence) {
        still.push_back(i);
        still_state.push_back(state[r]);
        still_prefix.push_back(prefix_confidence[r]);
      }
    }
    if (still.empty()) break;
    ForwardBatch chain;
    for (size_t r = 0; r < still.size(); ++r) {
      SequenceChunk c;
      c.tokens = {out[still[r]].tokens.back()};
      c.start_pos = static_cast<int64_t>(still_state[r]->computed.size());
      c.block_table = still_state[r]->blocks;
      chain.seqs.push_back(std::move(c));
    }
    logits_.resize(still.size() * static_cast<size_t>(vocab_));
    st = model_->Forward(chain, *kv_, logits_.data());
    if (!st.ok()) {
      DI_LOG_ERROR("draft model: %s", st.ToString().c_str());
      break;
    }
    for (size_t r = 0; r < still.size(); ++r) still_state[r]->computed.push_back(chain.seqs[r].tokens[0]);
    proposing = std::move(still);
    state = std::move(still_state);
    prefix_confidence = std::move(still_prefix);
  }
  return out;
}

}  // namespace deepinfer
