// The ResponseWriter adapter of /v1/responses (responses_api.h): the chat
// route's answer -> a Responses object, its SSE chunks -> the Responses
// event stream. Output items, in the order the model produced them: a
// message (the text) and one function_call item per parsed tool call.
#include <mutex>
#include <utility>

#include "server/responses_api.h"

namespace deepinfer::server {
namespace {

using ojson = nlohmann::ordered_json;

// The chat route names chat fields; the client sent Responses ones.
std::string ResponsesParam(const std::string& chat_param) {
  if (chat_param == "max_tokens" || chat_param == "max_completion_tokens") return "max_output_tokens";
  if (chat_param == "messages") return "input";
  if (chat_param == "response_format") return "text.format";
  return chat_param;
}

std::string TranslateErrorBody(const std::string& body) {
  ojson e = ojson::parse(body, nullptr, /*allow_exceptions=*/false);
  if (e.is_discarded() || !e.contains("error") || !e["error"].is_object()) return body;
  ojson& param = e["error"]["param"];
  if (param.is_string()) param = ResponsesParam(param.get<std::string>());
  return e.dump();
}

// The chat response's / first chunk's "warnings" with Responses field names.
ojson WarningsOf(const ojson& chat) {
  ojson warnings = ojson::array();
  auto it = chat.find("warnings");
  if (it == chat.end() || !it->is_array()) return warnings;
  for (ojson w : *it) {
    if (w.is_object() && w.contains("param") && w["param"].is_string())
      w["param"] = ResponsesParam(w["param"].get<std::string>());
    warnings.push_back(std::move(w));
  }
  return warnings;
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

ojson OutputText(const std::string& text) {
  return ojson{{"type", "output_text"}, {"text", text}, {"annotations", ojson::array()}};
}

ojson MessageItem(const std::string& id, const std::string& status, const ojson& content) {
  return ojson{
      {"type", "message"}, {"id", id}, {"status", status}, {"role", "assistant"}, {"content", content}};
}

// A chat tool call ({"id", "function": {"name", "arguments"}}) -> a
// function_call item; call_id is the chat call's id (what the client's
// function_call_output answers).
ojson FunctionCallItem(const std::string& id, const ojson& call, const std::string& status) {
  const ojson fn = call.value("function", ojson::object());
  return ojson{{"type", "function_call"},
               {"id", id},
               {"call_id", call.value("id", std::string())},
               {"name", fn.value("name", std::string())},
               {"arguments", status == "in_progress" ? std::string() : fn.value("arguments", std::string())},
               {"status", status}};
}

// The Responses object (status, output, usage, what the request set).
ojson ResponseObject(const ResponsesRequestInfo& info, const std::string& status, const ojson& output,
                     const ojson& usage, const std::string& incomplete_reason, const ojson& warnings) {
  ojson r = {{"id", info.id},      {"object", "response"}, {"created_at", info.created_at},
             {"status", status},   {"error", nullptr},     {"incomplete_details", nullptr},
             {"model", info.model}};
  if (!incomplete_reason.empty()) r["incomplete_details"] = ojson{{"reason", incomplete_reason}};
  r["output"] = output;
  // OpenAI's defaults, unless the request set them (info.echo).
  r["parallel_tool_calls"] = true;
  r["tool_choice"] = "auto";
  r["tools"] = ojson::array();
  for (const auto& [key, value] : info.echo.items()) r[key] = value;
  if (!r.contains("text")) r["text"] = ojson{{"format", {{"type", "text"}}}};
  r["usage"] = usage;
  if (!warnings.empty()) r["warnings"] = warnings;
  return r;
}

class ResponsesWriter : public ResponseWriter {
 public:
  ResponsesWriter(std::shared_ptr<ResponseWriter> inner, ResponsesRequestInfo info)
      : inner_(std::move(inner)), info_(std::move(info)) {}

  void SendResponse(int http_status, std::string content_type, std::string body) override {
    if (http_status != 200)
      return inner_->SendResponse(http_status, std::move(content_type), TranslateErrorBody(body));
    ojson chat = ojson::parse(body, nullptr, /*allow_exceptions=*/false);
    if (chat.is_discarded()) chat = ojson::object();
    std::string text, finish;
    ojson calls = ojson::array();
    if (chat.contains("choices") && chat["choices"].is_array() && !chat["choices"].empty()) {
      const ojson& choice = chat["choices"][0];
      const ojson message = choice.value("message", ojson::object());
      if (message.contains("content") && message["content"].is_string()) text = message["content"];
      if (message.contains("tool_calls") && message["tool_calls"].is_array()) calls = message["tool_calls"];
      if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
        finish = choice["finish_reason"];
    }
    const bool cut = finish == "length";
    ojson output = ojson::array();
    if (!text.empty() || calls.empty()) {
      output.push_back(
          MessageItem(info_.item_id, cut ? "incomplete" : "completed", ojson::array({OutputText(text)})));
    }
    for (const ojson& call : calls) output.push_back(FunctionCallItem(NextCallId(), call, "completed"));
    ojson usage = UsageOf(chat.value("usage", ojson::object()));
    inner_->SendResponse(200, "application/json",
                         ResponseObject(info_, cut ? "incomplete" : "completed", output, usage,
                                        cut ? "max_output_tokens" : "", WarningsOf(chat))
                             .dump());
  }

  // The first events wait for the chat route's first chunk, which carries
  // the response's warnings (GenerationJob sends them there).
  void BeginStream() override { inner_->BeginStream(); }

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
  std::string NextCallId() {
    const std::string& id = info_.id;
    const size_t underscore = id.find('_');
    return "fc_" + (underscore == std::string::npos ? id : id.substr(underscore + 1)) + "_" +
           std::to_string(num_calls_++);
  }

  ojson UsageLocked() const { return usage_.is_null() ? UsageOf(ojson::object()) : usage_; }

  void StartLocked(const ojson& first_chunk) {
    if (started_) return;
    started_ = true;
    warnings_ = WarningsOf(first_chunk);
    const ojson started = ResponseObject(info_, "in_progress", ojson::array(), nullptr, "", warnings_);
    EmitLocked("response.created", {{"response", started}});
    EmitLocked("response.in_progress", {{"response", started}});
  }

  void OnChatDataLocked(const std::string& data) {
    if (data == "[DONE]") return FinishLocked();
    ojson chunk = ojson::parse(data, nullptr, /*allow_exceptions=*/false);
    if (chunk.is_discarded()) return;
    StartLocked(chunk);
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
      const ojson delta = choice.value("delta", ojson::object());
      if (delta.contains("content") && delta["content"].is_string()) {
        const std::string text = delta["content"];
        if (!text.empty()) {
          OpenMessageLocked();
          text_ += text;
          EmitLocked("response.output_text.delta", {{"item_id", message_id_},
                                                    {"output_index", message_index_},
                                                    {"content_index", 0},
                                                    {"delta", text}});
        }
      }
      if (delta.contains("tool_calls") && delta["tool_calls"].is_array()) {
        for (const ojson& call : delta["tool_calls"]) EmitCallLocked(call);
      }
      if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
        finish_ = choice["finish_reason"];
    }
  }

  void OpenMessageLocked() {
    if (message_open_) return;
    CloseCallLocked();
    message_open_ = true;
    message_index_ = static_cast<int64_t>(items_.size());
    // One message in the usual case; text after a call opens another.
    message_id_ = message_index_ == 0 ? info_.item_id : info_.item_id + "_" + std::to_string(message_index_);
    text_.clear();
    EmitLocked("response.output_item.added",
               {{"output_index", message_index_},
                {"item", MessageItem(message_id_, "in_progress", ojson::array())}});
    EmitLocked("response.content_part.added", {{"item_id", message_id_},
                                               {"output_index", message_index_},
                                               {"content_index", 0},
                                               {"part", OutputText("")}});
  }

  void CloseMessageLocked(const std::string& status) {
    if (!message_open_) return;
    message_open_ = false;
    const ojson part = OutputText(text_);
    EmitLocked(
        "response.output_text.done",
        {{"item_id", message_id_}, {"output_index", message_index_}, {"content_index", 0}, {"text", text_}});
    EmitLocked(
        "response.content_part.done",
        {{"item_id", message_id_}, {"output_index", message_index_}, {"content_index", 0}, {"part", part}});
    const ojson item = MessageItem(message_id_, status, ojson::array({part}));
    EmitLocked("response.output_item.done", {{"output_index", message_index_}, {"item", item}});
    items_.push_back(item);
  }

  // The chat route streams a tool call as OpenAI does: a first delta with
  // its index, id and function name, then function.arguments fragments. Calls
  // come one after another, so a new index (or text, or the end) completes
  // the open one: added, then an arguments delta per fragment, then done.
  void EmitCallLocked(const ojson& call) {
    const int64_t chat_index = call.value("index", int64_t{0});
    const ojson fn = call.value("function", ojson::object());
    if (!call_open_ || chat_index != call_chat_index_) {
      CloseCallLocked();
      CloseMessageLocked("completed");
      call_open_ = true;
      call_chat_index_ = chat_index;
      call_index_ = static_cast<int64_t>(items_.size());
      call_item_id_ = NextCallId();
      call_ = ojson{{"id", call.value("id", std::string())},
                    {"function", {{"name", fn.value("name", std::string())}, {"arguments", std::string()}}}};
      EmitLocked(
          "response.output_item.added",
          {{"output_index", call_index_}, {"item", FunctionCallItem(call_item_id_, call_, "in_progress")}});
    }
    const std::string fragment =
        fn.contains("arguments") && fn["arguments"].is_string() ? fn["arguments"] : "";
    if (fragment.empty()) return;
    call_["function"]["arguments"] = call_["function"]["arguments"].get<std::string>() + fragment;
    EmitLocked("response.function_call_arguments.delta",
               {{"item_id", call_item_id_}, {"output_index", call_index_}, {"delta", fragment}});
  }

  void CloseCallLocked() {
    if (!call_open_) return;
    call_open_ = false;
    const ojson done = FunctionCallItem(call_item_id_, call_, "completed");
    EmitLocked("response.function_call_arguments.done", {{"item_id", call_item_id_},
                                                         {"output_index", call_index_},
                                                         {"name", done["name"]},
                                                         {"arguments", done["arguments"]}});
    EmitLocked("response.output_item.done", {{"output_index", call_index_}, {"item", done}});
    items_.push_back(done);
  }

  void FinishLocked() {
    StartLocked(ojson::object());
    CloseCallLocked();
    if (failed_) {
      EmitLocked("response.failed",
                 {{"response", ResponseObject(info_, "failed", items_, UsageLocked(), "", warnings_)}});
      return;
    }
    const bool cut = finish_ == "length";
    if (items_.empty()) OpenMessageLocked();  // an empty answer is still a message
    CloseMessageLocked(cut ? "incomplete" : "completed");
    const ojson done = ResponseObject(info_, cut ? "incomplete" : "completed", items_, UsageLocked(),
                                      cut ? "max_output_tokens" : "", warnings_);
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
  bool started_ = false;  // response.created went out
  ojson warnings_ = ojson::array();
  ojson items_ = ojson::array();  // output items done so far
  bool message_open_ = false;
  int64_t message_index_ = 0;
  std::string message_id_;
  std::string text_, finish_;
  ojson usage_;
  int64_t sequence_ = 0;
  int64_t num_calls_ = 0;
  // The tool call being streamed (EmitCallLocked).
  bool call_open_ = false;
  int64_t call_chat_index_ = 0, call_index_ = 0;
  std::string call_item_id_;
  ojson call_;
  bool failed_ = false;
};

}  // namespace

std::shared_ptr<ResponseWriter> MakeResponsesWriter(std::shared_ptr<ResponseWriter> inner,
                                                    ResponsesRequestInfo info) {
  return std::make_shared<ResponsesWriter>(std::move(inner), std::move(info));
}

}  // namespace deepinfer::server
