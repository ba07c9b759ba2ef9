// deepinfer serve: checks every flag (and the host, the port, the model's
// context) before loading anything, loads a checkpoint, starts the Engine and
// the OpenAI-compatible HTTP server (src/server), prints a start-up summary
// on stderr and "listening on http://HOST:PORT" on stdout once /health
// answers 200, and on SIGTERM / SIGINT stops accepting, drains live requests
// and exits 0.
//
// Signals: SIGINT/SIGTERM are blocked in every thread (the mask is set before
// any thread starts) and taken synchronously with sigwait on this thread, so
// no handler runs inside the engine or the I/O threads.
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <sstream>
#include <utility>

#include "checkpoint/checkpoint.h"
#include "core/log.h"
#include "core/version.h"
#include "engine/engine.h"
#include "server/api_service.h"
#include "server/http_server.h"
#include "tokenizer/tokenizer.h"
#include "tools/chat_renderer.h"
#include "tools/commands.h"
#include "tools/flags.h"
#include "tools/generation_config.h"
#include "tools/listen_address.h"
#include "tools/model_facts.h"
#include "tools/serve_stats.h"
#include "tools/speculative_flags.h"

namespace deepinfer::tools {
namespace {

constexpr const char* kUsageLine = "usage: deepinfer serve [--model] MODEL [flags]";
constexpr const char* kSummary =
    "Serves MODEL (a .gguf file or an HF directory) over the OpenAI-compatible HTTP API; prints\n"
    "\"listening on http://HOST:PORT\" once ready. SIGTERM / SIGINT drain live requests and exit 0.";

struct ServeOptions {
  std::string model_path;
  std::string tokenizer_path;  // --tokenizer: a .gguf / tokenizer.json / folder; "" = the checkpoint's
  std::string chat_template_file;
  std::string tool_call_parser;            // --tool-call-parser; "" = detected from the chat template
  GenerationDefaults generation_defaults;  // --generation-config, read while the flags are checked
  std::string display_host;  // --host as given (the URL printed); http.host holds the resolved address
  int threads = 0;
  bool batch_invariant = false;
  double stats_interval = 10.0;  // seconds; 0 = no stats line
  LogLevel log_level = LogLevel::kWarning;
  server::HttpServerOptions http;
  server::ServiceOptions service;
  EngineConfig engine;
};

std::vector<FlagSpec> ServeFlags() {
  const EngineConfig e;
  const server::HttpServerOptions h;
  const server::ServiceOptions so;
  std::vector<FlagSpec> f = {
      {"model", "PATH", "the checkpoint: a .gguf file or an HF directory (also the first argument)",
       kRequired},
      {"tokenizer", "PATH", "tokenizer from elsewhere: a .gguf, a tokenizer.json[.gz] or a folder with one",
       "the checkpoint's"},
      {"chat-template", "FILE", "Jinja2 chat template file", "the checkpoint's, else the fallback format"},
      {"tool-call-parser", "hermes|llama3_json|deepseek_v3|mistral",
       "how tool calls are read from the model's output", "detected from the chat template, else none"},
      {"reasoning-parser", "deepseek_r1|qwen3", "split <think>...</think> into reasoning_content", "none"},
      {"host", "HOST", "address or host name to listen on (localhost resolves)", h.host},
      {"port", "N", "TCP port; 0 picks a free one", std::to_string(h.port)},
      {"api-key", "KEY", "require \"Authorization: Bearer KEY\" on /v1/*", "$DEEPINFER_API_KEY, else none"},
      {"allowed-origins", "A,B,...|*", "browser origins allowed by CORS (Access-Control-Allow-Origin)",
       "none"},
      {"served-model-name", "NAME", "the model id clients send and /v1/models lists", "MODEL as given"},
      {"seed", "S", "seed for requests that bring none (reproducible per request order)",
       "random per request"},
      {"generation-config", "auto|none|PATH",
       "sampling defaults from generation_config.json (auto: the model directory's)", "auto"},
      {"max-num-seqs", "N", "most requests running at once", std::to_string(e.scheduler.max_num_seqs)},
      {"max-model-len", "L", "prompt + output tokens per request; above the model's context is an error",
       "the model's context length"},
      {"max-num-batched-tokens", "T", "tokens per engine step",
       std::to_string(e.scheduler.max_num_batched_tokens)},
      {"max-waiting-requests", "N", "queued requests beyond this get 429",
       std::to_string(e.max_waiting_requests)},
      {"scheduling-policy", "fcfs|priority", "admission order", "fcfs"},
      {"kv-cache-memory", "BYTES", "KV pool size (e.g. 512M, 4G)",
       "max-num-seqs x max-model-len, at most 1/4 of free memory"},
      {"kv-cache-dtype", "auto|f32|f16|bf16|q8_0", "element type of the KV pool",
       "auto: the faster 16-bit type"},
      {"block-size", "N", "tokens per KV block", std::to_string(e.block_size)},
      {"no-prefix-cache", "", "do not reuse the KV of shared prompt prefixes", ""},
      {"swa-full-kv", "",
       "sliding-window layers keep KV for every token (the baseline; default: only the window)", ""},
      {"no-async-scheduling", "", "plan each step after the previous one finished (for comparison)", ""},
      {"no-jump-forward", "", "sample every token of a constrained request (for comparison)", ""},
      {"batch-invariant", "", "batch-invariant kernels (= DEEPINFER_BATCH_INVARIANT=1)", ""},
      {"threads", "N", "compute threads", "all CPUs"},
      {"io-threads", "N", "HTTP I/O threads", std::to_string(h.io_threads)},
      {"max-body-bytes", "BYTES", "larger request bodies get 413", std::to_string(h.max_body_bytes)},
      {"max-connections", "N", "open connections beyond this get 503", std::to_string(h.max_connections)},
      {"header-timeout", "S", "seconds to read a request header (else 408)",
       std::to_string(h.header_timeout.count())},
      {"body-timeout", "S", "seconds to read a request body (else 408)",
       std::to_string(h.body_timeout.count())},
      {"idle-timeout", "S", "seconds an idle keep-alive connection stays open",
       std::to_string(h.idle_timeout.count())},
      {"log-level", "debug|info|warning|error", "what the engine logs on stderr", "warning"},
      {"verbose", "", "same as --log-level info", ""},
      {"enable-log-requests", "", "one stderr line per finished request: id, tokens, params, finish, timings",
       ""},
      {"stats-interval", "S", "seconds between stats lines (running, waiting, tok/s, KV usage); 0: none",
       "10"},
  };
  AddFlags(&f, SpeculativeFlagSpecs());
  return f;
}

// "123", "64M", "2G", "512KiB" -> bytes.
StatusOr<int64_t> ParseBytes(const std::string& flag, const std::string& text) {
  size_t pos = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
  if (pos == 0 || pos > 15) {
    return InvalidArgument("--" + flag + ": '" + text + "' is not a byte count (e.g. 512M)");
  }
  const int64_t value = std::stoll(text.substr(0, pos));
  const std::string unit = text.substr(pos);
  int64_t scale = 1;
  if (unit == "" || unit == "B") {
    scale = 1;
  } else if (unit == "K" || unit == "KB" || unit == "KiB") {
    scale = int64_t{1} << 10;
  } else if (unit == "M" || unit == "MB" || unit == "MiB") {
    scale = int64_t{1} << 20;
  } else if (unit == "G" || unit == "GB" || unit == "GiB") {
    scale = int64_t{1} << 30;
  } else {
    return InvalidArgument("--" + flag + ": unknown unit in '" + text + "' (K, M, G)");
  }
  if (value > std::numeric_limits<int64_t>::max() / scale) {
    return InvalidArgument("--" + flag + ": '" + text + "' is too large");
  }
  return value * scale;
}

StatusOr<LogLevel> ParseLogLevel(const std::string& name) {
  if (name == "debug") return LogLevel::kDebug;
  if (name == "info") return LogLevel::kInfo;
  if (name == "warning") return LogLevel::kWarning;
  if (name == "error") return LogLevel::kError;
  return InvalidArgument("--log-level must be debug, info, warning or error (got '" + name + "')");
}

// Every flag's value, checked before anything is loaded: a mistake costs
// milliseconds, not a model load.
StatusOr<ServeOptions> ParseOptions(const Flags& flags) {
  ServeOptions o;
  DI_ASSIGN_OR_RETURN(o.model_path, flags.Required("model"));
  o.tokenizer_path = flags.GetString("tokenizer");
  o.display_host = flags.GetString("host", o.http.host);
  DI_ASSIGN_OR_RETURN(o.http.host, ResolveListenHost(o.display_host));
  DI_ASSIGN_OR_RETURN(int64_t port, flags.GetInt("port", 8000));
  if (port < 0 || port > 65535) return InvalidArgument("--port must be in [0, 65535]");
  o.http.port = static_cast<uint16_t>(port);
  DI_ASSIGN_OR_RETURN(int64_t io_threads, flags.GetInt("io-threads", 4));
  if (io_threads < 1 || io_threads > 64) return InvalidArgument("--io-threads must be in [1, 64]");
  o.http.io_threads = static_cast<int>(io_threads);
  if (flags.Has("max-body-bytes")) {
    DI_ASSIGN_OR_RETURN(o.http.max_body_bytes,
                        ParseBytes("max-body-bytes", flags.GetString("max-body-bytes")));
    if (o.http.max_body_bytes < 1) return InvalidArgument("--max-body-bytes must be >= 1");
  }
  DI_ASSIGN_OR_RETURN(o.http.max_connections, flags.GetInt("max-connections", o.http.max_connections));
  if (o.http.max_connections < 1 || o.http.max_connections > (1 << 20)) {
    return InvalidArgument("--max-connections must be in [1, 1048576]");
  }
  for (auto [flag, value] :
       {std::pair<const char*, std::chrono::seconds*>{"header-timeout", &o.http.header_timeout},
        {"body-timeout", &o.http.body_timeout},
        {"idle-timeout", &o.http.idle_timeout}}) {
    DI_ASSIGN_OR_RETURN(int64_t seconds, flags.GetInt(flag, value->count()));
    if (seconds < 1 || seconds > 86400)
      return InvalidArgument(std::string("--") + flag + " must be in [1, 86400] seconds");
    *value = std::chrono::seconds(seconds);
  }
  if (flags.Has("api-key")) {
    o.service.api_key = flags.GetString("api-key");
    if (o.service.api_key.empty()) return InvalidArgument("--api-key must not be empty");
  } else if (const char* env = std::getenv("DEEPINFER_API_KEY"); env != nullptr && *env != '\0') {
    o.service.api_key = env;
  }
  if (flags.Has("allowed-origins")) {
    std::vector<std::string> origins = server::SplitOriginList(flags.GetString("allowed-origins"));
    if (origins.empty()) return InvalidArgument("--allowed-origins needs at least one origin (or *)");
    o.http.cors = server::CorsPolicy(std::move(origins));
  }
  o.service.served_model_name = flags.GetString("served-model-name", o.model_path);
  if (o.service.served_model_name.empty()) return InvalidArgument("--served-model-name must not be empty");
  if (flags.Has("seed")) {
    DI_ASSIGN_OR_RETURN(int64_t seed, flags.GetInt("seed", 0));
    o.service.default_seed = static_cast<uint64_t>(seed);
  }
  DI_ASSIGN_OR_RETURN(o.generation_defaults,
                      ReadGenerationDefaults(flags.GetString("generation-config", "auto"), o.model_path));
  o.service.default_sampling = o.generation_defaults.sampling;
  o.chat_template_file = flags.GetString("chat-template");
  o.tool_call_parser = flags.GetString("tool-call-parser");
  if (!o.tool_call_parser.empty() && server::FindToolCallParser(o.tool_call_parser) == nullptr) {
    return InvalidArgument("--tool-call-parser: unknown parser '" + o.tool_call_parser + "' (" +
                           server::ToolCallParserNames() + ")");
  }
  const std::string reasoning = flags.GetString("reasoning-parser");
  const auto reasoning_format = server::ReasoningFormatFromName(reasoning);
  if (!reasoning_format) {
    return InvalidArgument("--reasoning-parser: unknown parser '" + reasoning + "' (deepseek_r1, qwen3)");
  }
  o.service.chat.reasoning = *reasoning_format;
  DI_ASSIGN_OR_RETURN(int64_t threads, flags.GetInt("threads", 0));
  if (threads < 0 || threads > 1024) return InvalidArgument("--threads must be in [0, 1024]");
  o.threads = static_cast<int>(threads);
  o.batch_invariant = flags.Has("batch-invariant");
  if (flags.Has("log-level") && flags.Has("verbose")) {
    return InvalidArgument("give --log-level or --verbose, not both");
  }
  DI_ASSIGN_OR_RETURN(o.log_level,
                      ParseLogLevel(flags.GetString("log-level", flags.Has("verbose") ? "info" : "warning")));
  o.service.log_requests = flags.Has("enable-log-requests");
  DI_ASSIGN_OR_RETURN(o.stats_interval, flags.GetDouble("stats-interval", o.stats_interval));
  if (!(o.stats_interval >= 0 && o.stats_interval <= 86400)) {
    return InvalidArgument("--stats-interval must be in [0, 86400] seconds");
  }
  EngineConfig& e = o.engine;
  DI_ASSIGN_OR_RETURN(int64_t max_num_seqs, flags.GetInt("max-num-seqs", e.scheduler.max_num_seqs));
  if (max_num_seqs < 1 || max_num_seqs > (1 << 20)) {
    return InvalidArgument("--max-num-seqs must be in [1, 1048576]");
  }
  e.scheduler.max_num_seqs = static_cast<int32_t>(max_num_seqs);
  DI_ASSIGN_OR_RETURN(e.scheduler.max_model_len, flags.GetInt("max-model-len", 0));  // 0: the model's context
  if (flags.Has("max-model-len") && e.scheduler.max_model_len < 1) {
    return InvalidArgument("--max-model-len must be >= 1 (leave it out for the model's context length)");
  }
  DI_ASSIGN_OR_RETURN(e.scheduler.max_num_batched_tokens,
                      flags.GetInt("max-num-batched-tokens", e.scheduler.max_num_batched_tokens));
  if (flags.Has("kv-cache-memory")) {
    DI_ASSIGN_OR_RETURN(e.kv_cache_memory_bytes,
                        ParseBytes("kv-cache-memory", flags.GetString("kv-cache-memory")));
  }
  DI_ASSIGN_OR_RETURN(e.kv_cache_dtype, ParseKvCacheDType(flags.GetString("kv-cache-dtype", "auto")));
  DI_ASSIGN_OR_RETURN(int64_t block_size, flags.GetInt("block-size", 16));
  if (block_size < 1 || block_size > 1024) return InvalidArgument("--block-size must be in [1, 1024]");
  e.block_size = static_cast<int32_t>(block_size);
  e.enable_prefix_cache = !flags.Has("no-prefix-cache");
  e.swa_full_kv = flags.Has("swa-full-kv");
  e.async_scheduling = !flags.Has("no-async-scheduling");
  e.jump_forward = !flags.Has("no-jump-forward");
  DI_RETURN_IF_ERROR(ParseSpeculativeFlags(flags, &e));
  std::string policy = flags.GetString("scheduling-policy", "fcfs");
  if (policy == "fcfs") {
    e.scheduler.policy = SchedulingPolicy::kFcfs;
  } else if (policy == "priority") {
    e.scheduler.policy = SchedulingPolicy::kPriority;
  } else {
    return InvalidArgument("--scheduling-policy must be fcfs or priority");
  }
  DI_ASSIGN_OR_RETURN(int64_t max_waiting, flags.GetInt("max-waiting-requests", e.max_waiting_requests));
  if (max_waiting < 1 || max_waiting > (1 << 24)) {
    return InvalidArgument("--max-waiting-requests must be >= 1");
  }
  e.max_waiting_requests = static_cast<int32_t>(max_waiting);
  // The engine's own checks (max_model_len is filled from the model later:
  // a stand-in here so the rest is checked now).
  EngineConfig probe = e;
  if (probe.scheduler.max_model_len <= 0) probe.scheduler.max_model_len = 2;
  DI_RETURN_IF_ERROR(probe.Validate());
  DI_RETURN_IF_ERROR(CheckCanListen(o.http.host, o.http.port));
  return o;
}

// What the operator sees once the server is up: what was loaded, how much
// KV it holds, which template renders chats, and where to connect.
void PrintStartupSummary(const ServeOptions& o, const Engine& engine, const LoadedModelFacts& facts,
                         const std::string& template_source, const GenerationDefaults& defaults,
                         uint16_t port) {
  const EngineMetrics m = engine.Metrics();
  const EngineConfig& c = engine.config();
  const int64_t kv_tokens = m.kv_blocks_total * c.block_size;
  const int64_t max_len = c.scheduler.max_model_len;
  std::fprintf(stderr, "deepinfer serve: %s\n", VersionLine().c_str());
  std::fprintf(stderr, "deepinfer serve: model %s (%s, %s), %s parameters, weights %s, context %lld tokens\n",
               o.model_path.c_str(), facts.format.c_str(), facts.architecture.c_str(),
               HumanCount(facts.parameters).c_str(), facts.weight_dtypes.c_str(),
               static_cast<long long>(facts.context));
  std::fprintf(
      stderr,
      "deepinfer serve: KV cache %s, %lld tokens (%lld blocks of %d) = %lld sequences of max-model-len "
      "%lld; max-num-seqs %d\n",
      KvCacheDTypeName(c.kv_cache_dtype), static_cast<long long>(kv_tokens),
      static_cast<long long>(m.kv_blocks_total), c.block_size,
      static_cast<long long>(max_len > 0 ? kv_tokens / max_len : 0), static_cast<long long>(max_len),
      c.scheduler.max_num_seqs);
  std::fprintf(stderr, "deepinfer serve: chat template: %s\n", template_source.c_str());
  if (!defaults.source.empty()) {
    std::fprintf(stderr, "deepinfer serve: sampling defaults from %s: %s\n", defaults.source.c_str(),
                 defaults.summary.empty() ? "(none used)" : defaults.summary.c_str());
  }
  std::fprintf(stderr, "deepinfer serve: served model name '%s'%s; http://%s:%u/v1\n",
               o.service.served_model_name.c_str(), o.service.api_key.empty() ? "" : ", API key required",
               o.display_host.c_str(), static_cast<unsigned>(port));
}

int Serve(ServeOptions o) {
  // Before any thread exists, so every thread inherits the blocked mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client that vanished must not kill the server

  // The config alone first (milliseconds): --max-model-len is checked
  // against the model's context before the weights load.
  auto config = ReadModelConfig(o.model_path);
  if (!config.ok()) return Fail("serve", config.status().message());
  const int64_t context = config->max_position;
  if (o.engine.scheduler.max_model_len <= 0) {
    o.engine.scheduler.max_model_len = context;
  } else if (o.engine.scheduler.max_model_len > context) {
    return Fail("serve", "--max-model-len " + std::to_string(o.engine.scheduler.max_model_len) +
                             " exceeds the model's context length of " + std::to_string(context) + " tokens");
  }
  if (Status s = o.engine.Validate(); !s.ok()) return Fail("serve", s.message());

  if (o.batch_invariant) setenv("DEEPINFER_BATCH_INVARIANT", "1", 1);  // the seed system's switch
  // Progress for a person at a terminal; a script's stderr keeps the
  // one-line error contract (DESIGN.md) for failures during the load.
  if (isatty(STDERR_FILENO) == 1) std::fprintf(stderr, "deepinfer serve: loading %s\n", o.model_path.c_str());
  LoadOptions load;
  load.num_threads = o.threads;
  load.tokenizer_path = o.tokenizer_path;
  auto loaded = LoadModel(o.model_path, load);
  if (!loaded.ok()) return Fail("serve", loaded.status().message());
  if (!loaded->tokenizer)
    return Fail("serve", o.model_path + ": checkpoint has no tokenizer; pass --tokenizer PATH");
  auto chat = MakeChatSetup("serve", o.chat_template_file, *loaded);
  if (!chat.ok()) return Fail("serve", chat.status().message());
  o.service.chat_renderer = std::move(chat->renderer);
  // --tool-call-parser, else the format the template writes, else none
  // (tool requests then get a 400 naming the flag).
  o.service.chat.tool_parser = !o.tool_call_parser.empty() ? server::FindToolCallParser(o.tool_call_parser)
                               : !chat->template_text.empty()
                                   ? server::DetectToolCallParser(chat->template_text)
                                   : nullptr;
  const LoadedModelFacts facts = FactsOf(*loaded);

  auto engine = Engine::Create(std::move(*loaded), o.engine);
  if (!engine.ok()) return Fail("serve", engine.status().message());
  server::ApiService service(**engine, o.service);
  server::HttpServer http(service, o.http);
  if (Status s = http.Start(); !s.ok()) return Fail("serve", s.message());
  service.SetReady(true);
  PrintStartupSummary(o, **engine, facts, chat->source, o.generation_defaults, http.port());
  std::printf("listening on http://%s:%u\n", o.display_host.c_str(), static_cast<unsigned>(http.port()));
  std::fflush(stdout);
  std::unique_ptr<StatsReporter> stats;
  if (o.stats_interval > 0) {
    stats = std::make_unique<StatsReporter>(**engine, o.stats_interval);
    stats->Start();
  }

  int sig = 0;
  sigwait(&signals, &sig);
  std::fprintf(stderr, "deepinfer serve: %s received; draining\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
  if (stats) stats->Stop();
  http.StopAccepting();
  service.BeginShutdown();
  (*engine)->Shutdown(/*drain=*/true);
  // Let the last bytes of finished responses reach their clients.
  if (!http.WaitIdle(std::chrono::seconds(30))) {
    DI_LOG_WARN("some responses were still being written at exit");
  }
  http.Stop();
  return 0;
}

}  // namespace

int RunServe(const Args& args) {
  Flags flags(ServeFlags(), "model");
  int code = 0;
  if (!ParseOrExit(&flags, args, "serve", kUsageLine, kSummary, &code)) return code;
  auto options = ParseOptions(flags);
  if (!options.ok()) return Fail("serve", options.status().message(), 2);
  SetLogLevel(options->log_level);
  return Serve(std::move(*options));
}

}  // namespace deepinfer::tools
