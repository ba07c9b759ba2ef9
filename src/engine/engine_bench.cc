// engine_bench: aggregate decode throughput through the Engine at several
// concurrencies, and executor idle time with async vs sync scheduling.
//
//   engine_bench [--model PATH | --preset llama-110m --dtype q8_0] [--concurrency 1,64]
//                [--prompt-tokens 32] [--gen-tokens 64] [--threads N]
//                [--spec none,fixed,adaptive --spec-method ngram|mtp --spec-tokens 5 --rounds 3]
//                [--tokenizer PATH]
// --spec compares speculation schedules (async only), alternating the modes
// within each round; without it, async vs sync.
//
//   engine_bench --model M --burst 16 --prompt-tokens 3500 --gen-tokens 8
//                --kv-cache-memory BYTES [--swa-full-kv 1] [--max-num-batched-tokens T]
//                [--kv-cache-dtype f32|f16|bf16|q8_0|auto]
// --burst N submits N requests at once into a pool of BYTES and reports the
// most requests running at once (Metrics polled every millisecond) and the
// preemptions: the KV capacity of window-bounded vs full sliding-window KV
// (docs/kv-cache.md).
// Without --model, a random-weight model of the preset is written to
// /tmp/engine_bench_<preset>_<dtype>.gguf once and reused.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/backend_config.h"
#include "checkpoint/checkpoint.h"
#include "core/stats.h"
#include "engine/engine.h"
#include "synth/synth.h"
#include "tensor/dtype.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string model, preset = "llama-110m", dtype = "q8_0";
  std::vector<int> concurrency = {1, 64};
  int prompt_tokens = 32, gen_tokens = 64, threads = 0;
  std::string prompt;             // --prompt TEXT: every request's prompt (else random tokens)
  std::vector<std::string> spec;  // none | fixed | adaptive
  std::string spec_method = "ngram", tokenizer;
  int spec_tokens = 5, rounds = 1;
  int burst = 0;
  int64_t kv_cache_memory = 0, max_num_batched_tokens = 2048;
  bool swa_full_kv = false;
  KvCacheDType kv_cache_dtype = KvCacheDType::kF32;
};

// --burst: see the header comment.
int RunBurst(const Options& o) {
  LoadOptions load;
  load.num_threads = o.threads;
  auto loaded = LoadModel(o.model, load);
  if (!loaded.ok()) {
    std::fprintf(stderr, "engine_bench: %s\n", loaded.status().message().c_str());
    return 1;
  }
  const int64_t vocab = loaded->model->config().vocab_size;
  EngineConfig config;
  config.scheduler.max_num_seqs = o.burst;
  config.scheduler.max_model_len = o.prompt_tokens + o.gen_tokens + 16;
  config.scheduler.max_num_batched_tokens = o.max_num_batched_tokens;
  config.kv_cache_memory_bytes = o.kv_cache_memory;
  config.swa_full_kv = o.swa_full_kv;
  config.kv_cache_dtype = o.kv_cache_dtype;
  auto engine = Engine::Create(std::move(*loaded), config);
  if (!engine.ok()) {
    std::fprintf(stderr, "engine_bench: %s\n", engine.status().message().c_str());
    return 1;
  }
  std::mutex mu;
  std::condition_variable cv;
  int finished = 0;
  std::mt19937 rng(1);
  std::uniform_int_distribution<int32_t> token(3, static_cast<int32_t>(vocab - 1));
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < o.burst; ++i) {
    GenerationRequest r;
    for (int t = 0; t < o.prompt_tokens; ++t) r.prompt_tokens.push_back(token(rng));
    r.max_tokens = o.gen_tokens;
    r.ignore_eos = true;
    r.sampling.temperature = 0;
    auto id = (*engine)->Submit(std::move(r), [&](GenerationEvent ev) {
      if (ev.finish_reason == FinishReason::kNone) return;
      std::lock_guard<std::mutex> lock(mu);
      ++finished;
      cv.notify_all();
    });
    if (!id.ok()) {
      std::fprintf(stderr, "engine_bench: %s\n", id.status().message().c_str());
      return 1;
    }
  }
  int64_t max_running = 0, max_in_use = 0;
  for (;;) {
    const EngineMetrics m = (*engine)->Metrics();
    max_running = std::max(max_running, m.num_requests_running);
    max_in_use = std::max(max_in_use, m.kv_blocks_in_use);
    std::unique_lock<std::mutex> lock(mu);
    if (cv.wait_for(lock, std::chrono::milliseconds(1), [&] { return finished == o.burst; })) break;
  }
  const EngineMetrics m = (*engine)->Metrics();
  std::printf(
      "burst %d x (%d + %d) tokens, kv %lld bytes %s, %s: max running %lld, preemptions %lld, "
      "pool %lld units (peak in use %lld), %.1f s\n",
      o.burst, o.prompt_tokens, o.gen_tokens, static_cast<long long>(o.kv_cache_memory),
      KvCacheDTypeName(o.kv_cache_dtype), o.swa_full_kv ? "--swa-full-kv" : "window-bounded",
      static_cast<long long>(max_running), static_cast<long long>(m.num_preemptions_total),
      static_cast<long long>(m.kv_blocks_total), static_cast<long long>(max_in_use),
      std::chrono::duration<double>(Clock::now() - start).count());
  return 0;
}

