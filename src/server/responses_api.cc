#include "server/responses_api.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <random>
#include <utility>
#include <vector>

#include "server/api_service.h"

namespace deepinfer::server {
namespace {

using ojson = nlohmann::ordered_json;

ApiError Unsupported(const std::string& field, const std::string& what) {
  ApiError e = BadRequest("'" + field + "' " + what + " is not supported by /v1/responses yet", field);
  e.code = "unsupported";
  return e;
}

// One input item (a message) -> a chat message. Text parts become chat text
// parts, so they are joined as the chat route joins them.
std::optional<ApiError> TranslateMessage(const ojson& item, size_t index, ojson* out) {
  const std::string where = "input[" + std::to_string(index) + "]";
  if (!item.is_object()) return BadRequest(where + " must be a message object", "input");
  if (auto t = item.find("type"); t != item.end() && !(t->is_string() && *t == "message")) {
    return Unsupported("input", "an item of type " + t->dump());
  }
  auto role = item.find("role");
  if (role == item.end() || !role->is_string()) return BadRequest(where + ".role must be a string", "input");
  std::string r = role->get<std::string>();
  if (r == "developer") r = "system";  // the Responses API's name for system instructions
  if (r != "user" && r != "assistant" && r != "system") {
    return BadRequest(where + ".role must be user, assistant, system or developer", "input");
  }
  auto content = item.find("content");
  if (content == item.end()) return BadRequest(where + ".content is missing", "input");
  ojson chat_content;
  if (content->is_string()) {
    chat_content = *content;
  } else if (content->is_array()) {
    chat_content = ojson::array();
    for (const ojson& part : *content) {
      auto type = part.is_object() ? part.find("type") : part.end();
      auto text = part.is_object() ? part.find("text") : part.end();
      const bool text_part = type != part.end() && type->is_string() &&
                             (*type == "input_text" || *type == "output_text" || *type == "text");
      if (!text_part) {
        return Unsupported("input",
                           "a content part of type " + (type != part.end() ? type->dump() : "(none)"));
      }
      if (text == part.end() || !text->is_string())
        return BadRequest(where + " text part needs 'text'", "input");
      chat_content.push_back(ojson{{"type", "text"}, {"text", *text}});
    }
  } else {
    return BadRequest(where + ".content must be a string or a list of text parts", "input");
  }
  *out = ojson{{"role", r}, {"content", std::move(chat_content)}};
  return std::nullopt;
}

std::optional<ApiError> TranslateFormat(const ojson& text, ojson* chat) {
  if (!text.is_object()) return BadRequest("'text' must be an object", "text");
  for (const auto& [key, value] : text.items()) {
    if (key != "format" && key != "verbosity") return BadRequest("unknown field 'text." + key + "'", "text");
  }
  auto format = text.find("format");
  if (format == text.end() || format->is_null()) return std::nullopt;
  if (!format->is_object() || !format->contains("type") || !(*format)["type"].is_string()) {
    return BadRequest("'text.format' must be an object with a 'type'", "text.format");
  }
  const std::string type = (*format)["type"];
  if (type == "text") return std::nullopt;
  if (type == "json_object") {
    (*chat)["response_format"] = ojson{{"type", "json_object"}};
    return std::nullopt;
  }
  if (type != "json_schema") {
    return BadRequest("'text.format.type' must be text, json_object or json_schema", "text.format");
  }
  auto schema = format->find("schema");
  if (schema == format->end()) return BadRequest("'text.format' json_schema needs 'schema'", "text.format");
  ojson js = {{"name", format->value("name", std::string("response"))}, {"schema", *schema}};
  if (auto strict = format->find("strict"); strict != format->end()) js["strict"] = *strict;
  if (auto d = format->find("description"); d != format->end()) js["description"] = *d;
  (*chat)["response_format"] = ojson{{"type", "json_schema"}, {"json_schema", std::move(js)}};
  return std::nullopt;
}

// The Responses object around the generated text (status, output, usage).
ojson ResponseObject(const ResponsesRequestInfo& info, const std::string& status, const ojson& output,
                     const ojson& usage, const std::string& incomplete_reason) {
  ojson r = {{"id", info.id},      {"object", "response"}, {"created_at", info.created_at},
             {"status", status},   {"error", nullptr},     {"incomplete_details", nullptr},
             {"model", info.model}};
  if (!incomplete_reason.empty()) r["incomplete_details"] = ojson{{"reason", incomplete_reason}};
  r["output"] = output;
  r["parallel_tool_calls"] = false;
  r["tool_choice"] = "none";
  r["tools"] = ojson::array();
  for (const auto& [key, value] : info.echo.items()) r[key] = value;
  if (!r.contains("text")) r["text"] = ojson{{"format", {{"type", "text"}}}};
  r["usage"] = usage;
  return r;
}

ojson OutputText(const std::string& text) {
  return ojson{{"type", "output_text"}, {"text", text}, {"annotations", ojson::array()}};
}

ojson MessageItem(const ResponsesRequestInfo& info, const std::string& status, const ojson& content) {
  return ojson{{"type", "message"},
               {"id", info.item_id},
               {"status", status},
               {"role", "assistant"},
               {"content", content}};
}

// Chat usage -> Responses usage.
ojson UsageOf(const ojson& chat_usage) {
  const int64_t in = chat_usage.value("prompt_tokens", int64_t{0});
  const int64_t out = chat_usage.value("completion_tokens", int64_t{0});
  int64_t cached = 0;
  if (auto d = chat_usage.find("prompt_tokens_details"); d != chat_usage.end() && d->is_object()) {
    cached = d->value("cached_tokens", int64_t{0});
  }
  return ojson{{"input_tokens", in},
               {"input_tokens_details", {{"cached_tokens", cached}}},
               {"output_tokens", out},
               {"output_tokens_details", {{"reasoning_tokens", 0}}},
               {"total_tokens", in + out}};
}

// The chat route's error names chat fields; the client sent Responses ones.
std::string TranslateErrorBody(const std::string& body) {
  ojson e = ojson::parse(body, nullptr, /*allow_exceptions=*/false);
  if (e.is_discarded() || !e.contains("error") || !e["error"].is_object()) return body;
  ojson& param = e["error"]["param"];
  if (param.is_string()) {
    const std::string p = param;
    if (p == "max_tokens" || p == "max_completion_tokens") param = "max_output_tokens";
    if (p == "messages") param = "input";
    if (p == "response_format") param = "text.format";
  }
  return e.dump();
}

class ResponsesWriter : public ResponseWriter {
 public:
  ResponsesWriter(std::shared_ptr<ResponseWriter> inner, ResponsesRequestInfo info)
      : inner_(std::move(inner)), info_(std::move(info)) {}

