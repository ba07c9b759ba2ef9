#include "runner/step_runner.h"

#include <algorithm>

#include "runner/to_forward_batch.h"

namespace deepinfer {
namespace {
using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

StepRunner::StepRunner(Model& model, KvCache& kv, bool jump_forward)
    : model_(model), kv_(kv), vocab_(model.config().vocab_size), sampler_(vocab_, jump_forward) {}

void StepRunner::SetDrafter(std::unique_ptr<Drafter> drafter, int32_t max_draft_tokens) {
  drafter_ = std::move(drafter);
  max_draft_tokens_ = max_draft_tokens;
}

void StepRunner::CopyBlocks(const std::vector<BlockCopy>& copies) {
  for (const BlockCopy& c : copies) kv_.CopyBlock(c.src, c.dst);
}

StepResult StepRunner::Run(LaunchedStep& step) {
  StepResult result = Sample(step);
  if (result.drafts_pending) MergeDrafts(result, ProposeDrafts());
  return result;
}

void MergeDrafts(StepResult& result, StepDrafts&& drafts) {
  for (auto& [row, proposal] : drafts.proposals) result.rows[row].proposal = std::move(proposal);
  result.draft_seconds = drafts.draft_seconds;
  result.draft_fixed_seconds = drafts.draft_fixed_seconds;
  result.proposed_tokens = drafts.proposed_tokens;
  result.drafts_pending = false;
}

StepResult StepRunner::Sample(LaunchedStep& step) {
  pending_.reset();
  StepResult result;
  result.output.step_id = step.plan.step_id;
  CopyBlocks(step.plan.block_copies);
  if (step.plan.seqs.empty()) return result;

  const ForwardBatch batch = ToForwardBatch(step.plan);
  const auto num_rows = static_cast<size_t>(batch.NumLogitRows());
  logits_.resize(num_rows * static_cast<size_t>(vocab_));

  // Masks of constrained rows, filled while the forward pass runs.
  std::vector<TokenBitmask> masks(step.plan.seqs.size());
  std::vector<size_t> to_fill;
  for (size_t i = 0; i < step.plan.seqs.size(); ++i) {
    SamplingContext* ctx = step.contexts[i].get();
    if (ctx == nullptr || !step.plan.seqs[i].samples) continue;
    if (sampler_.Prepare(step.plan.seqs[i], *ctx, &masks[i])) to_fill.push_back(i);
  }
  if (!to_fill.empty()) {
    mask_worker_.Start([&] {
      for (size_t i : to_fill) sampler_.FillMask(*step.contexts[i], &masks[i]);
    });
  }
  const bool want_hidden = drafter_ != nullptr && step.draft && drafter_->NeedsHidden();
  if (want_hidden) hidden_.resize(static_cast<size_t>(batch.NumTokens() * model_.config().hidden_size));
  const Clock::time_point forward_start = Clock::now();
  result.status =
      model_.ForwardWithHidden(batch, kv_, logits_.data(), want_hidden ? hidden_.data() : nullptr);
  result.forward_seconds = Seconds(Clock::now() - forward_start);
  result.num_tokens = batch.NumTokens();
  mask_worker_.Join();
  if (!result.status.ok()) {
    for (const ScheduledSequence& seq : step.plan.seqs) result.failed_requests.push_back(seq.request_id);
    return result;
  }

  size_t row = 0;
  std::vector<int64_t> row_of_seq(step.plan.seqs.size(), -1);
  for (size_t i = 0; i < step.plan.seqs.size(); ++i) {
    const ScheduledSequence& seq = step.plan.seqs[i];
    const SequenceChunk::Logits mode = batch.seqs[i].logits;
    const size_t num_rows = mode == SequenceChunk::Logits::kAll    ? seq.tokens.size()
                            : mode == SequenceChunk::Logits::kLast ? 1
                                                                   : 0;
    const float* first_row = logits_.data() + row * static_cast<size_t>(vocab_);
    row += num_rows;
    if (!seq.prompt_targets.empty()) {
      // Converted now: the rows are overwritten by the next step.
      result.prompt_logprobs.push_back(
          {seq.request_id, seq.start_pos + 1,
           ComputeTokenLogprobs(first_row, vocab_, seq.prompt_targets, seq.prompt_logprobs)});
    }
    if (!seq.samples) continue;
    // The sampling rows (the last token's, then the drafts') end the chunk's rows.
    const float* logits =
        first_row + (num_rows - 1 - static_cast<size_t>(seq.num_draft_tokens)) * static_cast<size_t>(vocab_);
    SamplingContext* ctx = step.contexts[i].get();
    if (ctx == nullptr) {  // cannot happen while contexts live exactly as long as requests
      SampledRow broken;
      broken.request_id = seq.request_id;
      broken.tokens = {ArgMax(logits, vocab_)};
      broken.error = "internal error: no sampling context";
      result.output.seqs.push_back({seq.request_id, broken.tokens});
      result.rows.push_back(std::move(broken));
      continue;
    }
    SampledRow sampled = sampler_.Sample(seq, *ctx, logits, masks[i].empty() ? nullptr : &masks[i]);
    SequenceOutput out{seq.request_id, sampled.tokens};
    out.tokens.insert(out.tokens.end(), sampled.forced.begin(), sampled.forced.end());
    out.num_forced = static_cast<int32_t>(sampled.forced.size());
    result.output.seqs.push_back(std::move(out));
    row_of_seq[i] = static_cast<int64_t>(result.rows.size());
    result.rows.push_back(std::move(sampled));
  }
  if (drafter_ != nullptr) {
    if (!step.released.empty()) drafter_->Release(step.released);
    if (step.draft) {
      PrepareDrafts(step, row_of_seq, result);
      result.drafts_pending = !pending_->inputs.empty();
      if (!result.drafts_pending) pending_.reset();
    }
  }
  if (!result.prompt_logprobs.empty()) {
    // A prompt-logprobs chunk's [chunk, vocab] rows are not kept past its step.
    logits_.clear();
    logits_.shrink_to_fit();
  }
  return result;
}

void StepRunner::PrepareDrafts(const LaunchedStep& step, const std::vector<int64_t>& row_of_seq,
                               const StepResult& result) {
  const int64_t h = model_.config().hidden_size;
  const bool wants_sequence = drafter_->NeedsSequence();
  PendingDrafts& pending = pending_.emplace();
  pending.calibration = step.draft_calibration;
  std::vector<DraftInput>& inputs = pending.inputs;
  // Token spans are offsets into draft_tokens_ until it stops growing.
  struct Spans {
    size_t tokens_begin, tokens_end, sequence_begin, sequence_end;
  };
  std::vector<Spans> spans;
  draft_tokens_.clear();
  int64_t token_offset = 0;
  for (size_t i = 0; i < step.plan.seqs.size(); ++i) {
    const ScheduledSequence& seq = step.plan.seqs[i];
    const int64_t offset = token_offset;
    token_offset += static_cast<int64_t>(seq.tokens.size());
    const int64_t r = row_of_seq[i];
    const SampledRow* row = r >= 0 ? &result.rows[static_cast<size_t>(r)] : nullptr;
    if (seq.samples && (row == nullptr || !row->error.empty())) continue;  // the request fails
    const auto inputs_kept = static_cast<int64_t>(seq.tokens.size()) - seq.num_draft_tokens;
    DraftInput in;
    in.request_id = seq.request_id;
    in.start_pos = seq.start_pos;
    in.num_computed = inputs_kept;
    in.hidden = hidden_.empty() ? nullptr : hidden_.data() + offset * h;
    Spans sp{};
    sp.tokens_begin = draft_tokens_.size();
    draft_tokens_.insert(draft_tokens_.end(), seq.tokens.begin(), seq.tokens.begin() + inputs_kept);
    if (row != nullptr) {
      // Accepted drafts were computed too; the row's tokens start with them.
      const auto accepted =
          std::min<int64_t>(static_cast<int64_t>(row->tokens.size()) - 1, seq.num_draft_tokens);
      in.num_computed += accepted;
      draft_tokens_.insert(draft_tokens_.end(), row->tokens.begin(), row->tokens.end());
      draft_tokens_.insert(draft_tokens_.end(), row->forced.begin(), row->forced.end());
    }
    sp.tokens_end = draft_tokens_.size();
    sp.sequence_begin = sp.sequence_end = draft_tokens_.size();
    if (row != nullptr && row->forced.empty()) {
      if (wants_sequence) {
        const std::vector<int32_t>& known = step.contexts[i]->request->tokens;
        draft_tokens_.insert(draft_tokens_.end(), known.begin(), known.end());
        draft_tokens_.insert(draft_tokens_.end(), row->tokens.begin(), row->tokens.end());
        sp.sequence_end = draft_tokens_.size();
      }
      in.max_tokens = max_draft_tokens_;
      in.stop_below_confidence = step.draft_stop_below_confidence;
      in.calibration = pending.calibration.get();
      const SamplingContext& ctx = *step.contexts[i];
      in.sampling = &ctx.params;
      in.draw_stream = ctx.draw_stream;
      in.num_prompt_tokens = ctx.request->num_prompt_tokens;
    }
    inputs.push_back(in);
    pending.input_row.push_back(r);
    pending.contexts.push_back(step.contexts[i]);
    spans.push_back(sp);
  }
  for (size_t j = 0; j < inputs.size(); ++j) {
    const int32_t* base = draft_tokens_.data();
    inputs[j].tokens = {base + spans[j].tokens_begin, base + spans[j].tokens_end};
    inputs[j].sequence = {base + spans[j].sequence_begin, base + spans[j].sequence_end};
  }
}

StepDrafts StepRunner::ProposeDrafts() {
  StepDrafts drafts;
  if (!pending_) return drafts;
  const PendingDrafts pending = std::move(*pending_);
  pending_.reset();
  const std::vector<DraftInput>& inputs = pending.inputs;
  const Clock::time_point draft_start = Clock::now();
  std::vector<DraftProposal> proposals = drafter_->ProposeStep(inputs);
  drafts.draft_seconds = Seconds(Clock::now() - draft_start);
  drafts.draft_fixed_seconds = std::min(drafter_->last_fixed_seconds(), drafts.draft_seconds);
  for (size_t j = 0; j < inputs.size() && j < proposals.size(); ++j) {
    if (pending.input_row[j] < 0 || inputs[j].max_tokens == 0) continue;
    DraftProposal& p = proposals[j];
    p.tokens.resize(std::min(p.tokens.size(), static_cast<size_t>(inputs[j].max_tokens)));
    p.confidence.resize(p.tokens.size(), 0.0f);
    // Rejection drafts: their distributions stay with the request's context
    // (its draft_* fields are this thread's own: the engine may be committing).
    if (!p.probs.empty()) {
      SamplingContext& ctx = *pending.contexts[j];
      ctx.draft_position = static_cast<int64_t>(inputs[j].sequence.size());
      ctx.draft_tokens = p.tokens;
      p.probs.resize(p.tokens.size() * static_cast<size_t>(vocab_));
      ctx.draft_probs = std::move(p.probs);
      p.probs.clear();
    }
    drafts.proposed_tokens += static_cast<int64_t>(p.tokens.size());
    drafts.proposals.emplace_back(static_cast<size_t>(pending.input_row[j]), std::move(p));
  }
  return drafts;
}

StepExecutor::StepExecutor(StepRunner& runner) : runner_(runner), thread_([this] { Loop(); }) {}

StepExecutor::~StepExecutor() {
  {
    MutexLock lock(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void StepExecutor::Launch(LaunchedStep step) {
  {
    MutexLock lock(mu_);
    pending_ = std::move(step);
    pending_follows_step_ = !idle_wait_since_launch_;
    idle_wait_since_launch_ = false;
  }
  cv_.notify_all();
}

StepResult StepExecutor::Wait() {
  MutexLock lock(mu_);
  while (!done_.has_value()) cv_.wait(lock.native());
  StepResult result = std::move(*done_);
  done_.reset();
  return result;
}

StepDrafts StepExecutor::WaitDrafts() {
  MutexLock lock(mu_);
  while (!drafts_.has_value()) cv_.wait(lock.native());
  StepDrafts drafts = std::move(*drafts_);
  drafts_.reset();
  return drafts;
}

void StepExecutor::NoteIdleWait() {
  MutexLock lock(mu_);
  idle_wait_since_launch_ = true;
}

double StepExecutor::busy_seconds() const {
  MutexLock lock(mu_);
  return busy_seconds_;
}

double StepExecutor::idle_seconds() const {
  MutexLock lock(mu_);
  return idle_seconds_;
}

void StepExecutor::Loop() {
  for (;;) {
    LaunchedStep step;
    bool follows_step = false;
    {
      MutexLock lock(mu_);
      while (!quit_ && !pending_.has_value()) cv_.wait(lock.native());
      if (quit_) return;
      step = std::move(*pending_);
      pending_.reset();
      follows_step = pending_follows_step_;
    }
    const Clock::time_point start = Clock::now();
    StepResult result = runner_.Sample(step);
    if (!result.drafts_pending) {
      Finish(start, follows_step, std::move(result), std::nullopt);
      continue;
    }
    {
      MutexLock lock(mu_);
      done_ = std::move(result);
    }
    cv_.notify_all();
    // The engine commits the sampled rows while the drafter proposes.
    Finish(start, follows_step, std::nullopt, runner_.ProposeDrafts());
  }
}

void StepExecutor::Finish(Clock::time_point start, bool follows_step, std::optional<StepResult> result,
                          std::optional<StepDrafts> drafts) {
  const Clock::time_point end = Clock::now();
  const double idle = follows_step && last_end_ != Clock::time_point{} ? Seconds(start - last_end_) : 0.0;
  last_end_ = end;
  {
    // The step's last part and its accounting together: the engine reads
    // them complete after Wait (or WaitDrafts).
    MutexLock lock(mu_);
    if (result) done_ = std::move(result);
    if (drafts) drafts_ = std::move(drafts);
    busy_seconds_ += Seconds(end - start);
    idle_seconds_ += idle;
  }
  cv_.notify_all();
}

}  // namespace deepinfer
