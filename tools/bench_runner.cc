#include "tools/bench_runner.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <random>
#include <sstream>

#include "kv/kv_manager.h"
#include "runner/step_runner.h"

namespace deepinfer::tools {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t MaxBatch(const BenchConfig& c) {
  int64_t b = 1;  // the prefill measurement uses one sequence
  for (int64_t x : c.batches) b = std::max(b, x);
  return b;
}

// Full prompt blocks shared by every sequence (0 unless shared_prompt).
int64_t SharedBlocks(const BenchConfig& c) { return c.shared_prompt ? c.prompt_tokens / c.block_size : 0; }

// Blocks each sequence owns on top of the shared ones.
int64_t OwnBlocks(const BenchConfig& c) {
  return CeilDiv(c.prompt_tokens + c.gen_tokens, c.block_size) - SharedBlocks(c);
}

// MemAvailable from /proc/meminfo in bytes; -1 when unknown.
int64_t MemAvailableBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  int64_t value = 0;
  while (in >> key >> value >> unit) {
    if (key == "MemAvailable:") return value * 1024;
  }
  return -1;
}

std::string GiB(int64_t bytes) {
  std::ostringstream os;
  os.precision(2);
  os << std::fixed << static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0) << " GiB";
  return os.str();
}

// The sequences of one batch size: prompts, block tables, the greedy
// sampling contexts the runner samples them with (request id = index) and
// the token record each reads — the bench plays the scheduler's part and
// brings it to each sampling row's position before the step (RunStep).
struct Sequences {
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::vector<int32_t>> tables;
  std::vector<std::shared_ptr<SamplingContext>> contexts;
  std::vector<std::shared_ptr<Request>> requests;
};

Sequences MakeSequences(const BenchConfig& c, int64_t vocab, int64_t batch) {
  Sequences s;
  const int64_t shared = SharedBlocks(c), own = OwnBlocks(c);
  std::mt19937_64 rng(c.seed);
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(vocab - 1));
  for (int64_t i = 0; i < batch; ++i) {
    if (i == 0 || !c.shared_prompt) {
      std::vector<int32_t> p(static_cast<size_t>(c.prompt_tokens));
      for (auto& t : p) t = token(rng);
      s.prompts.push_back(std::move(p));
    } else {
      s.prompts.push_back(s.prompts[0]);
    }
    std::vector<int32_t> table;
    for (int64_t b = 0; b < shared; ++b) table.push_back(static_cast<int32_t>(b));
    for (int64_t b = 0; b < own; ++b) table.push_back(static_cast<int32_t>(shared + i * own + b));
    s.tables.push_back(std::move(table));
    auto ctx = std::make_shared<SamplingContext>();
    ctx->id = static_cast<RequestId>(i);
    ctx->params.temperature = 0.0;
    auto request = std::make_shared<Request>();
    request->id = ctx->id;
    request->tokens = s.prompts.back();
    request->num_prompt_tokens = c.prompt_tokens;
    ctx->request = request;
    ctx->output_budget = c.gen_tokens;
    s.requests.push_back(std::move(request));
    s.contexts.push_back(std::move(ctx));
  }
  return s;
}

// Runs one step of `rows` (request id = sequence index) through the runner:
// the forward pass, then the greedy token of every sampling row.
StatusOr<StepResult> RunStep(StepRunner& runner, const Sequences& seqs, std::vector<ScheduledSequence> rows) {
  LaunchedStep step;
  for (const ScheduledSequence& row : rows) {
    step.contexts.push_back(row.samples ? seqs.contexts[static_cast<size_t>(row.request_id)] : nullptr);
    if (!row.samples) continue;
    // The record holds exactly the tokens before the row's sampled position
    // (rounds restart at position 0; earlier positions were computed before).
    std::vector<int32_t>& tokens = seqs.requests[static_cast<size_t>(row.request_id)]->tokens;
    tokens.resize(static_cast<size_t>(row.start_pos));
    tokens.insert(tokens.end(), row.tokens.begin(), row.tokens.end());
  }
  step.plan.seqs = std::move(rows);
  StepResult result = runner.Run(step);
  DI_RETURN_IF_ERROR(result.status);
  return result;
}

// A piece of prompt still to prefill: positions [pos, end) of sequence seq.
struct PendingPrefill {
  size_t seq;
  int64_t pos, end;
};

