#include "server/responses_api.h"

#include <atomic>
#include <chrono>
#include <cstdio>
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

// Output text of a function_call_output: a string, or text parts joined
// as message parts are.
std::optional<ApiError> FunctionOutputText(const ojson& output, const std::string& where, std::string* out) {
  if (output.is_string()) {
    *out = output.get<std::string>();
    return std::nullopt;
  }
  if (!output.is_array())
    return BadRequest(where + ".output must be a string or a list of text parts", "input");
  for (const ojson& part : output) {
    auto type = part.is_object() ? part.find("type") : part.end();
    auto text = part.is_object() ? part.find("text") : part.end();
    if (type == part.end() || !(*type == "input_text" || *type == "output_text") || text == part.end() ||
        !text->is_string()) {
      return Unsupported("input", "a function_call_output part other than text");
    }
    if (!out->empty()) *out += "\n";
    *out += text->get<std::string>();
  }
  return std::nullopt;
}

std::optional<ApiError> RequiredString(const ojson& item, const char* key, const std::string& where,
                                       std::string* out) {
  auto it = item.find(key);
  if (it == item.end() || !it->is_string()) {
    return BadRequest(where + "." + key + " must be a string", "input");
  }
  *out = it->get<std::string>();
  return std::nullopt;
}

// A function_call input item (a call the model made earlier) -> a tool call
// of an assistant message: appended to the previous message when that is the
// assistant's (its text, or the calls of one parallel turn), as chat clients
// send one assistant message with content and tool_calls.
std::optional<ApiError> TranslateFunctionCall(const ojson& item, const std::string& where, ojson* messages) {
  std::string call_id, name, arguments;
  if (auto e = RequiredString(item, "call_id", where, &call_id)) return e;
  if (auto e = RequiredString(item, "name", where, &name)) return e;
  if (auto e = RequiredString(item, "arguments", where, &arguments)) return e;
  ojson call = {
      {"id", call_id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", arguments}}}};
  if (!messages->empty() && messages->back()["role"] == "assistant") {
    ojson& last = messages->back();
    if (!last.contains("tool_calls")) last["tool_calls"] = ojson::array();
    last["tool_calls"].push_back(std::move(call));
  } else {
    messages->push_back(
        ojson{{"role", "assistant"}, {"content", nullptr}, {"tool_calls", ojson::array({std::move(call)})}});
  }
  return std::nullopt;
}

// A function_call_output item -> a tool message answering call_id (with the
// function's name when an earlier function_call item gives it: some
// templates print it).
std::optional<ApiError> TranslateFunctionOutput(const ojson& item, const std::string& where,
                                                ojson* messages) {
  std::string call_id, output;
  if (auto e = RequiredString(item, "call_id", where, &call_id)) return e;
  auto it = item.find("output");
  if (it == item.end()) return BadRequest(where + ".output is missing", "input");
  if (auto e = FunctionOutputText(*it, where, &output)) return e;
  ojson message = {{"role", "tool"}, {"tool_call_id", call_id}, {"content", output}};
  for (const ojson& m : *messages) {
    if (!m.contains("tool_calls")) continue;
    for (const ojson& call : m["tool_calls"]) {
      if (call["id"] == call_id) message["name"] = call["function"]["name"];
    }
  }
  messages->push_back(std::move(message));
  return std::nullopt;
}

// One input item -> chat messages (appended).
std::optional<ApiError> TranslateInputItem(const ojson& item, size_t index, ojson* messages) {
  const std::string where = "input[" + std::to_string(index) + "]";
  if (!item.is_object()) return BadRequest(where + " must be an object", "input");
  std::string type = "message";  // EasyInputMessage: {role, content} without a type
  if (auto t = item.find("type"); t != item.end()) {
    if (!t->is_string()) return BadRequest(where + ".type must be a string", "input");
    type = t->get<std::string>();
  }
  if (type == "function_call") return TranslateFunctionCall(item, where, messages);
  if (type == "function_call_output") return TranslateFunctionOutput(item, where, messages);
  if (type != "message") return Unsupported("input", "an item of type \"" + type + "\"");
  ojson m;
  if (auto e = TranslateMessage(item, index, &m)) return e;
  messages->push_back(std::move(m));
  return std::nullopt;
}

// tools: [{type: "function", name, description, parameters, strict}] (the
// Responses shape, flat) -> the chat shape ({type, function: {...}}), which
// the chat route checks (names, duplicates, parameters).
std::optional<ApiError> TranslateTools(const ojson& tools, ojson* chat_tools) {
  if (!tools.is_array()) return BadRequest("'tools' must be a list of function tools", "tools");
  *chat_tools = ojson::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const ojson& tool = tools[i];
    const std::string where = "tools[" + std::to_string(i) + "]";
    if (!tool.is_object()) return BadRequest(where + " must be an object", "tools");
    auto type = tool.find("type");
    if (type == tool.end() || !type->is_string())
      return BadRequest(where + ".type must be a string", "tools");
    if (*type != "function") return Unsupported("tools", "a tool of type " + type->dump());
    ojson fn = ojson::object();
    for (const auto& [key, value] : tool.items()) {
      if (key == "type") continue;
      if (key != "name" && key != "description" && key != "parameters" && key != "strict") {
        return BadRequest("unknown field '" + where + "." + key + "'", "tools");
      }
      if (key == "strict" && !value.is_boolean() && !value.is_null()) {
        return BadRequest(where + ".strict must be a boolean", "tools");
      }
      if (!value.is_null()) fn[key] = value;
    }
    chat_tools->push_back(ojson{{"type", "function"}, {"function", std::move(fn)}});
  }
  return std::nullopt;
}

// tool_choice: "none" | "auto" | "required" | {type: "function", name}.
std::optional<ApiError> TranslateToolChoice(const ojson& choice, ojson* chat_choice) {
  if (choice.is_string()) {
    if (choice != "none" && choice != "auto" && choice != "required") {
      return BadRequest(
          "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
          "\"name\": NAME}",
          "tool_choice");
    }
    *chat_choice = choice;
    return std::nullopt;
  }
  auto type = choice.is_object() ? choice.find("type") : choice.end();
  if (type == choice.end() || !type->is_string()) {
    return BadRequest("'tool_choice' must be a string or an object with a 'type'", "tool_choice");
  }
  if (*type != "function") return Unsupported("tool_choice", "of type " + type->dump());
  auto name = choice.find("name");
  if (name == choice.end() || !name->is_string()) {
    return BadRequest("'tool_choice' {\"type\": \"function\"} needs a string 'name'", "tool_choice");
  }
  *chat_choice = ojson{{"type", "function"}, {"function", {{"name", *name}}}};
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
    } else if (key == "metadata" || key == "store" || key == "service_tier") {
      info->echo[key] = value;  // accepted; nothing is stored and there is one service tier
    } else if (key == "tools") {
      ojson tools;
      if (auto e = TranslateTools(value, &tools)) return e;
      if (!tools.empty()) chat["tools"] = std::move(tools);
      info->echo[key] = value;
    } else if (key == "tool_choice") {
      ojson choice;
      if (auto e = TranslateToolChoice(value, &choice)) return e;
      chat["tool_choice"] = std::move(choice);
      info->echo[key] = value;
    } else if (key == "parallel_tool_calls") {
      if (!value.is_boolean()) return BadRequest("'parallel_tool_calls' must be a boolean", key);
      chat[key] = value;
      info->echo[key] = value;
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
      if (auto e = TranslateInputItem((*input)[i], i, &messages)) return e;
    }
  } else {
    return BadRequest("'input' must be a string or a non-empty list of items", "input");
  }
  if (auto text = body.find("text"); text != body.end() && !text->is_null()) {
    if (auto e = TranslateFormat(*text, &chat)) return e;
    info->echo["text"] = *text;
  }
  // "auto" / "none" without tools mean no tool calls, which the chat route
  // spells by leaving tool_choice out (it refuses any choice without tools).
  if (!chat.contains("tools") && chat.contains("tool_choice") && chat["tool_choice"].is_string() &&
      chat["tool_choice"] != "required") {
    chat.erase("tool_choice");
  }
  chat["messages"] = std::move(messages);
  *chat_body = chat.dump();
  return std::nullopt;
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