struct RunStats {
  double decode_tok_s = 0, idle_s = 0, busy_s = 0;
  int64_t steps = 0, drafts = 0, accepted = 0;
};

StatusOr<RunStats> RunOnce(const Options& o, bool async, int concurrency, const std::string& spec = "none") {
  LoadOptions load;
  load.num_threads = o.threads;
  load.tokenizer_path = o.tokenizer;
  DI_ASSIGN_OR_RETURN(LoadedModel loaded, LoadModel(o.model, load));
  const int64_t vocab = loaded.model->config().vocab_size;
  std::vector<int32_t> text_prompt;
  if (!o.prompt.empty() && loaded.tokenizer != nullptr) {
    text_prompt = loaded.tokenizer->Encode(o.prompt, /*add_special=*/true, /*parse_special=*/false);
  }
  EngineConfig config;
  config.async_scheduling = async;
  config.scheduler.max_num_seqs = std::max(concurrency, 1);
  config.scheduler.max_model_len =
      std::max<int64_t>(o.prompt_tokens, static_cast<int64_t>(text_prompt.size())) + o.gen_tokens + 16;
  config.kv_cache_memory_bytes = 0;
  if (spec != "none") {
    config.speculative.method = o.spec_method;
    config.speculative.adaptive = spec == "adaptive";
    config.scheduler.max_num_speculative_tokens = o.spec_tokens;
  }
  DI_ASSIGN_OR_RETURN(auto engine, Engine::Create(std::move(loaded), config));

  std::mutex mu;
  std::condition_variable cv;
  int finished = 0;
  int first_seen = 0;
  Clock::time_point all_started{};
  int64_t decode_tokens = 0;
  Clock::time_point end{};
  std::mt19937 rng(1);
  std::uniform_int_distribution<int32_t> token(3, static_cast<int32_t>(vocab - 1));
  const EngineMetrics before = engine->Metrics();
  for (int i = 0; i < concurrency; ++i) {
    GenerationRequest r;
    for (int t = 0; t < o.prompt_tokens; ++t) r.prompt_tokens.push_back(token(rng));
    if (!text_prompt.empty()) r.prompt_tokens = text_prompt;
    r.max_tokens = o.gen_tokens;
    r.ignore_eos = true;
    r.sampling.temperature = 0;
    bool first = true;
    auto submitted = engine->Submit(std::move(r), [&, first](GenerationEvent ev) mutable {
      std::lock_guard<std::mutex> lock(mu);
      if (first && !ev.token_ids.empty()) {
        first = false;
        if (++first_seen == concurrency) all_started = Clock::now();
      } else if (first_seen == concurrency) {
        decode_tokens += static_cast<int64_t>(ev.token_ids.size());
      }
      if (ev.finish_reason != FinishReason::kNone) {
        end = Clock::now();
        ++finished;
        cv.notify_all();
      }
    });
    DI_RETURN_IF_ERROR(submitted.status());
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return finished == concurrency; });
  }
  const EngineMetrics after = engine->Metrics();
  RunStats s;
  s.decode_tok_s =
      static_cast<double>(decode_tokens) / std::chrono::duration<double>(end - all_started).count();
  s.idle_s = after.executor_idle_seconds_total - before.executor_idle_seconds_total;
  s.busy_s = after.executor_busy_seconds_total - before.executor_busy_seconds_total;
  s.steps = after.steps_total - before.steps_total;
  s.drafts = after.spec_draft_tokens_total;
  s.accepted = after.spec_accepted_tokens_total;
  return s;
}

