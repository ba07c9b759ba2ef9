// ApiService: the OpenAI-compatible API over an Engine, independent of the
// transport. Routes one HTTP request (method, path, Authorization, body) to
// /health, /metrics, /v1/models, /v1/completions or /v1/chat/completions,
// validates and tokenizes it, submits the engine requests and answers through
// a ResponseWriter (see docs/serving.md for the fields and status codes).
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

#include "core/status.h"
#include "engine/engine.h"
#include "grammar/structured_output.h"
#include "server/api_error.h"
#include "server/parsed_request.h"
#include "server/response_writer.h"
#include "tokenizer/chat_template.h"

namespace deepinfer::server {

// Renders chat messages into prompt text (with the generation prompt). Null:
// the built-in fallback format, "<|role|>\ncontent\n" per message, then
// "<|assistant|>\n" (what ChatTemplate::Fallback documents).
using ChatPromptRenderer = std::function<StatusOr<std::string>(const std::vector<ChatMessage>&)>;

struct ServiceOptions {
  std::string served_model_name = "deepinfer";
  std::string api_key;  // non-empty: /v1/* needs "Authorization: Bearer <key>"
  ChatPromptRenderer chat_renderer;
};

struct HttpRequestView {
  std::string method;         // "GET", "POST", ...
  std::string target;         // path, possibly with "?query"
  std::string authorization;  // the Authorization header, "" if none
  std::string body;
};

// The fallback chat format (see ChatPromptRenderer).
std::string RenderFallbackChat(const std::vector<ChatMessage>& messages);

class ApiService {
 public:
  ApiService(Engine& engine, ServiceOptions options);

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
  void HandleGeneration(ParsedRequest::Api api, const std::string& body,
                        const std::shared_ptr<ResponseWriter>& writer);
  void HandleModels(const std::shared_ptr<ResponseWriter>& writer);
  StatusOr<std::vector<int32_t>> TokenizeText(const std::string& text, bool chat) const;
  StatusOr<StructuredOutput*> GetStructuredOutput();
  std::string NextId(ParsedRequest::Api api);

  Engine& engine_;
  const ServiceOptions options_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> shutting_down_{false};
  std::atomic<uint64_t> next_id_{1};
  uint64_t id_salt_ = 0;

  std::mutex structured_mu_;
  std::unique_ptr<StructuredOutput> structured_;  // built on first use (vocabulary scan)
  // The grammar vocabulary's end-of-generation ids (what a complete grammar
  // allows next); written with structured_.
  std::vector<int32_t> structured_end_ids_;
};

}  // namespace deepinfer::server