  void SendResponse(int http_status, std::string content_type, std::string body) override {
    if (http_status != 200)
      return inner_->SendResponse(http_status, std::move(content_type), TranslateErrorBody(body));
    ojson chat = ojson::parse(body, nullptr, /*allow_exceptions=*/false);
    std::string text, finish;
    if (!chat.is_discarded() && chat.contains("choices") && chat["choices"].is_array() &&
        !chat["choices"].empty()) {
      const ojson& choice = chat["choices"][0];
      if (choice.contains("message") && choice["message"].contains("content") &&
          choice["message"]["content"].is_string()) {
        text = choice["message"]["content"];
      }
      if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
        finish = choice["finish_reason"];
    }
    const bool cut = finish == "length";
    ojson output = ojson::array(
        {MessageItem(info_, cut ? "incomplete" : "completed", ojson::array({OutputText(text)}))});
    ojson usage = UsageOf(chat.is_discarded() ? ojson::object() : chat.value("usage", ojson::object()));
    inner_->SendResponse(
        200, "application/json",
        ResponseObject(info_, cut ? "incomplete" : "completed", output, usage, cut ? "max_output_tokens" : "")
            .dump());
  }

  void BeginStream() override {
    inner_->BeginStream();
    std::lock_guard<std::mutex> lock(mu_);
    const ojson started = ResponseObject(info_, "in_progress", ojson::array(), nullptr, "");
    EmitLocked("response.created", {{"response", started}});
    EmitLocked("response.in_progress", {{"response", started}});
    EmitLocked("response.output_item.added",
               {{"output_index", 0}, {"item", MessageItem(info_, "in_progress", ojson::array())}});
    EmitLocked(
        "response.content_part.added",
        {{"item_id", info_.item_id}, {"output_index", 0}, {"content_index", 0}, {"part", OutputText("")}});
  }

