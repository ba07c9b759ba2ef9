// deepinfer bench: offline throughput of the forward pass (prefill, time to
// first token, decode at several batch sizes), see tools/bench_runner.h for
// what is timed. Human table on stdout, progress on stderr, optional JSON and
// PNG plot.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "backend/cpu/amx.h"
#include "backend/cpu/isa.h"
#include "backend/cpu/matmul.h"
#include "checkpoint/checkpoint.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "model/weights.h"
#include "tokenizer/tokenizer.h"
#include "tools/bench_report.h"
#include "tools/bench_runner.h"
#include "tools/bench_speculative.h"
#include "tools/commands.h"
#include "tools/flags.h"
#include "tools/speculative_flags.h"

namespace deepinfer::tools {
namespace {

constexpr const char* kUsageLine = "usage: deepinfer bench [--model] MODEL [flags]";
constexpr const char* kSummary =
    "Offline benchmark: prefill tokens/s, time to first token and decode tokens/s per batch size.";

std::vector<FlagSpec> BenchFlags() {
  return {
      {"model", "PATH", "the checkpoint: a .gguf file or an HF directory (also the first argument)",
       kRequired},
      {"prompt-tokens", "P", "prompt length of each sequence", "512"},
      {"gen-tokens", "G", "tokens generated per sequence", "128"},
      {"batch", "B,B,...", "batch sizes to measure", "1,4,16,64"},
      {"threads", "N", "compute threads", "all CPUs"},
      {"rounds", "R", "repetitions of each measurement (the median is reported)", "1"},
      {"prefill-chunk", "N", "prompt tokens per prefill step", "512"},
      {"shared-prompt", "", "all sequences of a batch share the prompt's KV blocks (a prefix-cache hit)", ""},
      {"seed", "S", "seed of the random prompt tokens", "1"},
      {"json", "FILE", "write the results as JSON", ""},
      {"plot", "FILE.png", "draw the results as a PNG chart", ""},
      {"kv-cache-dtype", "auto|f32|f16|bf16|q8_0", "KV element type", "auto: the faster 16-bit type"},
      {"kv-cache-memory", "BYTES", "also report how many P + G sequences that many KV bytes hold", ""},
      {"swa-full-kv", "", "count sliding-window layers as keeping every position (the baseline)", ""},
      {"prompt", "TEXT", "with --speculative-method: the prompt of every request instead of random tokens",
       ""},
      {"tokenizer", "PATH", "the tokenizer for --prompt (a .gguf, a tokenizer.json or its folder)",
       "the model's"},
  };
}

std::vector<FlagSpec> AllBenchFlags() {
  std::vector<FlagSpec> flags = BenchFlags();
  for (FlagSpec& f : SpeculativeFlagSpecs()) flags.push_back(std::move(f));
  return flags;
}

struct BenchOptions {
  std::string model_path, json_path, plot_path, prompt, tokenizer;
  EngineConfig speculation;  // .speculative set: the speculative benchmark (tools/bench_speculative.h)
  int threads = 0;
  KvCacheDType kv_cache_dtype = KvCacheDType::kAuto;
  int64_t kv_cache_memory = 0;
  BenchConfig config;
};

StatusOr<std::vector<int64_t>> ParseBatchList(const std::string& text) {
  std::vector<int64_t> out;
  std::set<int64_t> seen;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != item.size() || v < 1 || v > 4096) {
      return InvalidArgument("--batch: '" + item + "' is not a batch size in [1, 4096] (use e.g. 1,4,16,64)");
    }
    if (seen.insert(v).second) out.push_back(v);
  }
  if (out.empty()) return InvalidArgument("--batch: no batch sizes given");
  return out;
}

