#include "server/api_service.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>

#include <nlohmann/json.hpp>

#include "core/log.h"
#include "sampling/min_tokens_constraint.h"
#include "server/generation_job.h"
#include "server/metrics_text.h"
#include "structured/tokenizer_vocabulary.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer::server {
namespace {

using json = nlohmann::json;

// Grammar compiles and large bodies are background work: their workers run
// at a lower CPU priority, so a short request's first token is not queued
// behind them for a core.
constexpr int kBackgroundNice = 10;

void SendError(ResponseWriter& writer, const ApiError& error) {
  writer.SendResponse(error.http_status, "application/json", error.ToJson());
}

ApiError MakeError(int status, std::string type, std::string message, std::string code = "") {
  ApiError e;
  e.http_status = status;
  e.type = std::move(type);
  e.message = std::move(message);
  e.code = std::move(code);
  return e;
}

// --seed S: request k's seed, a SplitMix64 step of S + k, so neighbouring
// requests get unrelated streams.
uint64_t DerivedSeed(uint64_t base, uint64_t k) {
  uint64_t z = base + (k + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The response's "warnings" for a best-effort JSON Schema: one entry per
// assertion the constraint leaves out (the output may violate it), with the
// keyword and JSON pointer apart for programs and a sentence for people.
json RelaxedAssertionWarnings(const std::vector<RelaxedSchemaAssertion>& relaxed, const std::string& field) {
  json warnings = json::array();
  for (const RelaxedSchemaAssertion& r : relaxed) {
    warnings.push_back(json{
        {"type", "relaxed_schema_assertion"},
        {"message", "JSON Schema assertion not enforced (best effort; the output may violate it): " +
                        r.keyword + " at " + r.pointer + ". Set json_schema.strict to refuse such schemas."},
        {"param", field.empty() ? json(nullptr) : json(field)},
        {"keyword", r.keyword},
        {"pointer", r.pointer}});
  }
  return warnings;
}

std::string PathOf(const std::string& target) {
  size_t q = target.find('?');
  return q == std::string::npos ? target : target.substr(0, q);
}

}  // namespace

std::string RenderFallbackChat(const std::vector<ChatMessage>& messages) {
  std::string out;
  for (const ChatMessage& m : messages) out += "<|" + m.role + "|>\n" + m.content + "\n";
  out += "<|assistant|>\n";
  return out;
}

ApiService::ApiService(Engine& engine, ServiceOptions options)
    : engine_(engine), options_(std::move(options)) {
  id_salt_ = std::random_device{}();
  id_salt_ = (id_salt_ << 32) ^ std::random_device{}();
  // The most text one token can stand for: its bytes, or its piece (what
  // parse_special matches, and SentencePiece's normalized form).
  const Tokenizer& tok = engine_.tokenizer();
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    const size_t piece = tok.data().pieces[static_cast<size_t>(id)].size();
    max_bytes_per_token_ = std::max<int64_t>(
        max_bytes_per_token_, static_cast<int64_t>(std::max(piece, tok.TokenBytes(id).size())));
  }
  // Without threads (none could be created) requests are prepared inline.
  if (options_.prepare_threads > 0) {
    auto pool =
        TaskPool::Create("request preparation", options_.prepare_threads, options_.max_queued_requests);
    if (pool.ok()) {
      prepare_pool_ = std::move(*pool);
    } else {
      DI_LOG_WARN("%s; preparing requests on the I/O threads", pool.status().message().c_str());
    }
  }
  if (options_.large_prepare_threads > 0) {
    auto pool = TaskPool::Create("large request preparation", options_.large_prepare_threads,
                                 options_.max_queued_requests, kBackgroundNice);
    if (pool.ok()) {
      large_prepare_pool_ = std::move(*pool);
    } else {
      DI_LOG_WARN("%s; preparing large requests with the others", pool.status().message().c_str());
    }
  }
  if (options_.compile_threads > 0) {
    auto pool = TaskPool::Create("grammar compilation", options_.compile_threads,
                                 options_.max_queued_requests, kBackgroundNice);
    if (pool.ok()) {
      compile_pool_ = std::move(*pool);
    } else {
      DI_LOG_WARN("%s; compiling grammars on the preparation threads", pool.status().message().c_str());
    }
  }
}

ApiService::~ApiService() {
  // Queued work finishes first; compile tasks answer through StartJob, which
  // needs the engine and this service, so they go before anything else.
  prepare_pool_.reset();
  large_prepare_pool_.reset();
  compile_pool_.reset();
}

// The answer a request gets from its method, path and Authorization alone,
// if that already decides it: no route (404), a missing or wrong API key
// (401, /v1/* only, as in vLLM), a method the route does not take (405).
// Generation routes are checked for readiness later, with the body.
std::optional<ApiError> ApiService::CheckBeforeBody(const HttpRequestView& request) const {
  const std::string path = PathOf(request.target);
  const bool get = request.method == "GET" || request.method == "HEAD";
  const bool post = request.method == "POST";
  struct Route {
    const char* path;
    bool post;  // else GET (and HEAD)
  };
  static constexpr Route kRoutes[] = {
      {"/health", false},        {"/metrics", false},
      {"/version", false},       {"/tokenize", true},
      {"/detokenize", true},     {"/v1/models", false},
      {"/v1/completions", true}, {"/v1/chat/completions", true},
      {"/v1/responses", true},
  };
  static constexpr Route kModelById = {"/v1/models/", false};
  const Route* route = nullptr;
  for (const Route& r : kRoutes) {
    if (path == r.path) route = &r;
  }
  if (route == nullptr && path.starts_with(kModelById.path) && path.size() > std::strlen(kModelById.path)) {
    route = &kModelById;
  }
  if (route == nullptr) {
    return MakeError(404, "invalid_request_error", "no route for " + request.method + " " + path,
                     "not_found");
  }
  if (path.starts_with("/v1/") && !options_.api_key.empty() &&
      request.authorization != "Bearer " + options_.api_key) {
    return MakeError(401, "authentication_error", "missing or invalid API key (Authorization: Bearer KEY)",
                     "invalid_api_key");
  }
  if (!route->post && !get) return MakeError(405, "invalid_request_error", "use GET " + path);
  if (route->post && !post) return MakeError(405, "invalid_request_error", "use POST " + path);
  return std::nullopt;
}

void ApiService::RunPrepared(size_t body_bytes, std::function<void()> task,
                             const std::shared_ptr<ResponseWriter>& writer) {
  const bool large = static_cast<int64_t>(body_bytes) > options_.large_body_bytes;
  TaskPool* pool = large && large_prepare_pool_ ? large_prepare_pool_.get() : prepare_pool_.get();
  if (pool == nullptr) return task();
  if (!pool->Post(std::move(task))) {
    SendError(*writer, MakeError(429, "rate_limit_error", "too many requests are waiting to be prepared"));
  }
}

void ApiService::Handle(const HttpRequestView& request, const std::shared_ptr<ResponseWriter>& writer) {
  if (std::optional<ApiError> refused = CheckBeforeBody(request)) return SendError(*writer, *refused);
  const std::string path = PathOf(request.target);
  if (path == "/health") {
    bool ok = ready_ && !shutting_down_;
    return writer->SendResponse(ok ? 200 : 503, "text/plain", ok ? "" : "not ready\n");
  }
  if (path == "/metrics") {
    return writer->SendResponse(200, "text/plain; version=0.0.4; charset=utf-8",
                                RenderPrometheusMetrics(engine_.Metrics()));
  }
  if (path == "/version") return HandleVersion(writer);
  if (path == "/v1/models") return HandleModels(writer);
  if (path.starts_with("/v1/models/")) return HandleModel(path.substr(std::strlen("/v1/models/")), writer);
  // Parsing, the chat template and tokenization run on the prepare workers,
  // never on the caller's (an HTTP I/O) thread.
  auto body = std::make_shared<std::string>(request.body);
  if (path == "/tokenize") {
    return RunPrepared(
        body->size(), [this, body, writer] { HandleTokenize(*body, writer); }, writer);
  }
  if (path == "/detokenize") {
    return RunPrepared(
        body->size(), [this, body, writer] { HandleDetokenize(*body, writer); }, writer);
  }
  if (shutting_down_ || !ready_) {
    return SendError(*writer,
                     MakeError(503, "service_unavailable", "the server is not ready or is shutting down"));
  }
  if (path == "/v1/responses") {
    return RunPrepared(
        body->size(), [this, body, writer] { HandleResponses(*body, writer); }, writer);
  }
  const ParsedRequest::Api api =
      path == "/v1/completions" ? ParsedRequest::Api::kCompletion : ParsedRequest::Api::kChat;
  RunPrepared(
      body->size(), [this, api, body, writer] { HandleGeneration(api, *body, writer); }, writer);
}

void ApiService::HandleModels(const std::shared_ptr<ResponseWriter>& writer) {
  json model = ModelCard();  // info_routes.cc
  writer->SendResponse(200, "application/json",
                       Dump(json{{"object", "list"}, {"data", json::array({model})}}));
}

StatusOr<std::vector<int32_t>> ApiService::TokenizeText(const std::string& text, bool chat,
                                                        std::optional<bool> add_special_tokens) const {
  // No token stands for more than max_bytes_per_token_ bytes, so a longer
  // text is over the limit whatever it encodes to: refused before the
  // tokenizer spends seconds on it.
  const int64_t max_model_len = engine_.config().scheduler.max_model_len;
  if (max_bytes_per_token_ > 0 && static_cast<int64_t>(text.size()) / max_bytes_per_token_ >= max_model_len) {
    return OutOfRange("the prompt has " + std::to_string(text.size()) + " bytes, more than " +
                      std::to_string(max_model_len) + " tokens (max_model_len) can hold (at most " +
                      std::to_string(max_bytes_per_token_) + " bytes per token)");
  }
  const Tokenizer& tok = engine_.tokenizer();
  bool add_special = true;
  if (chat) {
    // Templates usually write BOS themselves; never add a second one.
    int32_t bos = tok.bos_id();
    if (bos >= 0 && bos < tok.vocab_size()) {
      const std::string& piece = tok.data().pieces[static_cast<size_t>(bos)];
      if (!piece.empty() && text.rfind(piece, 0) == 0) add_special = false;
    }
  }
  if (add_special_tokens) add_special = *add_special_tokens;
  std::vector<int32_t> ids = tok.Encode(text, add_special, /*parse_special=*/true);
  if (ids.empty()) return InvalidArgument("the prompt encodes to no tokens");
  return ids;
}

StatusOr<StructuredOutput*> ApiService::GetStructuredOutput() {
  std::lock_guard<std::mutex> lock(structured_mu_);
  if (structured_) return structured_.get();
  TokenizerVocabulary vocab = GrammarVocabularyOf(engine_.tokenizer(), engine_.model_config().vocab_size);
  std::vector<int32_t> end_ids = vocab.end_of_generation_ids;
  DI_ASSIGN_OR_RETURN(structured_,
                      StructuredOutput::Create(std::move(vocab.token_bytes), vocab.end_of_generation_ids));
  structured_end_ids_ = std::move(end_ids);
  return structured_.get();
}

std::string ApiService::NextId(ParsedRequest::Api api) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s-%016llx%08llx", api == ParsedRequest::Api::kChat ? "chatcmpl" : "cmpl",
                static_cast<unsigned long long>(id_salt_),
                static_cast<unsigned long long>(next_id_.fetch_add(1)));
  return buf;
}

