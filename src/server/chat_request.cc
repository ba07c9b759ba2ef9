// /v1/chat/completions body -> ParsedRequest.
#include <limits>

#include "server/request_fields.h"

namespace deepinfer::server {
namespace {

using fields::json;
using fields::MaybeError;

// content: "text" | [{"type": "text", "text": "..."}, ...] | null. Text parts
// are joined with "\n", as vLLM joins them for string-content templates;
// null stays None for the template (an assistant turn of only tool calls).
MaybeError ParseContent(const json& message, ChatMessage* out) {
  auto it = message.find("content");
  if (it == message.end() || it->is_null()) {
    out->content_is_null = true;
    return std::nullopt;
  }
  const json* c = &*it;
  if (c->is_string()) {
    out->content = c->get<std::string>();
    return std::nullopt;
  }
  const char* what =
      "message 'content' must be a string, null or a list of {\"type\": \"text\", \"text\": ...} parts";
  if (!c->is_array()) return BadRequest(what, "messages");
  bool first = true;
  for (const json& part : *c) {
    if (!part.is_object()) return BadRequest(what, "messages");
    const json* type = fields::Find(part, "type");
    const json* text = fields::Find(part, "text");
    if (!type || !type->is_string()) return BadRequest(what, "messages");
    if (type->get<std::string>() != "text") {
      return BadRequest("content part type '" + type->get<std::string>() +
                            "' is not supported (this server takes text parts only)",
                        "messages");
    }
    if (!text || !text->is_string()) return BadRequest(what, "messages");
    if (!first) out->content += "\n";
    out->content += text->get<std::string>();
    first = false;
  }
  return std::nullopt;
}

// tool_calls must be a list of {"id", "type": "function", "function":
// {"name", "arguments"}} (arguments a JSON string, as OpenAI sends it, or an
// object). They pass to the template unchanged, as HF passes them.
MaybeError CheckToolCalls(const json& msg) {
  const json* calls = fields::Find(msg, "tool_calls");
  if (!calls) return std::nullopt;
  const char* what =
      "'tool_calls' must be a list of {\"type\": \"function\", \"function\": {\"name\", \"arguments\"}}";
  if (!calls->is_array()) return BadRequest(what, "messages");
  for (const json& call : *calls) {
    if (!call.is_object()) return BadRequest(what, "messages");
    const json* fn = fields::Find(call, "function");
    if (!fn || !fn->is_object()) return BadRequest(what, "messages");
    const json* name = fields::Find(*fn, "name");
    if (!name || !name->is_string()) return BadRequest(what, "messages");
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
    if (auto e = ParseContent(msg, &cm)) return e;
    if (auto e = CheckToolCalls(msg)) return e;
    for (const char* name : {"name", "tool_call_id"}) {
      const json* v = fields::Find(msg, name);
      if (v && !v->is_string())
        return BadRequest(std::string("message '") + name + "' must be a string", "messages");
    }
    cm.fields = nlohmann::ordered_json::object();
    for (auto it = msg.begin(); it != msg.end(); ++it) {
      if (it.key() != "role" && it.key() != "content") cm.fields[it.key()] = it.value();
    }
    out->push_back(std::move(cm));
  }
  return std::nullopt;
}

// add_generation_prompt, continue_final_message, documents,
// chat_template_kwargs: what the template gets besides the messages.
MaybeError ParseTemplateInputs(const json& body, ParsedRequest* out) {
  ChatRenderOptions& chat = out->chat;
  if (auto e = fields::Bool(body, "add_generation_prompt", &chat.add_generation_prompt)) return e;
  if (auto e = fields::Bool(body, "continue_final_message", &chat.continue_final_message)) return e;
  if (chat.continue_final_message) {
    if (body.contains("add_generation_prompt") && chat.add_generation_prompt) {
      return BadRequest("'continue_final_message' and 'add_generation_prompt' cannot both be true",
                        "continue_final_message");
    }
    chat.add_generation_prompt = false;  // vLLM's default when continuing
  }
  if (const json* docs = fields::Find(body, "documents")) {
    if (!docs->is_array()) return BadRequest("'documents' must be a list of objects", "documents");
    for (const json& d : *docs) {
      if (!d.is_object()) return BadRequest("'documents' must be a list of objects", "documents");
    }
    chat.documents = *docs;
  }
  if (const json* kwargs = fields::Find(body, "chat_template_kwargs")) {
    if (!kwargs->is_object())
      return BadRequest("'chat_template_kwargs' must be an object", "chat_template_kwargs");
    for (auto it = kwargs->begin(); it != kwargs->end(); ++it) {
      const std::string& k = it.key();
      if (k == "messages" || k == "tools" || k == "documents" || k == "add_generation_prompt" ||
          k == "bos_token" || k == "eos_token") {
        return BadRequest("'chat_template_kwargs' cannot set '" + k + "' (use the request field)",
                          "chat_template_kwargs");
      }
    }
    chat.variables = *kwargs;
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> ParseChatRequest(const json& body, const RequestLimits& limits, ParsedRequest* out) {
  if (!body.is_object()) return BadRequest("the request body must be a JSON object");
  out->api = ParsedRequest::Api::kChat;
  if (auto e = fields::CheckFieldNames(
          body,
          {"messages", "max_tokens", "max_completion_tokens", "logprobs", "top_logprobs",
           "add_generation_prompt", "continue_final_message", "documents", "chat_template_kwargs", "tools",
           "tool_choice", "parallel_tool_calls", "echo", "prompt_logprobs"},
          {"chat_template", "suffix", "reasoning_effort", "audio", "modalities", "prediction",
           "web_search_options", "mm_processor_kwargs", "guided_decoding_backend",
           "truncate_prompt_tokens"})) {
    return e;
  }
  if (auto e = ParseMessages(body, &out->messages)) return e;
  if (auto e = fields::ParseCommonFields(body, limits, out)) return e;
  if (auto e = ParseTemplateInputs(body, out)) return e;
  if (auto e = fields::ParseTools(body, out)) return e;
  if (auto e = fields::Bool(body, "echo", &out->echo)) return e;
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
  if (auto e = fields::PromptLogprobs(body, limits, out)) return e;
  return std::nullopt;
}

}  // namespace deepinfer::server