// Prefills the pieces in order, packing up to `chunk` tokens per step (a
// long prompt spans several steps, short ones share a step), the way a
// token-budget scheduler would. `on_step` is called after each step.
Status Prefill(StepRunner& runner, const Sequences& seqs, std::vector<PendingPrefill> todo, int64_t chunk,
               const std::function<void()>& on_step) {
  size_t next = 0;
  while (next < todo.size()) {
    std::vector<ScheduledSequence> rows;
    int64_t budget = chunk;
    while (next < todo.size() && budget > 0) {
      PendingPrefill& p = todo[next];
      const int64_t n = std::min(budget, p.end - p.pos);
      ScheduledSequence row;
      row.request_id = static_cast<RequestId>(p.seq);
      const auto& prompt = seqs.prompts[p.seq];
      row.tokens.assign(prompt.begin() + p.pos, prompt.begin() + p.pos + n);
      row.start_pos = p.pos;
      row.block_table = seqs.tables[p.seq];
      row.samples = p.pos + n == p.end;  // the first token, as a server would pick it
      rows.push_back(std::move(row));
      p.pos += n;
      budget -= n;
      if (p.pos == p.end) ++next;
    }
    DI_RETURN_IF_ERROR(RunStep(runner, seqs, std::move(rows)).status());
    if (on_step) on_step();
  }
  return Status::Ok();
}

int64_t PrefillSteps(int64_t tokens, int64_t chunk) { return CeilDiv(tokens, chunk); }

}  // namespace

int64_t BenchKvBlocks(const BenchConfig& c) { return SharedBlocks(c) + MaxBatch(c) * OwnBlocks(c); }

int64_t BenchKvBytesPerToken(const BenchConfig& c, const ModelConfig& m) {
  return KvCache(m, 1, 1, c.kv_dtype).BytesPerToken();
}

int64_t BenchKvBytes(const BenchConfig& c, const ModelConfig& m) {
  return BenchKvBlocks(c) * c.block_size * BenchKvBytesPerToken(c, m);
}

int64_t MaxConcurrentSequences(const BenchConfig& c, const ModelConfig& m, int64_t kv_cache_memory) {
  const bool windowed =
      std::any_of(m.sliding_window.begin(), m.sliding_window.end(), [](int64_t w) { return w > 0; });
  if (windowed && !c.swa_full_kv) {
    const int64_t pages = kv_cache_memory / (c.block_size * BenchKvBytesPerToken(c, m) / m.num_layers);
    const KvManager kv(KvConfig{.num_blocks = 1,
                                .block_size = static_cast<int32_t>(c.block_size),
                                .layer_windows = m.sliding_window});
    // Less the copy-on-write page per layer the admission bound reserves (no forks here).
    const int64_t per_seq = kv.MaxUnitsForSequence(c.prompt_tokens + c.gen_tokens, 1) - m.num_layers;
    return pages / per_seq;
  }
  const int64_t blocks = kv_cache_memory / (c.block_size * BenchKvBytesPerToken(c, m));
  return std::max<int64_t>(0, blocks - SharedBlocks(c)) / OwnBlocks(c);
}

Status ValidateBenchConfig(const BenchConfig& c, const ModelConfig& m) {
  if (c.prompt_tokens < 1 || c.gen_tokens < 1) {
    return InvalidArgument("--prompt-tokens and --gen-tokens must be >= 1");
  }
  if (c.batches.empty()) return InvalidArgument("--batch needs at least one batch size");
  for (int64_t b : c.batches) {
    if (b < 1 || b > 4096) {
      return InvalidArgument("--batch sizes must be in [1, 4096], got " + std::to_string(b));
    }
  }
  if (c.prefill_chunk < 1 || c.rounds < 1 || c.block_size < 1) {
    return InvalidArgument("--prefill-chunk, --rounds and the block size must be >= 1");
  }
  const int64_t context = c.prompt_tokens + c.gen_tokens;
  if (context > m.max_position) {
    return InvalidArgument("--prompt-tokens + --gen-tokens = " + std::to_string(context) +
                           " exceeds the model's context length " + std::to_string(m.max_position));
  }
  DI_RETURN_IF_ERROR(KvCache::CheckDType(m, c.kv_dtype));
  const int64_t kv_bytes = BenchKvBytes(c, m);
  const int64_t available = MemAvailableBytes();
  // Leave a tenth of the free memory for activations, the logits and the OS.
  if (available > 0 && kv_bytes > available / 10 * 9) {
    return ResourceExhausted("the KV cache for " + std::to_string(MaxBatch(c)) + " x (" +
                             std::to_string(c.prompt_tokens) + " + " + std::to_string(c.gen_tokens) +
                             ") tokens needs " + GiB(kv_bytes) + " but only " + GiB(available) +
                             " of memory is available; lower --batch or the token counts" +
                             (c.shared_prompt ? "" : ", or pass --shared-prompt"));
  }
  return Status::Ok();
}

