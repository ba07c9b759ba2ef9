#include "engine/step_runner.h"

#include <cmath>
#include <cstring>
#include <future>

#include "sampling/logprobs.h"
#include "sampling/penalties.h"

namespace deepinfer {
namespace {
using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Brings ctx.output_tokens (and the constraint) to exactly the outputs before
// `position`, taking what the row itself carries (a recomputed prefill holds
// the outputs again) and dropping any tail the scheduler no longer has.
void SyncOutputs(const ScheduledSequence& seq, int64_t position, SamplingContext& ctx) {
  const int64_t num_prompt = static_cast<int64_t>(ctx.prompt_tokens.size());
  const int64_t want = std::max<int64_t>(0, position - num_prompt);
  if (static_cast<int64_t>(ctx.output_tokens.size()) < want) ctx.output_tokens.resize(static_cast<size_t>(want), 0);
  for (size_t j = 0; j < seq.tokens.size(); ++j) {
    const int64_t out_index = seq.start_pos + static_cast<int64_t>(j) - num_prompt;
    if (out_index >= 0 && out_index < want) ctx.output_tokens[static_cast<size_t>(out_index)] = seq.tokens[j];
  }
  ctx.output_tokens.resize(static_cast<size_t>(want));
  if (ctx.constraint) {
    if (ctx.constraint_accepted > want) {
      ctx.constraint->Rollback(static_cast<int>(ctx.constraint_accepted - want));
      ctx.constraint_accepted = want;
    }
    while (ctx.constraint_accepted < want) {
      ctx.constraint->Accept(ctx.output_tokens[static_cast<size_t>(ctx.constraint_accepted)]);
      ++ctx.constraint_accepted;
    }
  }
}

int64_t SampledPosition(const ScheduledSequence& seq) {
  return seq.start_pos + static_cast<int64_t>(seq.tokens.size());
}

// Finish-soon: when a constrained request's remaining output budget is about
// to fall short of the shortest valid ending, the next token is that
// ending's first (else an output cut at max_tokens would be invalid, e.g.
// JSON with an unclosed string). -1 when there is room (or no ending is known).
// The window bounds how often the completion search runs.
int32_t FinishSoonToken(SamplingContext& ctx) {
  constexpr int64_t kWindow = 64;
  const int64_t remaining = ctx.output_budget - static_cast<int64_t>(ctx.output_tokens.size());
  if (remaining > kWindow || ctx.constraint->IsComplete()) return -1;
  const std::vector<int32_t> finish = ctx.constraint->FinishTokens();
  // One token of slack: a path found in bytes may tokenize one token longer
  // after the next step's choice.
  if (finish.empty() || static_cast<int64_t>(finish.size()) + 1 < remaining) return -1;
  return finish.front();
}
}  // namespace

StepRunner::StepRunner(Model& model, KvCache& kv, bool jump_forward)
    : model_(model),
      kv_(kv),
      vocab_(model.config().vocab_size),
      jump_forward_(jump_forward),
      scratch_(static_cast<size_t>(vocab_)) {}

void StepRunner::CopyBlocks(const std::vector<BlockCopy>& copies) {
  // A block of one layer is block_size * kv_dim contiguous K floats and
  // block_size * v_dim V floats (KvCache layout); MLA caches have no V (v_dim 0).
  const size_t k_floats = static_cast<size_t>(kv_.block_size() * kv_.kv_dim());
  const size_t v_floats = static_cast<size_t>(kv_.block_size() * kv_.v_dim());
  for (const BlockCopy& c : copies) {
    for (int64_t layer = 0; layer < kv_.num_layers(); ++layer) {
      std::memcpy(kv_.K(layer, c.dst, 0), kv_.K(layer, c.src, 0), k_floats * sizeof(float));
      if (v_floats > 0) std::memcpy(kv_.V(layer, c.dst, 0), kv_.V(layer, c.src, 0), v_floats * sizeof(float));
    }
  }
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
  std::vector<size_t> constrained;
  for (size_t i = 0; i < step.plan.seqs.size(); ++i) {
    SamplingContext* ctx = step.contexts[i].get();
    if (ctx == nullptr || !step.plan.seqs[i].samples) continue;
    SyncOutputs(step.plan.seqs[i], SampledPosition(step.plan.seqs[i]), *ctx);
    if (ctx->constraint) {
      masks[i].Reset(static_cast<size_t>(vocab_));
      if (const int32_t finish = FinishSoonToken(*ctx); finish >= 0 && finish < vocab_) {
        masks[i].Set(finish);  // steer to a valid ending
      } else {
        constrained.push_back(i);
      }
    }
  }
  std::future<void> mask_job;
  if (!constrained.empty()) {
    mask_job = std::async(std::launch::async, [&] {
      for (size_t i : constrained) step.contexts[i]->constraint->FillAllowedMask(&masks[i]);
    });
  }
  result.status = model_.Forward(batch, kv_, logits_.data());
  if (mask_job.valid()) mask_job.get();
  if (!result.status.ok()) {
    for (const ScheduledSequence& seq : step.plan.seqs) result.failed_requests.push_back(seq.request_id);
    return result;
  }

  size_t row = 0;
  for (size_t i = 0; i < step.plan.seqs.size(); ++i) {
    const ScheduledSequence& seq = step.plan.seqs[i];
    if (!seq.samples) continue;
    const float* logits = logits_.data() + row * static_cast<size_t>(vocab_);
    ++row;
    SamplingContext* ctx = step.contexts[i].get();
    if (ctx == nullptr) {  // cannot happen while contexts live exactly as long as requests
      SampledRow broken{seq.request_id, ArgMax(logits, vocab_), std::nullopt, "internal error: no sampling context", {}};
      result.output.seqs.push_back({seq.request_id, {broken.token}});
      result.rows.push_back(std::move(broken));
      continue;
    }
    SampledRow sampled = SampleRow(seq, *ctx, logits, masks[i].empty() ? nullptr : &masks[i]);
    SequenceOutput out{seq.request_id, {sampled.token}};
    out.tokens.insert(out.tokens.end(), sampled.forced.begin(), sampled.forced.end());
    out.num_forced = static_cast<int32_t>(sampled.forced.size());
    result.output.seqs.push_back(std::move(out));
    result.rows.push_back(std::move(sampled));
  }
  return result;
}

SampledRow StepRunner::SampleRow(const ScheduledSequence& seq, SamplingContext& ctx, const float* logits,
                                 const TokenBitmask* mask) {
  SampledRow out;
  out.request_id = seq.request_id;
  const float* work = logits;
  if (mask != nullptr || HasLogitAdjustments(ctx.params)) {
    std::memcpy(scratch_.data(), logits, scratch_.size() * sizeof(float));
    ApplyLogitAdjustments(ctx.params, ctx.prompt_tokens, ctx.output_tokens, scratch_.data(), vocab_);
    if (mask != nullptr) ApplyAllowedMask(*mask, scratch_.data());
    work = scratch_.data();
  }
  const int64_t position = SampledPosition(seq);
  out.token = SampleToken(work, vocab_, ctx.params, static_cast<uint64_t>(position), ctx.draw_stream);
  if (mask != nullptr && !mask->Test(out.token)) {
    out.error = "structured output: the constraint allows no token at position " + std::to_string(position);
  }
  if (ctx.logprobs >= 0) {
    LogprobResult lp = ComputeLogprobs(logits, vocab_, out.token, ctx.logprobs);
    out.logprob = TokenLogprob{out.token, lp.logprob, std::move(lp.top)};
  }
  ctx.output_tokens.push_back(out.token);
  if (ctx.constraint && out.error.empty()) {
    if (ctx.constraint->Accept(out.token)) {
      ++ctx.constraint_accepted;
    } else {
      out.error = "structured output: the constraint rejected token " + std::to_string(out.token);
    }
  }
  if (jump_forward_ && ctx.constraint && out.error.empty() && ctx.logprobs < 0 && !ctx.constraint->IsComplete()) {
    // The scheduler may drop these (SequenceOutput::num_forced); the next
    // row's SyncOutputs then rolls the constraint back to what it kept.
    for (int32_t token : ctx.constraint->ForcedTokens()) {
      if (!ctx.constraint->Accept(token)) break;
      ++ctx.constraint_accepted;
      ctx.output_tokens.push_back(token);
      out.forced.push_back(token);
    }
  }
  return out;
}

StepExecutor::StepExecutor(StepRunner& runner) : runner_(runner), thread_([this] { Loop(); }) {}

StepExecutor::~StepExecutor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void StepExecutor::Launch(LaunchedStep step) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_ = std::move(step);
  }
  cv_.notify_all();
}

StepResult StepExecutor::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_.has_value(); });
  StepResult result = std::move(*done_);
  done_.reset();
  return result;
}

void StepExecutor::Loop() {
  for (;;) {
    LaunchedStep step;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return quit_ || pending_.has_value(); });
      if (quit_) return;
      step = std::move(*pending_);
      pending_.reset();
    }
    const Clock::time_point start = Clock::now();
    StepResult result = runner_.Run(step);
    const Clock::time_point end = Clock::now();
    result.busy_seconds = Seconds(end - start);
    if (step.follows_previous_step && last_end_ != Clock::time_point{}) result.idle_seconds = Seconds(start - last_end_);
    last_end_ = end;
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = std::move(result);
    }
    cv_.notify_all();
  }
}

}  // namespace deepinfer