  void SendStreamData(std::string data) override {
    std::lock_guard<std::mutex> lock(mu_);
    pending_ += data;
    size_t end;
    while ((end = pending_.find("\n\n")) != std::string::npos) {
      std::string event = pending_.substr(0, end);
      pending_.erase(0, end + 2);
      if (event.rfind("data: ", 0) == 0) OnChatDataLocked(event.substr(6));
    }
  }

  void EndStream() override { inner_->EndStream(); }
  void SetDisconnectHandler(std::function<void()> handler) override {
    inner_->SetDisconnectHandler(std::move(handler));
  }

 private:
  void OnChatDataLocked(const std::string& data) {
    if (data == "[DONE]") return FinishLocked();
    ojson chunk = ojson::parse(data, nullptr, /*allow_exceptions=*/false);
    if (chunk.is_discarded()) return;
    if (chunk.contains("error")) {
      failed_ = true;
      const ojson& e = chunk["error"];
      EmitLocked("error", {{"code", e.value("code", ojson(nullptr))},
                           {"message", e.value("message", std::string("engine error"))},
                           {"param", e.value("param", ojson(nullptr))}});
      return;
    }
    if (chunk.contains("usage") && chunk["usage"].is_object()) usage_ = UsageOf(chunk["usage"]);
    if (!chunk.contains("choices") || !chunk["choices"].is_array()) return;
    for (const ojson& choice : chunk["choices"]) {
      if (choice.contains("delta") && choice["delta"].contains("content") &&
          choice["delta"]["content"].is_string()) {
        const std::string delta = choice["delta"]["content"];
        if (!delta.empty()) {
          text_ += delta;
          EmitLocked(
              "response.output_text.delta",
              {{"item_id", info_.item_id}, {"output_index", 0}, {"content_index", 0}, {"delta", delta}});
        }
      }
      if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
        finish_ = choice["finish_reason"];
    }
  }

  void FinishLocked() {
    if (failed_) {
      EmitLocked("response.failed",
                 {{"response", ResponseObject(info_, "failed", ojson::array(),
                                              usage_.is_null() ? UsageOf(ojson::object()) : usage_, "")}});
      return;
    }
    const bool cut = finish_ == "length";
    const std::string item_status = cut ? "incomplete" : "completed";
    const ojson part = OutputText(text_);
    EmitLocked("response.output_text.done",
               {{"item_id", info_.item_id}, {"output_index", 0}, {"content_index", 0}, {"text", text_}});
    EmitLocked("response.content_part.done",
               {{"item_id", info_.item_id}, {"output_index", 0}, {"content_index", 0}, {"part", part}});
    const ojson item = MessageItem(info_, item_status, ojson::array({part}));
    EmitLocked("response.output_item.done", {{"output_index", 0}, {"item", item}});
    const ojson done =
        ResponseObject(info_, cut ? "incomplete" : "completed", ojson::array({item}),
                       usage_.is_null() ? UsageOf(ojson::object()) : usage_, cut ? "max_output_tokens" : "");
    EmitLocked(cut ? "response.incomplete" : "response.completed", {{"response", done}});
  }

  void EmitLocked(const std::string& type, ojson fields) {
    ojson event = {{"type", type}, {"sequence_number", sequence_++}};
    for (auto& [key, value] : fields.items()) event[key] = std::move(value);
    inner_->SendStreamData("event: " + type + "\ndata: " + event.dump() + "\n\n");
  }