void ApiService::HandleGeneration(ParsedRequest::Api api, const std::string& body,
                                  const std::shared_ptr<ResponseWriter>& writer) {
  if (JsonNestsDeeperThan(body, kMaxJsonDepth)) {
    return SendError(*writer,
                     BadRequest("the request body nests deeper than " + std::to_string(kMaxJsonDepth)));
  }
  // Ordered: schemas keep their property order (generated in that order).
  nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return SendError(*writer, BadRequest("the request body is not valid JSON"));

  RequestLimits limits;
  limits.vocab_size = engine_.model_config().vocab_size;
  ParsedRequest req;
  req.sampling = options_.default_sampling;  // the fields the body leaves out keep these
  std::optional<ApiError> error = api == ParsedRequest::Api::kChat
                                      ? ParseChatRequest(parsed, limits, &req)
                                      : ParseCompletionRequest(parsed, limits, &req);
  if (error) return SendError(*writer, *error);
  if (!req.model.empty() && req.model != options_.served_model_name) {
    return SendError(*writer, MakeError(404, "invalid_request_error",
                                        "the model '" + req.model + "' does not exist; this server serves '" +
                                            options_.served_model_name + "'",
                                        "model_not_found"));
  }

  // Prompts -> token ids (and the echo text per prompt).
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::string> prompt_texts;
  auto prepared = std::make_shared<PreparedJob>();
  if (api == ParsedRequest::Api::kChat) {
    if (auto e = PrepareChatOutput(req, options_.chat, &prepared->job, &req.structured)) {
      return SendError(*writer, *e);
    }
    if (req.structured && req.structured_field.empty()) req.structured_field = "tools";  // a forced call
    StatusOr<std::string> text = RenderChatPrompt(options_.chat_renderer, req);
    if (!text.ok()) return SendError(*writer, RequestContentError(text.status(), "messages"));
    auto ids = TokenizeText(*text, /*chat=*/true, req.add_special_tokens);
    if (!ids.ok()) return SendError(*writer, RequestContentError(ids.status(), "messages"));
    prompts.push_back(std::move(*ids));
    prompt_texts.push_back(ChatEchoText(req));
  } else {
    for (PromptInput& p : req.prompts) {
      if (p.is_tokens) {
        prompt_texts.push_back(req.echo ? engine_.tokenizer().Decode(p.tokens) : "");
        prompts.push_back(std::move(p.tokens));
      } else {
        auto ids = TokenizeText(p.text, /*chat=*/false, req.add_special_tokens);
        if (!ids.ok()) return SendError(*writer, RequestContentError(ids.status(), "prompt"));
        prompts.push_back(std::move(*ids));
        prompt_texts.push_back(req.echo ? p.text : "");
      }
    }
  }

  const int64_t max_model_len = engine_.config().scheduler.max_model_len;
  if (req.min_tokens > 0) {
    prepared->min_tokens = req.min_tokens;
    const Tokenizer& tok = engine_.tokenizer();
    for (int32_t id = 0; id < tok.vocab_size(); ++id) {
      if (tok.IsEndOfGeneration(id)) prepared->end_ids.push_back(id);
    }
    prepared->end_ids.insert(prepared->end_ids.end(), req.stop_token_ids.begin(), req.stop_token_ids.end());
  }
  if (req.structured) {
    auto so = GetStructuredOutput();
    if (!so.ok()) return SendError(*writer, ApiErrorFromStatus(so.status()));
    prepared->structured = *so;
    prepared->spec = *req.structured;
    prepared->structured_field = req.structured_field;
    prepared->ignore_eos = req.ignore_eos;
  }

  // A job submits all its choices at once and each waits in the engine's
  // queue until admitted: more choices than the queue holds could be
  // refused whatever the load, so it is the request's error, not a 429.
  const int64_t num_choices = static_cast<int64_t>(prompts.size()) * req.n;
  const int64_t max_waiting = engine_.config().max_waiting_requests;
  if (num_choices > max_waiting) {
    return SendError(*writer,
                     BadRequest(std::to_string(num_choices) +
                                    " choices (prompts x n) can never be queued at once; this server "
                                    "queues at most " +
                                    std::to_string(max_waiting) + " (--max-waiting-requests)",
                                "n"));
  }

  const uint64_t request_number = next_request_number_.fetch_add(1);
  std::vector<GenerationRequest>& requests = prepared->requests;
  JobOptions& job = prepared->job;
  for (size_t p = 0; p < prompts.size(); ++p) {
    const int64_t prompt_len = static_cast<int64_t>(prompts[p].size());
    int64_t max_tokens = req.max_tokens ? *req.max_tokens : max_model_len - prompt_len;
    if (prompt_len >= max_model_len || prompt_len + max_tokens > max_model_len) {
      return SendError(*writer,
                       BadRequest("the prompt has " + std::to_string(prompt_len) + " tokens and " +
                                      std::to_string(max_tokens) + " more were requested; the limit is " +
                                      std::to_string(max_model_len) + " (max_model_len)",
                                  req.max_tokens ? "max_tokens" : "messages"));
    }
    for (int32_t j = 0; j < req.n; ++j) {
      GenerationRequest g;
      g.prompt_tokens = prompts[p];
      g.sampling = req.sampling;
      if (req.has_seed) {
        g.seed = req.sampling.seed;
      } else if (options_.default_seed) {
        g.seed = DerivedSeed(*options_.default_seed, request_number);
      }  // else unset: the engine draws a random one
      g.draw_stream = static_cast<uint32_t>(j);
      g.max_tokens = static_cast<int32_t>(max_tokens);
      g.stop_token_ids = req.stop_token_ids;
      g.stop = req.stop;
      g.ignore_eos = req.ignore_eos;
      g.logprobs = req.logprobs;
      // Completions echo + logprobs report the prompt's tokens too (vLLM).
      g.prompt_logprobs = std::max(req.prompt_logprobs,
                                   req.echo && api == ParsedRequest::Api::kCompletion ? req.logprobs : -1);
      g.priority = req.priority;
      requests.push_back(std::move(g));
      job.echo_text.push_back(prompt_texts[p]);
    }
  }
  if (Status s = req.sampling.Validate(); !s.ok()) return SendError(*writer, ApiErrorFromStatus(s));

  job.context.api = api;
  job.context.id = NextId(api);
  job.context.model = options_.served_model_name;
  job.context.created =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  job.stream = req.stream;
  job.include_usage = req.include_usage;
  job.want_logprobs = req.logprobs >= 0;
  job.prompt_logprobs = req.prompt_logprobs;
  if (req.echo && api == ParsedRequest::Api::kCompletion) job.echo_logprobs = req.logprobs;
  job.n = req.n;
  if (!req.echo) job.echo_text.clear();
  if (req.min_tokens > 0 && !prepared->structured) {
    for (GenerationRequest& g : requests) {
      g.constraint = std::make_unique<MinTokensConstraint>(nullptr, req.min_tokens, prepared->end_ids);
    }
  }
  if (options_.log_requests) {
    char params[192];
    std::snprintf(params, sizeof params, "max_tokens %lld, temperature %g, top_p %g, top_k %lld%s%s",
                  static_cast<long long>(requests.empty() ? 0 : requests[0].max_tokens),
                  req.sampling.temperature, req.sampling.top_p, static_cast<long long>(req.sampling.top_k),
                  req.stream ? ", stream" : "", req.structured ? ", structured" : "");
    job.log_params = params;
  }

  // Compiling a grammar may take seconds (up to its time budget): on the
  // compile workers, so requests without one are not queued behind it.
  if (prepared->structured && compile_pool_) {
    if (!compile_pool_->Post([this, prepared, writer] { StartJob(*prepared, writer); })) {
      return SendError(*writer, MakeError(429, "rate_limit_error",
                                          "too many structured-output requests are waiting to compile"));
    }
    return;
  }
  StartJob(*prepared, writer);
}

