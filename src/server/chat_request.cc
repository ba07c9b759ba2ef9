// /v1/chat/completions body -> ParsedRequest.
#include <limits>

#include "server/request_fields.h"

namespace deepinfer::server {
namespace {

using fields::json;
using fields::MaybeError;

// content: "text" | [{"type": "text", "text": "..."}, ...] | null (joined
// with no separator, as OpenAI concatenates text parts).
MaybeError ParseContent(const json& message, std::string* out) {
  const json* c = fields::Find(message, "content");
  if (!c) return std::nullopt;
  if (c->is_string()) {
    *out = c->get<std::string>();
    return std::nullopt;
  }
  const char* what =
      "message 'content' must be a string or a list of {\"type\": \"text\", \"text\": ...} parts";
  if (!c->is_array()) return BadRequest(what, "messages");
  for (const json& part : *c) {
    if (!part.is_object()) return BadRequest(what, "messages");
    const json* type = fields::Find(part, "type");
    const json* text = fields::Find(part, "text");
    if (!type || !type->is_string() || type->get<std::string>() != "text") {
      return BadRequest("only text content parts are supported", "messages");
    }
    if (!text || !text->is_string()) return BadRequest(what, "messages");
    *out += text->get<std::string>();
  }
  return std::nullopt;
}

MaybeError ParseMessages(const json& body, std::vector<ChatMessage>* out) {
  const json* m = fields::Find(body, "messages");
  if (!m) return BadRequest("'messages' is required", "messages");
  if (!m->is_array() || m->empty()) return BadRequest("'messages' must be a non-empty list", "messages");
  for (const json& msg : *m) {
    if (!msg.is_object()) return BadRequest("each message must be an object", "messages");
    const json* role = fields::Find(msg, "role");
    if (!role || !role->is_string()) return BadRequest("each message needs a string 'role'", "messages");
    std::string r = role->get<std::string>();
    if (r != "system" && r != "user" && r != "assistant" && r != "tool" && r != "developer") {
      return BadRequest("unknown message role '" + r + "'", "messages");
    }
    ChatMessage cm;
    cm.role = std::move(r);
    if (auto e = ParseContent(msg, &cm.content)) return e;
    out->push_back(std::move(cm));
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> ParseChatRequest(const json& body, const RequestLimits& limits, ParsedRequest* out) {
  if (!body.is_object()) return BadRequest("the request body must be a JSON object");
  out->api = ParsedRequest::Api::kChat;
  if (auto e = ParseMessages(body, &out->messages)) return e;
  if (auto e = fields::ParseCommonFields(body, limits, out)) return e;
  constexpr int64_t kI32 = std::numeric_limits<int32_t>::max();
  int64_t max_tokens = -1;
  if (auto e = fields::Int(body, "max_tokens", 1, kI32, &max_tokens)) return e;
  if (auto e = fields::Int(body, "max_completion_tokens", 1, kI32, &max_tokens)) return e;
  // Absent: the rest of the context (ApiService fills it in after tokenizing).
  if (max_tokens > 0) out->max_tokens = static_cast<int32_t>(max_tokens);
  bool logprobs = false;
  if (auto e = fields::Bool(body, "logprobs", &logprobs)) return e;
  int64_t top = -1;
  if (auto e = fields::Int(body, "top_logprobs", 0, limits.max_logprobs, &top)) return e;
  if (top >= 0 && !logprobs) return BadRequest("'top_logprobs' needs \"logprobs\": true", "top_logprobs");
  out->logprobs = logprobs ? static_cast<int32_t>(top < 0 ? 0 : top) : -1;
  return std::nullopt;
}

}  // namespace deepinfer::server