StatusOr<BenchResult> RunBench(Model& model, const BenchConfig& c, const BenchProgress& progress) {
  const ModelConfig& m = model.config();
  DI_RETURN_IF_ERROR(ValidateBenchConfig(c, m));
  BenchResult r;
  KvCache kv(m, BenchKvBlocks(c), c.block_size, c.kv_dtype);
  StepRunner runner(model, kv);
  r.kv_cache_bytes = BenchKvBytes(c, m);
  const auto report = [&](const std::string& phase, int64_t done, int64_t total) {
    if (progress) progress(phase, done, total);
  };

  // Warm-up: touches every weight page and wakes the thread pool.
  Sequences one = MakeSequences(c, m.vocab_size, 1);
  DI_RETURN_IF_ERROR(
      Prefill(runner, one, {{0, 0, std::min<int64_t>(c.prompt_tokens, 16)}}, c.prefill_chunk, nullptr));

  // Prefill / time to first token: one prompt, from an empty cache each round.
  const int64_t prefill_steps = PrefillSteps(c.prompt_tokens, c.prefill_chunk);
  int64_t done = 0;
  for (int64_t round = 0; round < c.rounds; ++round) {
    const auto t0 = Clock::now();
    DI_RETURN_IF_ERROR(Prefill(runner, one, {{0, 0, c.prompt_tokens}}, c.prefill_chunk,
                               [&] { report("prefill", ++done, prefill_steps * c.rounds); }));
    r.prefill_seconds.push_back(SecondsSince(t0));
  }

  for (int64_t batch_size : c.batches) {
    Sequences seqs = MakeSequences(c, m.vocab_size, batch_size);
    std::vector<PendingPrefill> todo;
    for (int64_t s = 0; s < batch_size; ++s) {
      // With a shared prompt, sequence 0 writes the shared blocks; the others
      // prefill only the part of the prompt past the last full block.
      const int64_t begin = (c.shared_prompt && s > 0) ? SharedBlocks(c) * c.block_size : 0;
      if (begin < c.prompt_tokens) todo.push_back({static_cast<size_t>(s), begin, c.prompt_tokens});
    }
    int64_t todo_tokens = 0;
    for (const auto& p : todo) todo_tokens += p.end - p.pos;
    const std::string name = "batch " + std::to_string(batch_size);
    const int64_t steps = PrefillSteps(todo_tokens, c.prefill_chunk);
    done = 0;
    DI_RETURN_IF_ERROR(
        Prefill(runner, seqs, todo, c.prefill_chunk, [&] { report(name + " prefill", ++done, steps); }));

    done = 0;
    std::vector<double>& times = r.decode_seconds[batch_size];
    for (int64_t round = 0; round < c.rounds; ++round) {
      std::vector<int32_t> next(static_cast<size_t>(batch_size));
      for (int64_t s = 0; s < batch_size; ++s) next[s] = seqs.prompts[s].back();
      const auto t0 = Clock::now();
      for (int64_t g = 0; g < c.gen_tokens; ++g) {
        std::vector<ScheduledSequence> rows(static_cast<size_t>(batch_size));
        for (int64_t s = 0; s < batch_size; ++s) {
          ScheduledSequence& row = rows[static_cast<size_t>(s)];
          row.request_id = static_cast<RequestId>(s);
          row.tokens = {next[s]};
          row.start_pos = c.prompt_tokens + g;
          row.block_table = seqs.tables[s];
          row.samples = true;
        }
        DI_ASSIGN_OR_RETURN(StepResult step, RunStep(runner, seqs, std::move(rows)));
        for (int64_t s = 0; s < batch_size; ++s) next[s] = step.rows[static_cast<size_t>(s)].tokens.back();
        report(name + " decode", ++done, c.gen_tokens * c.rounds);
      }
      times.push_back(SecondsSince(t0));
    }
  }
  return r;
}

}  // namespace deepinfer::tools