void ApiService::StartJob(PreparedJob& prepared, const std::shared_ptr<ResponseWriter>& writer) {
  if (prepared.structured) {
    for (GenerationRequest& g : prepared.requests) {
      // The compile is cached: every choice after the first is a lookup.
      auto made = prepared.structured->Make(prepared.spec);
      if (!made.ok())
        return SendError(*writer, RequestContentError(made.status(), prepared.structured_field));
      if (&g == &prepared.requests.front()) {
        prepared.job.warnings = RelaxedAssertionWarnings(made->relaxed, prepared.structured_field);
      }
      g.constraint = std::move(made->constraint);
      if (prepared.min_tokens > 0) {
        g.constraint = std::make_unique<MinTokensConstraint>(std::move(g.constraint), prepared.min_tokens,
                                                             prepared.end_ids);
      }
      // A grammar allows end-of-generation only where the output is
      // complete, and then nothing else: with ignore_eos that token must
      // still end the request (finish_reason "stop"), or the next step
      // would have no allowed token.
      if (prepared.ignore_eos) {
        g.stop_token_ids.insert(g.stop_token_ids.end(), structured_end_ids_.begin(),
                                structured_end_ids_.end());
      }
    }
  }
  const Tokenizer* tok = &engine_.tokenizer();
  TokenTextFn token_text = [tok](int32_t id) {
    std::string text = tok->TokenBytes(id);
    // Control tokens contribute no text; show their piece instead of "".
    if (text.empty() && id >= 0 && id < tok->vocab_size()) text = tok->data().pieces[static_cast<size_t>(id)];
    return text;
  };
  auto generation =
      std::make_shared<GenerationJob>(engine_, std::move(prepared.job), std::move(token_text), writer);
  if (auto start_error = generation->Start(std::move(prepared.requests))) SendError(*writer, *start_error);
}

}  // namespace deepinfer::server
