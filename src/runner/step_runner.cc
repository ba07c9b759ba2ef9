#include "runner/step_runner.h"

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
  const Clock::time_point forward_start = Clock::now();
  result.status = model_.Forward(batch, kv_, logits_.data());
  result.forward_seconds = Seconds(Clock::now() - forward_start);
  result.num_tokens = batch.NumTokens();
  mask_worker_.Join();
  if (!result.status.ok()) {
    for (const ScheduledSequence& seq : step.plan.seqs) result.failed_requests.push_back(seq.request_id);
    return result;
  }

  size_t row = 0;
  for (size_t i = 0; i < step.plan.seqs.size(); ++i) {
    const ScheduledSequence& seq = step.plan.seqs[i];
    if (!seq.samples) continue;
    const float* logits = logits_.data() + row * static_cast<size_t>(vocab_);
    row += 1 + static_cast<size_t>(seq.num_draft_tokens);
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
    if (drafter_ != nullptr && sampled.error.empty() && sampled.forced.empty()) {
      // The drafts continue the committed tokens and what this row sampled.
      sequence_.assign(ctx->request->tokens.begin(), ctx->request->tokens.end());
      sequence_.insert(sequence_.end(), sampled.tokens.begin(), sampled.tokens.end());
      sampled.proposal = drafter_->Propose(sequence_, max_draft_tokens_);
    }
    SequenceOutput out{seq.request_id, sampled.tokens};
    out.tokens.insert(out.tokens.end(), sampled.forced.begin(), sampled.forced.end());
    out.num_forced = static_cast<int32_t>(sampled.forced.size());
    result.output.seqs.push_back(std::move(out));
    result.rows.push_back(std::move(sampled));
  }
  return result;
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
    StepResult result = runner_.Run(step);
    const Clock::time_point end = Clock::now();
    const double idle = follows_step && last_end_ != Clock::time_point{} ? Seconds(start - last_end_) : 0.0;
    last_end_ = end;
    {
      MutexLock lock(mu_);
      done_ = std::move(result);
      busy_seconds_ += Seconds(end - start);
      idle_seconds_ += idle;
    }
    cv_.notify_all();
  }
}

}  // namespace deepinfer
