// deepinfer serve: loads a checkpoint, starts the Engine and the
// OpenAI-compatible HTTP server (src/server), prints
// "listening on http://HOST:PORT" once /health answers 200, and on SIGTERM /
// SIGINT stops accepting, drains live requests and exits 0.
//
// Signals: SIGINT/SIGTERM are blocked in every thread (the mask is set before
// any thread starts) and taken synchronously with sigwait on this thread, so
// no handler runs inside the engine or the I/O threads.
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
#include "engine/engine.h"
#include "server/api_service.h"
#include "server/http_server.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "tools/commands.h"
#include "tools/flags.h"
#include "tools/speculative_flags.h"

namespace deepinfer::tools {
namespace {

constexpr const char* kUsage =
    "usage: deepinfer serve --model PATH [--tokenizer PATH] [--host 127.0.0.1] [--port 8000] [--api-key "
    "KEY]\n"
    "         [--served-model-name NAME] [--max-num-seqs N] [--max-model-len L]\n"
    "         [--max-num-batched-tokens T] [--kv-cache-memory BYTES] [--block-size 16] [--threads N]\n"
    "         [--kv-cache-dtype auto|f32|f16|bf16|q8_0 (default auto: the faster 16-bit type)]\n"
    "         [--no-prefix-cache] [--no-async-scheduling] [--no-jump-forward] [--batch-invariant]\n"
    "         [--speculative-method ngram [--num-speculative-tokens 5] [--spec-schedule adaptive|fixed]]\n"
    "         [--chat-template FILE] [--scheduling-policy fcfs|priority] [--max-waiting-requests N]\n"
    "         [--tool-call-parser hermes|llama3_json|deepseek_v3|mistral (default: from the chat template)]\n"
    "         [--reasoning-parser deepseek_r1|qwen3 (default: none)]\n"
    "         [--io-threads N] [--max-body-bytes N] [--max-connections N] [--header-timeout S]\n"
    "         [--body-timeout S] [--idle-timeout S] [--verbose]\n";

struct ServeOptions {
  std::string model_path;
  std::string tokenizer_path;  // --tokenizer: a .gguf / tokenizer.json / folder; "" = the checkpoint's
  std::string chat_template_file;
  std::string tool_call_parser;  // "" = detected from the chat template
  int threads = 0;
  bool batch_invariant = false;
  server::HttpServerOptions http;
  server::ServiceOptions service;
  EngineConfig engine;
  bool verbose = false;
};

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

StatusOr<ServeOptions> ParseOptions(const Args& args) {
  std::set<std::string> value_flags = {"model",
                                       "tokenizer",
                                       "host",
                                       "port",
                                       "api-key",
                                       "served-model-name",
                                       "max-num-seqs",
                                       "max-model-len",
                                       "max-num-batched-tokens",
                                       "kv-cache-memory",
                                       "block-size",
                                       "threads",
                                       "chat-template",
                                       "tool-call-parser",
                                       "reasoning-parser",
                                       "scheduling-policy",
                                       "max-waiting-requests",
                                       "io-threads",
                                       "max-body-bytes",
                                       "kv-cache-dtype",
                                       "max-connections",
                                       "header-timeout",
                                       "body-timeout",
                                       "idle-timeout"};
  value_flags.insert(SpeculativeValueFlags().begin(), SpeculativeValueFlags().end());
  Flags flags(value_flags, {"no-prefix-cache", "no-async-scheduling", "no-jump-forward", "batch-invariant",
                            "verbose", "help"});
  DI_RETURN_IF_ERROR(flags.Parse(args));
  if (flags.Has("help")) return InvalidArgument(kUsage);
  ServeOptions o;
  DI_ASSIGN_OR_RETURN(o.model_path, flags.Required("model"));
  o.tokenizer_path = flags.GetString("tokenizer");
  o.http.host = flags.GetString("host", "127.0.0.1");
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
  o.service.api_key = flags.GetString("api-key");
  if (flags.Has("api-key") && o.service.api_key.empty()) {
    return InvalidArgument("--api-key must not be empty");
  }
  o.service.served_model_name = flags.GetString("served-model-name", o.model_path);
  if (o.service.served_model_name.empty()) return InvalidArgument("--served-model-name must not be empty");
  o.chat_template_file = flags.GetString("chat-template");
  o.tool_call_parser = flags.GetString("tool-call-parser");
  if (!o.tool_call_parser.empty() && server::FindToolCallParser(o.tool_call_parser) == nullptr) {
    return InvalidArgument("--tool-call-parser: unknown parser '" + o.tool_call_parser + "' (" +
                           server::ToolCallParserNames() + ")");
  }
  const std::string reasoning = flags.GetString("reasoning-parser");
  auto reasoning_format = server::ReasoningFormatFromName(reasoning);
  if (!reasoning_format) {
    return InvalidArgument("--reasoning-parser: unknown parser '" + reasoning + "' (deepseek_r1, qwen3)");
  }
  o.service.chat.reasoning = *reasoning_format;
  DI_ASSIGN_OR_RETURN(int64_t threads, flags.GetInt("threads", 0));
  if (threads < 0 || threads > 1024) return InvalidArgument("--threads must be in [0, 1024]");
  o.threads = static_cast<int>(threads);
  o.batch_invariant = flags.Has("batch-invariant");
  o.verbose = flags.Has("verbose");
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
  return o;
}

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A template that renders a probe conversation without its messages' text
// (an empty file, a template for other variables) would drop every request's
// messages silently: refused at start-up instead.
Status CheckTemplateKeepsMessages(const ChatTemplate& tmpl) {
  const std::string probe_user = "deepinfer-probe-user-7f3a", probe_reply = "deepinfer-probe-reply-7f3a";
  std::vector<ChatMessage> messages(3);
  messages[0].role = "user";
  messages[0].content = probe_user;
  messages[1].role = "assistant";
  messages[1].content = probe_reply;
  messages[2].role = "user";
  messages[2].content = probe_user;
  auto text = tmpl.Render(messages, ChatRenderOptions{});
  if (!text.ok()) return text.status().WithContext("rendering a probe conversation");
  if (text->find(probe_user) == std::string::npos) {
    return InvalidArgument(
        "the template does not render the messages' content (a probe conversation "
        "rendered as " +
        std::to_string(text->size()) + " bytes without it)");
  }
  return Status::Ok();
}

// The chat renderer: --chat-template FILE, else the checkpoint's template,
// else the documented fallback format (with a notice).
// Also picks the tool-call parser: --tool-call-parser, else the format the
// template writes (DetectToolCallParser), else none.
StatusOr<server::ChatPromptRenderer> MakeChatRenderer(const ServeOptions& o, const LoadedModel& loaded,
                                                      server::ChatFeatures* features) {
  std::optional<std::string> source;
  std::string origin;
  if (!o.chat_template_file.empty()) {
    DI_ASSIGN_OR_RETURN(std::string text, ReadFile(o.chat_template_file));
    source = std::move(text);
    origin = o.chat_template_file;
  } else {
    auto from_model = ChatTemplate::SourceFromModelFiles(loaded.format, loaded.path);
    if (!from_model.ok()) {
      DI_LOG_WARN("reading the checkpoint's chat template failed (%s)",
                  from_model.status().message().c_str());
    } else if (from_model->has_value()) {
      source = std::move(**from_model);
      origin = "the checkpoint";
    }
  }
  std::shared_ptr<ChatTemplate> tmpl;
  if (source) {
    auto parsed = ChatTemplate::FromSource(*source);
    if (parsed.ok()) {
      if (Status s = CheckTemplateKeepsMessages(*parsed); !s.ok()) parsed = s;
    }
    if (!parsed.ok()) {
      if (!o.chat_template_file.empty()) return parsed.status().WithContext("--chat-template " + origin);
      std::fprintf(stderr,
                   "deepinfer serve: the chat template of the checkpoint is not supported (%s); "
                   "using the fallback chat format\n",
                   parsed.status().message().c_str());
    } else {
      tmpl = std::make_shared<ChatTemplate>(std::move(parsed).value());
    }
  } else {
    std::fprintf(stderr,
                 "deepinfer serve: the checkpoint has no chat template; using the fallback chat format "
                 "(<|role|>\\ncontent\\n ... <|assistant|>\\n)\n");
  }
  features->tool_parser = !o.tool_call_parser.empty() ? server::FindToolCallParser(o.tool_call_parser)
                          : tmpl && source                ? server::DetectToolCallParser(*source)
                                                          : nullptr;
  if (!tmpl) tmpl = std::make_shared<ChatTemplate>(ChatTemplate::Fallback());
  ChatRenderOptions render;
  const TokenizerData& data = loaded.tokenizer->data();
  auto piece = [&](int32_t id) {
    return id >= 0 && id < static_cast<int32_t>(data.pieces.size()) ? data.pieces[id] : "";
  };
  render.bos_token = piece(data.bos_id);
  render.eos_token = piece(data.eos_id);
  return server::ChatPromptRenderer(
      [tmpl, render](const std::vector<ChatMessage>& messages, const ChatRenderOptions& request) {
        ChatRenderOptions options = request;
        options.bos_token = render.bos_token;
        options.eos_token = render.eos_token;
        return tmpl->Render(messages, options);
      });
}

int Serve(ServeOptions o) {
  // Before any thread exists, so every thread inherits the blocked mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client that vanished must not kill the server

  if (o.batch_invariant) setenv("DEEPINFER_BATCH_INVARIANT", "1", 1);  // the seed system's switch
  LoadOptions load;
  load.num_threads = o.threads;
  load.tokenizer_path = o.tokenizer_path;
  auto loaded = LoadModel(o.model_path, load);
  if (!loaded.ok()) return Fail("serve", loaded.status().message());
  if (!loaded->tokenizer)
    return Fail("serve", o.model_path + ": checkpoint has no tokenizer; pass --tokenizer PATH");
  const int64_t context = loaded->model->config().max_position;
  if (o.engine.scheduler.max_model_len <= 0) {
    o.engine.scheduler.max_model_len = context;
  } else if (o.engine.scheduler.max_model_len > context) {
    return Fail("serve", "--max-model-len " + std::to_string(o.engine.scheduler.max_model_len) +
                             " exceeds the model's context length of " + std::to_string(context) + " tokens");
  }
  auto renderer = MakeChatRenderer(o, *loaded, &o.service.chat);
  if (!renderer.ok()) return Fail("serve", renderer.status().message());
  o.service.chat_renderer = std::move(*renderer);
  if (Status s = o.engine.Validate(); !s.ok()) return Fail("serve", s.message());

  auto engine = Engine::Create(std::move(*loaded), o.engine);
  if (!engine.ok()) return Fail("serve", engine.status().message());
  server::ApiService service(**engine, o.service);
  server::HttpServer http(service, o.http);
  if (Status s = http.Start(); !s.ok()) return Fail("serve", s.message());
  service.SetReady(true);
  std::printf("listening on http://%s:%u\n", o.http.host.c_str(), static_cast<unsigned>(http.port()));
  std::fflush(stdout);

  int sig = 0;
  sigwait(&signals, &sig);
  std::fprintf(stderr, "deepinfer serve: %s received; draining\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
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
  auto options = ParseOptions(args);
  if (!options.ok()) {
    if (options.status().message() == kUsage) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    return Fail("serve", options.status().message(), 2);
  }
  if (!options->verbose) SetLogLevel(LogLevel::kWarning);
  return Serve(std::move(*options));
}

}  // namespace deepinfer::tools