StatusOr<BenchOptions> ParseOptions(const Flags& flags) {
  BenchOptions o;
  DI_ASSIGN_OR_RETURN(o.model_path, flags.Required("model"));
  BenchConfig& c = o.config;
  DI_ASSIGN_OR_RETURN(c.prompt_tokens, flags.GetInt("prompt-tokens", 512));
  if (c.prompt_tokens < 1 || c.prompt_tokens > (1 << 20)) {
    return InvalidArgument("--prompt-tokens must be in [1, 1048576]");
  }
  DI_ASSIGN_OR_RETURN(c.gen_tokens, flags.GetInt("gen-tokens", 128));
  if (c.gen_tokens < 1 || c.gen_tokens > (1 << 20)) {
    return InvalidArgument("--gen-tokens must be in [1, 1048576]");
  }
  DI_ASSIGN_OR_RETURN(c.batches, ParseBatchList(flags.GetString("batch", "1,4,16,64")));
  DI_ASSIGN_OR_RETURN(int64_t threads, flags.GetInt("threads", 0));
  if (threads < 0 || threads > 1024) return InvalidArgument("--threads must be in [0, 1024]");
  o.threads = static_cast<int>(threads);
  DI_ASSIGN_OR_RETURN(c.rounds, flags.GetInt("rounds", 1));
  if (c.rounds < 1 || c.rounds > 1000) return InvalidArgument("--rounds must be in [1, 1000]");
  DI_ASSIGN_OR_RETURN(c.prefill_chunk, flags.GetInt("prefill-chunk", 512));
  if (c.prefill_chunk < 1 || c.prefill_chunk > (1 << 16)) {
    return InvalidArgument("--prefill-chunk must be in [1, 65536]");
  }
  DI_ASSIGN_OR_RETURN(int64_t seed, flags.GetInt("seed", 1));
  if (seed < 0) return InvalidArgument("--seed must be >= 0");
  c.seed = static_cast<uint64_t>(seed);
  c.shared_prompt = flags.Has("shared-prompt");
  c.swa_full_kv = flags.Has("swa-full-kv");
  DI_ASSIGN_OR_RETURN(o.kv_cache_dtype, ParseKvCacheDType(flags.GetString("kv-cache-dtype", "auto")));
  DI_ASSIGN_OR_RETURN(o.kv_cache_memory, flags.GetInt("kv-cache-memory", 0));
  if (o.kv_cache_memory < 0) return InvalidArgument("--kv-cache-memory must be >= 0 bytes");
  o.json_path = flags.GetString("json");
  o.plot_path = flags.GetString("plot");
  if (flags.Has("json") && o.json_path.empty()) return InvalidArgument("--json needs a file name");
  if (flags.Has("plot") && o.plot_path.empty()) return InvalidArgument("--plot needs a file name");
  DI_RETURN_IF_ERROR(ParseSpeculativeFlags(flags, &o.speculation));
  o.prompt = flags.GetString("prompt");
  o.tokenizer = flags.GetString("tokenizer");
  if (flags.Has("prompt") && o.speculation.speculative.method.empty()) {
    return InvalidArgument("--prompt is for --speculative-method (the plain bench times random prompts)");
  }
  return o;
}

// A one-line progress bar redrawn in place on a terminal; on a pipe, one line
// per finished phase.
class ProgressBar {
 public:
  ProgressBar() : tty_(isatty(STDERR_FILENO) == 1) {}
  void Update(const std::string& phase, int64_t done, int64_t total) {
    if (tty_) {
      constexpr int kWidth = 30;
      const int filled = total > 0 ? static_cast<int>(kWidth * done / total) : kWidth;
      std::fprintf(stderr, "\r[%s%s] %-20s %lld/%lld", std::string(filled, '#').c_str(),
                   std::string(kWidth - filled, ' ').c_str(), phase.c_str(), static_cast<long long>(done),
                   static_cast<long long>(total));
      if (done == total) std::fputc('\n', stderr);
    } else if (done == total) {
      std::fprintf(stderr, "bench: %s done (%lld steps)\n", phase.c_str(), static_cast<long long>(total));
    }
    std::fflush(stderr);
  }

 private:
  bool tty_;
};

void DescribeWeights(const LoadedModel& loaded, BenchReport& r) {
  const WeightStore& store = *loaded.weights;
  const TensorView* embedding = store.Find(WeightName(store.naming(), TensorRole::kTokenEmbedding));
  const TensorView* output = store.Find(WeightName(store.naming(), TensorRole::kOutput));
  const TensorView* q0 = store.Find(WeightName(store.naming(), TensorRole::kQ, 0));
  for (const TensorView* t : store.All()) r.weight_bytes += t->nbytes;
  // A decode step reads one embedding row, but the whole LM head, which is
  // the embedding matrix itself when the two are tied.
  const bool tied = loaded.model->config().tie_word_embeddings || output == nullptr;
  r.weight_bytes_per_token = r.weight_bytes - (embedding != nullptr && !tied ? embedding->nbytes : 0);
  // Routed experts (GGUF stacked `*_exps.` tensors, HF `.experts.N.`; not the
  // shared experts): one token reads experts_per_token of num_experts of them.
  const MoeConfig& moe = loaded.model->config().moe;
  int64_t unused_expert_bytes = 0;
  if (moe.num_experts > 0) {
    for (const TensorView* t : store.All()) {
      if (t->name.find("_exps.") != std::string::npos || t->name.find(".experts.") != std::string::npos) {
        unused_expert_bytes += t->nbytes / moe.num_experts * (moe.num_experts - moe.experts_per_token);
      }
    }
  }
  r.active_weight_bytes_per_token = r.weight_bytes_per_token - unused_expert_bytes;
  r.dtype = q0 != nullptr ? DTypeName(q0->dtype) : "?";
  r.arch = loaded.model->config().arch;
  // The matrices' weight types (2-D tensors, the untied embedding is a
  // lookup), each with the kernel MatMul runs for it.
  std::set<DType> types;
  for (const TensorView* t : store.All()) {
    if (t->shape.size() == 2 && (tied || t != embedding)) types.insert(t->dtype);
  }
  for (DType t : types) {
    if (!r.weight_kernels.empty()) r.weight_kernels += ' ';
    r.weight_kernels += std::string(DTypeName(t)) + "=" + cpu::MatMulKernelName(cpu::ActiveIsa(), t);
  }
}

