// ApiService: the OpenAI-compatible API over an Engine, independent of the
// transport. Routes one HTTP request (method, path, Authorization, body) to
// /health, /metrics, /version, /tokenize, /detokenize, /v1/models[/{id}],
// /v1/completions, /v1/chat/completions or /v1/responses, validates and
// tokenizes it, submits the engine requests and answers through a
// ResponseWriter (see docs/serving.md for the fields and status codes).
// Only /v1/* needs the API key (as in vLLM).
//
// One file per group of routes: api_service.cc (routing, generation),
// info_routes.cc (/version, /v1/models), tokenize_routes.cc (/tokenize,
// /detokenize), responses_api.cc (/v1/responses over the chat path).
//
// Thread-safety: Handle may be called from several I/O threads at once.
// `engine` must outlive the service.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/status.h"
#include "engine/engine.h"
#include "grammar/structured_output.h"
#include "server/api_error.h"
#include "server/chat_prepare.h"
#include "server/chat_prompt.h"
#include "server/generation_job.h"
#include "server/parsed_request.h"
#include "server/response_writer.h"
#include "server/task_pool.h"
#include "tokenizer/chat_template.h"

namespace deepinfer::server {

struct ServiceOptions {
  std::string served_model_name = "deepinfer";
  std::string api_key;               // non-empty: /v1/* needs "Authorization: Bearer <key>"
  ChatPromptRenderer chat_renderer;  // null: the fallback format
  ChatFeatures chat;                 // tool-call parser, reasoning parser
  // Worker threads for request preparation (JSON, chat template,
  // tokenization) and for grammar compilation; 0 runs that step on the
  // caller's thread (tests). Bodies over large_body_bytes are prepared on
  // workers of their own, so a large prompt never delays small requests.
  // Beyond max_queued_requests waiting in one pool: 429.
  int prepare_threads = 4;
  int large_prepare_threads = 2;
  int64_t large_body_bytes = 64 << 10;
  int compile_threads = 2;
  size_t max_queued_requests = 4096;
  // Sampling defaults for the fields a request leaves out (serve
  // --generation-config); a request's own fields override them.
  SamplingParams default_sampling;
  // serve --seed: requests without a seed get one derived from it and their
  // arrival number, so a restarted server answers the same sequence of
  // requests the same way. Unset: a random seed per request.
  std::optional<uint64_t> default_seed;
  // serve --enable-log-requests: one line on stderr per finished choice.
  bool log_requests = false;
};

struct HttpRequestView {
  std::string method;         // "GET", "POST", ...
  std::string target;         // path, possibly with "?query"
  std::string authorization;  // the Authorization header, "" if none
  std::string body;
};

// A request body nesting deeper is refused before it is parsed.
inline constexpr int kMaxJsonDepth = 128;

// The fallback chat format (see ChatPromptRenderer).
std::string RenderFallbackChat(const std::vector<ChatMessage>& messages);

class ApiService {
 public:
  ApiService(Engine& engine, ServiceOptions options);
  ~ApiService();  // runs the requests already queued, then joins the workers

  void Handle(const HttpRequestView& request, const std::shared_ptr<ResponseWriter>& writer);
  // What the request gets from its method, target and Authorization alone,
  // when that decides it (404, 401, 405); the transport asks before reading
  // the body, so an unauthenticated client never has one buffered. `body`
  // is ignored. Handle applies the same checks.
  std::optional<ApiError> CheckBeforeBody(const HttpRequestView& request) const;

  // /health answers 200 only while ready and not shutting down; generation
  // routes answer 503 once shutdown began.
  void SetReady(bool ready) { ready_ = ready; }
  void BeginShutdown() { shutting_down_ = true; }

 private:
  // Runs `task` on a prepare worker (large bodies on their own), or inline
  // without workers; 429 when the queue is full.
  void RunPrepared(size_t body_bytes, std::function<void()> task,
                   const std::shared_ptr<ResponseWriter>& writer);
  // The routes beside generation (info_routes.cc, tokenize_routes.cc,
  // responses_api.cc).
  void HandleModel(const std::string& raw_id, const std::shared_ptr<ResponseWriter>& writer);
  void HandleVersion(const std::shared_ptr<ResponseWriter>& writer);
  nlohmann::json ModelCard() const;  // the one entry of /v1/models
  void HandleTokenize(const std::string& body, const std::shared_ptr<ResponseWriter>& writer);
  void HandleDetokenize(const std::string& body, const std::shared_ptr<ResponseWriter>& writer);
  void HandleResponses(const std::string& body, const std::shared_ptr<ResponseWriter>& writer);
  // The chat request's messages as prompt text (the chat template, or the fallback).
  StatusOr<std::string> RenderChat(const ParsedRequest& req) const;
  // The body as JSON, or the 400 it gets (nesting too deep, not JSON).
  std::optional<ApiError> ParseBody(const std::string& body, nlohmann::json* out) const;

  void HandleGeneration(ParsedRequest::Api api, const std::string& body,
                        const std::shared_ptr<ResponseWriter>& writer);
  // A request parsed, tokenized and validated; its constraints are made
  // (compiled) in StartJob.
  struct PreparedJob {
    std::vector<GenerationRequest> requests;
    JobOptions job;
    StructuredOutput* structured = nullptr;  // null: no constraint
    StructuredOutputSpec spec;
    std::string structured_field;  // "response_format", "guided_json", ... ("" for a forced tool call)
    bool ignore_eos = false;
    int32_t min_tokens = 0;
    std::vector<int32_t> end_ids;  // what min_tokens holds back: EOS, end ids, stop_token_ids
  };
  void StartJob(PreparedJob& prepared, const std::shared_ptr<ResponseWriter>& writer);
  void HandleModels(const std::shared_ptr<ResponseWriter>& writer);
  // add_special: nullopt = the API's default (completions yes, chat no:
  // the template writes BOS).
  StatusOr<std::vector<int32_t>> TokenizeText(const std::string& text, bool chat,
                                              std::optional<bool> add_special = std::nullopt) const;
  StatusOr<StructuredOutput*> GetStructuredOutput();
  std::string NextId(ParsedRequest::Api api);

  Engine& engine_;
  const ServiceOptions options_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> shutting_down_{false};
  std::atomic<uint64_t> next_id_{1};
  std::atomic<uint64_t> next_request_number_{0};  // generation requests, in arrival order (--seed)
  uint64_t id_salt_ = 0;
  int64_t max_bytes_per_token_ = 0;  // the longest text one token stands for (early prompt-length check)

  std::mutex structured_mu_;
  std::unique_ptr<StructuredOutput> structured_;  // built on first use (vocabulary scan)
  // The grammar vocabulary's end-of-generation ids (what a complete grammar
  // allows next); written with structured_.
  std::vector<int32_t> structured_end_ids_;

  // Last members: destroyed first, while everything their tasks use lives.
  std::unique_ptr<TaskPool> compile_pool_;
  std::unique_ptr<TaskPool> prepare_pool_;
  std::unique_ptr<TaskPool> large_prepare_pool_;
};

}  // namespace deepinfer::server