  const std::shared_ptr<ResponseWriter> inner_;
  const ResponsesRequestInfo info_;
  std::mutex mu_;  // the chat route writes from the engine's output thread, in order
  std::string pending_;
  std::string text_, finish_;
  ojson usage_;
  int64_t sequence_ = 0;
  bool failed_ = false;
};

}  // namespace

std::optional<ApiError> ResponsesToChatBody(const ojson& body, std::string* chat_body,
                                            ResponsesRequestInfo* info) {
  if (!body.is_object()) return BadRequest("the request body must be a JSON object");
  ojson chat = ojson::object();
  ojson messages = ojson::array();
  for (const auto& [key, value] : body.items()) {
    if (value.is_null()) continue;
    if (key == "model") {
      if (!value.is_string()) return BadRequest("'model' must be a string", "model");
      chat["model"] = value;
      info->model = value;
    } else if (key == "input" || key == "instructions" || key == "text") {
      // below, in a fixed order
    } else if (key == "max_output_tokens") {
      if (!value.is_number_integer() || value.get<int64_t>() < 1) {
        return BadRequest("'max_output_tokens' must be an integer >= 1", "max_output_tokens");
      }
      chat["max_tokens"] = value;
      info->echo[key] = value;
    } else if (key == "temperature" || key == "top_p") {
      chat[key] = value;  // type and range checked by the chat route
      info->echo[key] = value;
    } else if (key == "stream") {
      if (!value.is_boolean()) return BadRequest("'stream' must be a boolean", "stream");
      info->stream = value.get<bool>();
      if (info->stream) {
        chat["stream"] = true;
        chat["stream_options"] = ojson{{"include_usage", true}};
      }
    } else if (key == "user") {
      chat["user"] = value;
    } else if (key == "metadata" || key == "store" || key == "service_tier" || key == "parallel_tool_calls") {
      info->echo[key] = value;  // accepted; nothing is stored and there is one service tier
    } else if (key == "tools") {
      if (!value.is_array() || !value.empty()) return Unsupported("tools", "(tool calling)");
    } else if (key == "tool_choice") {
      if (!(value.is_string() && (value == "none" || value == "auto"))) return Unsupported("tool_choice", "");
    } else if (key == "truncation") {
      if (!(value.is_string() && value == "disabled"))
        return Unsupported("truncation", "other than \"disabled\"");
    } else if (key == "include") {
      if (!value.is_array() || !value.empty()) return Unsupported("include", "");
    } else if (key == "previous_response_id" || key == "background" || key == "reasoning" ||
               key == "top_logprobs" || key == "prompt" || key == "conversation") {
      if (key == "background" && value.is_boolean() && !value.get<bool>()) continue;
      return Unsupported(key, "");
    } else {
      return BadRequest("unknown field '" + key + "'", key);
    }
  }
  if (auto it = body.find("instructions"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return BadRequest("'instructions' must be a string", "instructions");
    messages.push_back(ojson{{"role", "system"}, {"content", *it}});
    info->echo["instructions"] = *it;
  }
  auto input = body.find("input");
  if (input == body.end() || input->is_null()) return BadRequest("'input' is required", "input");
  if (input->is_string()) {
    messages.push_back(ojson{{"role", "user"}, {"content", *input}});
  } else if (input->is_array() && !input->empty()) {
    for (size_t i = 0; i < input->size(); ++i) {
      ojson m;
      if (auto e = TranslateMessage((*input)[i], i, &m)) return e;
      messages.push_back(std::move(m));
    }
  } else {
    return BadRequest("'input' must be a string or a non-empty list of messages", "input");
  }
  if (auto text = body.find("text"); text != body.end() && !text->is_null()) {
    if (auto e = TranslateFormat(*text, &chat)) return e;
    info->echo["text"] = *text;
  }
  chat["messages"] = std::move(messages);
  *chat_body = chat.dump();
  return std::nullopt;
}

std::shared_ptr<ResponseWriter> MakeResponsesWriter(std::shared_ptr<ResponseWriter> inner,
                                                    ResponsesRequestInfo info) {
  return std::make_shared<ResponsesWriter>(std::move(inner), std::move(info));
}

void ApiService::HandleResponses(const std::string& body, const std::shared_ptr<ResponseWriter>& writer) {
  // ParseBody's checks, then parsed again keeping the key order.
  nlohmann::json unordered;
  if (std::optional<ApiError> bad = ParseBody(body, &unordered)) {
    return writer->SendResponse(bad->http_status, "application/json", bad->ToJson());
  }
  ojson parsed = ojson::parse(body, nullptr, /*allow_exceptions=*/false);
  ResponsesRequestInfo info;
  info.model = options_.served_model_name;
  char id[64];
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  const uint64_t n = counter.fetch_add(1);
  std::snprintf(id, sizeof id, "%016llx%08llx", static_cast<unsigned long long>(salt),
                static_cast<unsigned long long>(n));
  info.id = std::string("resp_") + id;
  info.item_id = std::string("msg_") + id;
  info.created_at =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  std::string chat_body;
  if (std::optional<ApiError> e = ResponsesToChatBody(parsed, &chat_body, &info)) {
    return writer->SendResponse(e->http_status, "application/json", e->ToJson());
  }
  HandleGeneration(ParsedRequest::Api::kChat, chat_body, MakeResponsesWriter(writer, std::move(info)));
}

}  // namespace deepinfer::server