// bench --speculative-method: none / fixed / adaptive over --batch as concurrency.
int RunSpeculative(const BenchOptions& o, LoadOptions load) {
  SpecBenchConfig c;
  c.engine = o.speculation;
  c.engine.kv_cache_dtype = o.kv_cache_dtype;
  c.engine.kv_cache_memory_bytes = o.kv_cache_memory;
  c.concurrency = o.config.batches;
  c.prompt_tokens = o.config.prompt_tokens;
  c.gen_tokens = o.config.gen_tokens;
  c.rounds = o.config.rounds;
  c.seed = o.config.seed;
  load.load_tokenizer = true;
  load.tokenizer_path = o.tokenizer;
  if (!o.prompt.empty()) {
    auto loaded = LoadModel(o.model_path, load);
    if (!loaded.ok()) return Fail("bench", loaded.status().message());
    if (loaded->tokenizer == nullptr)
      return Fail("bench", "--prompt needs a tokenizer (--tokenizer PATH)", 2);
    c.prompt = loaded->tokenizer->Encode(o.prompt, /*add_special=*/true, /*parse_special=*/false);
  }
  ProgressBar bar;
  auto points = RunSpeculativeBench(
      o.model_path, load, c,
      [&](const std::string& what, int64_t done, int64_t total) { bar.Update(what, done, total); });
  if (!points.ok()) return Fail("bench", points.status().message());
  double load_avg[3] = {0, 0, 0};
  ReadLoadAverage(load_avg);
  std::fputs(FormatSpecBenchTable(c, *points).c_str(), stdout);
  std::printf("load average %.2f %.2f %.2f\n", load_avg[0], load_avg[1], load_avg[2]);
  if (!o.json_path.empty()) {
    std::ofstream out(o.json_path);
    out << "{\"model\": \"" << o.model_path << "\", \"speculative\": " << FormatSpecBenchJson(c, *points)
        << "}\n";
    if (!out) return Fail("bench", "cannot write --json file '" + o.json_path + "'");
  }
  if (!o.plot_path.empty()) {
    if (Status st = WriteSpecBenchPlots(*points, o.plot_path); !st.ok()) return Fail("bench", st.message());
  }
  return 0;
}

}  // namespace

int RunBench(const Args& args) {
  Flags flags(AllBenchFlags(), "model");
  int code = 0;
  if (!ParseOrExit(&flags, args, "bench", kUsageLine, kSummary, &code)) return code;
  auto options = ParseOptions(flags);
  if (!options.ok()) return Fail("bench", options.status().message(), 2);
  // Fail before a long run, not after it, when an output cannot be written.
  for (const std::string& path : {options->json_path, options->plot_path}) {
    if (!path.empty() && !std::ofstream(path, std::ios::app)) {
      return Fail("bench", "cannot open '" + path + "' for writing", 2);
    }
  }
  SetLogLevel(LogLevel::kWarning);
  LoadOptions load;
  load.num_threads = options->threads;
  load.load_tokenizer = false;
  if (!options->speculation.speculative.method.empty()) return RunSpeculative(*options, load);
  auto loaded = LoadModel(options->model_path, load);
  if (!loaded.ok()) return Fail("bench", loaded.status().message());
  options->config.kv_dtype = ResolveKvCacheDType(options->kv_cache_dtype);
  if (Status st = ValidateBenchConfig(options->config, loaded->model->config()); !st.ok()) {
    return Fail("bench", st.message(), 2);
  }

  BenchReport report;
  report.model_path = options->model_path;
  report.threads = options->threads > 0 ? options->threads : ThreadPool::DefaultThreadCount();
  report.config = options->config;
  report.kernels = std::string(cpu::IsaName(cpu::ActiveIsa())) +
                   (cpu::AmxInt8Enabled() || cpu::AmxBf16Enabled() ? "+amx" : "");
  DescribeWeights(*loaded, report);
  const ModelConfig& model_config = loaded->model->config();
  report.kv_bytes_per_token = BenchKvBytesPerToken(options->config, model_config);
  report.kv_cache_memory = options->kv_cache_memory;
  if (options->kv_cache_memory > 0) {
    report.max_concurrent_sequences =
        MaxConcurrentSequences(options->config, model_config, options->kv_cache_memory);
  }

  ProgressBar bar;
  auto result = RunBench(
      *loaded->model, options->config,
      [&](const std::string& phase, int64_t done, int64_t total) { bar.Update(phase, done, total); });
  if (!result.ok()) return Fail("bench", result.status().message());
  report.result = std::move(*result);
  report.peak_rss_bytes = PeakRssBytes();
  ReadLoadAverage(report.load_avg);

  std::fputs(FormatBenchTable(report).c_str(), stdout);
  if (!options->json_path.empty()) {
    std::ofstream out(options->json_path);
    out << FormatBenchJson(report);
    if (!out) return Fail("bench", "cannot write --json file '" + options->json_path + "'");
  }
  if (!options->plot_path.empty()) {
    if (Status st = WriteBenchPlot(report, options->plot_path); !st.ok()) return Fail("bench", st.message());
  }
  return 0;
}

}  // namespace deepinfer::tools