int Main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--model") {
      o.model = v;
    } else if (k == "--preset") {
      o.preset = v;
    } else if (k == "--dtype") {
      o.dtype = v;
    } else if (k == "--prompt-tokens") {
      o.prompt_tokens = std::stoi(v);
    } else if (k == "--gen-tokens") {
      o.gen_tokens = std::stoi(v);
    } else if (k == "--threads") {
      o.threads = std::stoi(v);
    } else if (k == "--prompt") {
      o.prompt = v;
    } else if (k == "--spec") {
      std::stringstream ss(v);
      for (std::string part; std::getline(ss, part, ',');) o.spec.push_back(part);
    } else if (k == "--spec-method") {
      o.spec_method = v;
    } else if (k == "--tokenizer") {
      o.tokenizer = v;
    } else if (k == "--spec-tokens") {
      o.spec_tokens = std::stoi(v);
    } else if (k == "--rounds") {
      o.rounds = std::stoi(v);
    } else if (k == "--burst") {
      o.burst = std::stoi(v);
    } else if (k == "--kv-cache-memory") {
      o.kv_cache_memory = std::stoll(v);
    } else if (k == "--max-num-batched-tokens") {
      o.max_num_batched_tokens = std::stoll(v);
    } else if (k == "--swa-full-kv") {
      o.swa_full_kv = v == "1";
    } else if (k == "--kv-cache-dtype") {
      auto parsed = ParseKvCacheDType(v);
      if (!parsed.ok()) {
        std::fprintf(stderr, "engine_bench: %s\n", parsed.status().message().c_str());
        return 2;
      }
      o.kv_cache_dtype = *parsed;
    } else if (k == "--concurrency") {
      o.concurrency.clear();
      std::stringstream ss(v);
      for (std::string part; std::getline(ss, part, ',');) o.concurrency.push_back(std::stoi(part));
    } else {
      std::fprintf(stderr, "engine_bench: unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  if (o.model.empty()) {
    o.model = "/tmp/engine_bench_" + o.preset + "_" + o.dtype + ".gguf";
    if (!std::filesystem::exists(o.model)) {
      SynthOptions s;
      s.preset = o.preset;
      auto dtype = DTypeFromName(o.dtype);
      if (!dtype) {
        std::fprintf(stderr, "engine_bench: unknown dtype %s\n", o.dtype.c_str());
        return 2;
      }
      s.dtype = *dtype;
      s.out = o.model;
      Status st = WriteSynthModel(s);
      if (!st.ok()) {
        std::fprintf(stderr, "engine_bench: %s\n", st.message().c_str());
        return 1;
      }
    }
  }
  std::printf("model %s, prompt %d, gen %d\n", o.model.c_str(), o.prompt_tokens, o.gen_tokens);
  if (o.burst > 0) return RunBurst(o);
  if (!o.spec.empty()) {
    for (int c : o.concurrency) {
      std::map<std::string, std::vector<double>> tok_s;  // per mode, one per round
      for (int round = 0; round < o.rounds; ++round) {
        for (const std::string& mode : o.spec) {
          auto s = RunOnce(o, /*async=*/true, c, mode);
          if (!s.ok()) {
            std::fprintf(stderr, "engine_bench: %s\n", s.status().message().c_str());
            return 1;
          }
          std::printf(
              "concurrency %3d round %d spec %-8s decode %8.1f tok/s  steps %5lld  drafts %6lld accepted "
              "%6lld  executor idle %.1f us/step\n",
              c, round, mode.c_str(), s->decode_tok_s, static_cast<long long>(s->steps),
              static_cast<long long>(s->drafts), static_cast<long long>(s->accepted),
              s->steps ? 1e6 * s->idle_s / static_cast<double>(s->steps) : 0.0);
          std::fflush(stdout);
          tok_s[mode].push_back(s->decode_tok_s);
        }
      }
      // Medians over the rounds, and each mode against the first one round by
      // round (the modes alternate inside a round, so load drift cancels).
      const std::vector<double>& base = tok_s[o.spec.front()];
      for (const std::string& mode : o.spec) {
        std::vector<double> ratio;
        for (size_t r = 0; r < base.size(); ++r) ratio.push_back(tok_s[mode][r] / base[r]);
        std::printf("concurrency %3d median  spec %-8s decode %8.1f tok/s  vs %s per round: median %.3fx\n",
                    c, mode.c_str(), Median(tok_s[mode]), o.spec.front().c_str(), Median(ratio));
      }
    }
    return 0;
  }
  for (int c : o.concurrency) {
    for (bool async : {true, false}) {
      auto s = RunOnce(o, async, c);
      if (!s.ok()) {
        std::fprintf(stderr, "engine_bench: %s\n", s.status().message().c_str());
        return 1;
      }
      std::printf(
          "concurrency %3d %-5s decode %8.1f tok/s  steps %5lld  executor idle %.4f s (%.1f us/step, %.2f%% "
          "of busy)\n",
          c, async ? "async" : "sync", s->decode_tok_s, static_cast<long long>(s->steps), s->idle_s,
          s->steps ? 1e6 * s->idle_s / static_cast<double>(s->steps) : 0.0,
          s->busy_s > 0 ? 100.0 * s->idle_s / s->busy_s : 0.0);
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace deepinfer

int main(int argc, char** argv) {
  deepinfer::cpu::ApplyBackendConfig(
      deepinfer::cpu::BackendConfigFromEnv());  // DEEPINFER_ISA etc., as the CLI
  return deepinfer::Main(argc, argv);
}
