// /v1/responses without an engine: the request -> chat body translation and
// the writer that turns the chat route's answer back into Responses objects
// and events (the end-to-end run with the openai client is
// tests/server/endpoints_test.py).
#include "server/responses_api.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/capturing_writer_test_util.h"

namespace deepinfer::server {
namespace {

using ojson = nlohmann::ordered_json;

ojson Translate(const std::string& body, ResponsesRequestInfo* info = nullptr) {
  ResponsesRequestInfo local;
  std::string chat;
  std::optional<ApiError> e = ResponsesToChatBody(ojson::parse(body), &chat, info ? info : &local);
  EXPECT_FALSE(e.has_value()) << (e ? e->message : "");
  return e ? ojson() : ojson::parse(chat);
}

ApiError Refused(const std::string& body) {
  ResponsesRequestInfo info;
  std::string chat;
  std::optional<ApiError> e = ResponsesToChatBody(ojson::parse(body), &chat, &info);
  EXPECT_TRUE(e.has_value()) << body;
  return e.value_or(ApiError{});
}

TEST(ResponsesToChat, InputStringInstructionsAndLimits) {
  ResponsesRequestInfo info;
  ojson chat = Translate(
      R"({"model": "m", "input": "Hi", "instructions": "Be brief.", "max_output_tokens": 7,
          "temperature": 0.5, "top_p": 0.9, "user": "u", "store": false})",
      &info);
  EXPECT_EQ(chat["messages"], ojson::parse(R"([{"role": "system", "content": "Be brief."},
                                                {"role": "user", "content": "Hi"}])"));
  EXPECT_EQ(chat["max_tokens"], 7);
  EXPECT_EQ(chat["temperature"], 0.5);
  EXPECT_EQ(chat["top_p"], 0.9);
  EXPECT_EQ(chat["model"], "m");
  EXPECT_FALSE(chat.contains("stream"));
  EXPECT_EQ(info.model, "m");
  EXPECT_FALSE(info.stream);
  // What the response echoes, as sent.
  EXPECT_EQ(info.echo["instructions"], "Be brief.");
  EXPECT_EQ(info.echo["max_output_tokens"], 7);
  EXPECT_EQ(info.echo["store"], false);
}

TEST(ResponsesToChat, MessagesWithPartsAndDeveloperRole) {
  ojson chat = Translate(R"({"input": [
      {"role": "developer", "content": "Rules."},
      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "a"},
                                                      {"type": "input_text", "text": "b"}]},
      {"role": "assistant", "content": [{"type": "output_text", "text": "c"}]}]})");
  EXPECT_EQ(chat["messages"], ojson::parse(R"([
      {"role": "system", "content": "Rules."},
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"role": "assistant", "content": [{"type": "text", "text": "c"}]}])"));
}

TEST(ResponsesToChat, StreamAsksForUsage) {
  ResponsesRequestInfo info;
  ojson chat = Translate(R"({"input": "x", "stream": true})", &info);
  EXPECT_TRUE(info.stream);
  EXPECT_EQ(chat["stream"], true);
  EXPECT_EQ(chat["stream_options"], ojson::parse(R"({"include_usage": true})"));
}

TEST(ResponsesToChat, JsonSchemaFormatKeepsPropertyOrder) {
  ojson chat =
      Translate(R"({"input": "x", "text": {"format": {"type": "json_schema", "name": "o", "strict": true,
      "schema": {"type": "object", "properties": {"zeta": {"type": "integer"}, "alpha": {"type": "string"},
                 "mid": {"type": "boolean"}}}}}})");
  const ojson& rf = chat["response_format"];
  EXPECT_EQ(rf["type"], "json_schema");
  EXPECT_EQ(rf["json_schema"]["name"], "o");
  EXPECT_EQ(rf["json_schema"]["strict"], true);
  std::vector<std::string> keys;
  for (const auto& [key, value] : rf["json_schema"]["schema"]["properties"].items()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"zeta", "alpha", "mid"}));
  EXPECT_EQ(Translate(R"({"input": "x", "text": {"format": {"type": "json_object"}}})")["response_format"],
            ojson::parse(R"({"type": "json_object"})"));
  EXPECT_FALSE(
      Translate(R"({"input": "x", "text": {"format": {"type": "text"}}})").contains("response_format"));
}

TEST(ResponsesToChat, RefusalsNameTheField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({})", "input"},
      {R"({"input": []})", "input"},
      {R"({"input": 3})", "input"},
      {R"({"input": [{"role": "tool", "content": "x"}]})", "input"},
      {R"({"input": [{"type": "function_call_output", "output": "x"}]})", "input"},
      {R"({"input": [{"type": "function_call", "call_id": "c", "name": "f"}]})", "input"},
      {R"({"input": [{"type": "reasoning", "summary": []}]})", "input"},
      {R"({"input": [{"type": "function_call_output", "call_id": "c", "output": [{"type": "input_image"}]}]})",
       "input"},
      {R"({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "u"}]}]})", "input"},
      {R"({"input": "x", "max_output_tokens": 0})", "max_output_tokens"},
      {R"({"input": "x", "stream": "yes"})", "stream"},
      {R"({"input": "x", "tools": [{"type": "web_search"}]})", "tools"},
      {R"({"input": "x", "tools": [{"type": "function", "name": "f", "colour": 1}]})", "tools"},
      {R"({"input": "x", "tools": [{"type": "function", "name": "f", "strict": "yes"}]})", "tools"},
      {R"({"input": "x", "tools": {"type": "function"}})", "tools"},
      {R"({"input": "x", "tool_choice": "bogus"})", "tool_choice"},
      {R"({"input": "x", "tool_choice": {"type": "function"}})", "tool_choice"},
      {R"({"input": "x", "tool_choice": {"type": "allowed_tools", "tools": []}})", "tool_choice"},
      {R"({"input": "x", "parallel_tool_calls": 1})", "parallel_tool_calls"},
      {R"({"input": "x", "previous_response_id": "resp_1"})", "previous_response_id"},
      {R"({"input": "x", "background": true})", "background"},
      {R"({"input": "x", "text": {"format": {"type": "xml"}}})", "text.format"},
      {R"({"input": "x", "text": {"format": {"type": "json_schema"}}})", "text.format"},
      {R"({"input": "x", "text": {"colour": 1}})", "text"},
      {R"({"input": "x", "bogus": 1})", "bogus"},
  };
  for (const auto& [body, param] : cases) {
    ApiError e = Refused(body);
    EXPECT_EQ(e.http_status, 400) << body;
    EXPECT_EQ(e.param, param) << body;
  }
  // Explicit nulls and the accepted no-op values are not refusals.
  Translate(
      R"({"input": "x", "tools": [], "tool_choice": "auto", "background": false, "truncation": "disabled",
                "previous_response_id": null, "include": []})");
}

// Function tools: the flat Responses shape becomes the chat shape; the
// choice and parallel_tool_calls pass through; all three are echoed as sent.
TEST(ResponsesToChat, FunctionToolsBecomeChatTools) {
  ResponsesRequestInfo info;
  ojson chat = Translate(R"({"input": "x", "parallel_tool_calls": false,
      "tools": [{"type": "function", "name": "get_weather", "description": "Forecast", "strict": true,
                 "parameters": {"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {}}}},
                {"type": "function", "name": "noop", "parameters": null}],
      "tool_choice": {"type": "function", "name": "get_weather"}})",
                         &info);
  EXPECT_EQ(
      chat["tools"].dump(),
      ojson::parse(R"([{"type": "function", "function": {"name": "get_weather", "description": "Forecast",
        "strict": true, "parameters": {"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {}}}}},
        {"type": "function", "function": {"name": "noop"}}])")
          .dump());  // dump(): key order too (the schema's property order)
  EXPECT_EQ(chat["tool_choice"],
            ojson::parse(R"({"type": "function", "function": {"name": "get_weather"}})"));
  EXPECT_EQ(chat["parallel_tool_calls"], false);
  EXPECT_EQ(info.echo["tool_choice"], ojson::parse(R"({"type": "function", "name": "get_weather"})"));
  EXPECT_EQ(info.echo["tools"][0]["name"], "get_weather");
  EXPECT_EQ(info.echo["parallel_tool_calls"], false);
  EXPECT_EQ(
      Translate(R"({"input": "x", "tools": [{"type": "function", "name": "f"}], "tool_choice": "required"})")
          ["tool_choice"],
      "required");
  // No tools: "auto" / "none" are left out (the chat route refuses a choice without tools).
  EXPECT_FALSE(Translate(R"({"input": "x", "tools": [], "tool_choice": "none"})").contains("tool_choice"));
  EXPECT_FALSE(Translate(R"({"input": "x", "tools": [], "tool_choice": "none"})").contains("tools"));
}

// function_call items join the assistant message before them (content and
// the calls of one turn together), function_call_output items become tool
// messages with the call's name; text parts of an output are joined.
TEST(ResponsesToChat, FunctionCallItemsBecomeToolCallsAndToolMessages) {
  ojson chat = Translate(R"({"input": [
      {"role": "user", "content": "Weather?"},
      {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
      {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "get_weather",
       "arguments": "{\"city\":\"Paris\"}", "status": "completed"},
      {"type": "function_call", "call_id": "call_b", "name": "get_time", "arguments": "{}"},
      {"type": "function_call_output", "call_id": "call_a", "output": "{\"temp\":21}"},
      {"type": "function_call_output", "call_id": "call_b",
       "output": [{"type": "input_text", "text": "12:00"}, {"type": "input_text", "text": "UTC"}]},
      {"type": "function_call", "call_id": "call_c", "name": "get_time", "arguments": "{\"tz\":\"CET\"}"}]})");
  EXPECT_EQ(chat["messages"], ojson::parse(R"([
      {"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": [{"type": "text", "text": "Checking."}], "tool_calls": [
          {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
          {"id": "call_b", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "call_a", "content": "{\"temp\":21}", "name": "get_weather"},
      {"role": "tool", "tool_call_id": "call_b", "content": "12:00\nUTC", "name": "get_time"},
      {"role": "assistant", "content": null, "tool_calls": [
          {"id": "call_c", "type": "function", "function": {"name": "get_time", "arguments": "{\"tz\":\"CET\"}"}}]}])"));
}

ResponsesRequestInfo Info() {
  ResponsesRequestInfo info;
  info.id = "resp_1";
  info.item_id = "msg_1";
  info.created_at = 123;
  info.model = "m";
  return info;
}

TEST(ResponsesWriter, FullAnswer) {
  auto inner = std::make_shared<testing::CapturingWriter>();
  auto writer = MakeResponsesWriter(inner, Info());
  writer->SendResponse(200, "application/json", R"({"choices": [{"index": 0, "finish_reason": "stop",
      "message": {"role": "assistant", "content": "Hello"}}],
      "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7,
                "prompt_tokens_details": {"cached_tokens": 3}}})");
  ASSERT_EQ(inner->status(), 200);
  ojson r = ojson::parse(inner->body());
  EXPECT_EQ(r["id"], "resp_1");
  EXPECT_EQ(r["object"], "response");
  EXPECT_EQ(r["status"], "completed");
  EXPECT_EQ(r["created_at"], 123);
  EXPECT_EQ(r["output"], ojson::parse(R"([{"type": "message", "id": "msg_1", "status": "completed",
      "role": "assistant", "content": [{"type": "output_text", "text": "Hello", "annotations": []}]}])"));
  EXPECT_EQ(r["usage"], ojson::parse(R"({"input_tokens": 5, "input_tokens_details": {"cached_tokens": 3},
      "output_tokens": 2, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 7})"));
}

TEST(ResponsesWriter, LengthCutIsIncomplete) {
  auto inner = std::make_shared<testing::CapturingWriter>();
  MakeResponsesWriter(inner, Info())
      ->SendResponse(
          200, "application/json",
          R"({"choices": [{"finish_reason": "length", "message": {"content": "Hel"}}], "usage": {}})");
  ojson r = ojson::parse(inner->body());
  EXPECT_EQ(r["status"], "incomplete");
  EXPECT_EQ(r["incomplete_details"], ojson::parse(R"({"reason": "max_output_tokens"})"));
  EXPECT_EQ(r["output"][0]["status"], "incomplete");
}

TEST(ResponsesWriter, ErrorsNameResponsesFields) {
  auto inner = std::make_shared<testing::CapturingWriter>();
  MakeResponsesWriter(inner, Info())
      ->SendResponse(400, "application/json",
                     R"({"error": {"message": "m", "type": "invalid_request_error", "param": "max_tokens",
                                   "code": null}})");
  EXPECT_EQ(inner->status(), 400);
  EXPECT_EQ(ojson::parse(inner->body())["error"]["param"], "max_output_tokens");
}

// The SSE events, as (type, payload), in order.
std::vector<std::pair<std::string, ojson>> ParseEvents(const std::string& body) {
  std::vector<std::pair<std::string, ojson>> out;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) break;
    const std::string event = body.substr(pos, end - pos);
    pos = end + 2;
    const size_t nl = event.find('\n');
    EXPECT_EQ(event.rfind("event: ", 0), 0u) << event;
    EXPECT_EQ(event.compare(nl + 1, 6, "data: "), 0) << event;
    out.emplace_back(event.substr(7, nl - 7), ojson::parse(event.substr(nl + 7)));
  }
  return out;
}

TEST(ResponsesWriter, StreamEventsFromChatChunksSplitAnywhere) {
  auto inner = std::make_shared<testing::CapturingWriter>();
  auto writer = MakeResponsesWriter(inner, Info());
  writer->BeginStream();
  // The chat route's stream, cut mid-chunk: the writer reassembles events.
  const std::string chat =
      "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2,\"total_tokens\":6}}\n\n"
      "data: [DONE]\n\n";
  for (size_t i = 0; i < chat.size(); i += 7) writer->SendStreamData(chat.substr(i, 7));
  writer->EndStream();
  EXPECT_EQ(inner->ends(), 1);
  auto events = ParseEvents(inner->body());
  std::vector<std::string> types;
  for (size_t i = 0; i < events.size(); ++i) {
    types.push_back(events[i].first);
    EXPECT_EQ(events[i].second["type"], events[i].first);
    EXPECT_EQ(events[i].second["sequence_number"], static_cast<int64_t>(i));
  }
  EXPECT_EQ(types, (std::vector<std::string>{"response.created", "response.in_progress",
                                             "response.output_item.added", "response.content_part.added",
                                             "response.output_text.delta", "response.output_text.delta",
                                             "response.output_text.done", "response.content_part.done",
                                             "response.output_item.done", "response.completed"}));
  EXPECT_EQ(events[4].second["delta"], "Hel");
  EXPECT_EQ(events[5].second["delta"], "lo");
  EXPECT_EQ(events[6].second["text"], "Hello");
  const ojson& done = events.back().second["response"];
  EXPECT_EQ(done["status"], "completed");
  EXPECT_EQ(done["output"][0]["content"][0]["text"], "Hello");
  EXPECT_EQ(done["usage"]["input_tokens"], 4);
  EXPECT_EQ(done["usage"]["output_tokens"], 2);
}

TEST(ResponsesWriter, EngineErrorInStreamFails) {
  auto inner = std::make_shared<testing::CapturingWriter>();
  auto writer = MakeResponsesWriter(inner, Info());
  writer->BeginStream();
  writer->SendStreamData("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n");
  writer->SendStreamData(
      "data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\",\"code\":null}}\n\n");
  writer->SendStreamData("data: [DONE]\n\n");
  writer->EndStream();
  auto events = ParseEvents(inner->body());
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[events.size() - 2].first, "error");
  EXPECT_EQ(events[events.size() - 2].second["message"], "boom");
  EXPECT_EQ(events.back().first, "response.failed");
  EXPECT_EQ(events.back().second["response"]["status"], "failed");
}

// A chat answer with text and tool calls: a message item, then one
// function_call item per call (call_id = the chat call's id).
TEST(ResponsesWriter, FullAnswerWithFunctionCalls) {
  auto inner = std::make_shared<testing::CapturingWriter>();
  ResponsesRequestInfo info = Info();
  info.echo["tools"] = ojson::parse(R"([{"type": "function", "name": "f"}])");
  MakeResponsesWriter(inner, info)
      ->SendResponse(200, "application/json", R"({"choices": [{"index": 0, "finish_reason": "tool_calls",
      "message": {"role": "assistant", "content": "Sure.", "tool_calls": [
        {"id": "call_x_0_0", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}},
        {"id": "call_x_0_1", "type": "function", "function": {"name": "g", "arguments": "{}"}}]}}],
      "usage": {"prompt_tokens": 5, "completion_tokens": 9}})");
  ASSERT_EQ(inner->status(), 200);
  ojson r = ojson::parse(inner->body());
  EXPECT_EQ(r["status"], "completed");
  ASSERT_EQ(r["output"].size(), 3u) << r.dump();
  EXPECT_EQ(r["output"][0]["type"], "message");
  EXPECT_EQ(r["output"][0]["content"][0]["text"], "Sure.");
  EXPECT_EQ(r["output"][1], ojson::parse(R"({"type": "function_call", "id": "fc_1_0", "call_id": "call_x_0_0",
      "name": "f", "arguments": "{\"a\":1}", "status": "completed"})"));
  EXPECT_EQ(r["output"][2]["call_id"], "call_x_0_1");
  EXPECT_EQ(r["output"][2]["id"], "fc_1_1");
  EXPECT_EQ(r["tools"], info.echo["tools"]);
  EXPECT_EQ(r["tool_choice"], "auto");  // OpenAI's defaults when the request leaves them out
  EXPECT_EQ(r["parallel_tool_calls"], true);
  // Only calls (content null): no message item.
  auto calls_only = std::make_shared<testing::CapturingWriter>();
  MakeResponsesWriter(calls_only, Info())
      ->SendResponse(200, "application/json", R"({"choices": [{"finish_reason": "tool_calls",
      "message": {"content": null, "tool_calls": [
        {"id": "call_y", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}}]})");
  ojson only = ojson::parse(calls_only->body());
  ASSERT_EQ(only["output"].size(), 1u);
  EXPECT_EQ(only["output"][0]["type"], "function_call");
  EXPECT_EQ(only["output"][0]["call_id"], "call_y");
}

// Streamed: text, then a call (the chat route streams each call whole),
// then text again: the message closes before the call's events, the later
// text opens a second message; output indexes count the items.
TEST(ResponsesWriter, StreamedFunctionCallEvents) {
  auto inner = std::make_shared<testing::CapturingWriter>();
  auto writer = MakeResponsesWriter(inner, Info());
  writer->BeginStream();
  EXPECT_EQ(inner->body(), "");  // the first events wait for the first chunk
  writer->SendStreamData(
      "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_q\",\"type\":\"function\","
      "\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}}]}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
      "data: [DONE]\n\n");
  writer->EndStream();
  auto events = ParseEvents(inner->body());
  std::vector<std::string> types;
  for (size_t i = 0; i < events.size(); ++i) {
    types.push_back(events[i].first);
    EXPECT_EQ(events[i].second["sequence_number"], static_cast<int64_t>(i));
  }
  EXPECT_EQ(types,
            (std::vector<std::string>{
                "response.created", "response.in_progress", "response.output_item.added",
                "response.content_part.added", "response.output_text.delta", "response.output_text.done",
                "response.content_part.done", "response.output_item.done", "response.output_item.added",
                "response.function_call_arguments.delta", "response.function_call_arguments.done",
                "response.output_item.done", "response.output_item.added", "response.content_part.added",
                "response.output_text.delta", "response.output_text.done", "response.content_part.done",
                "response.output_item.done", "response.completed"}));
  const ojson& added = events[8].second;
  EXPECT_EQ(added["output_index"], 1);
  EXPECT_EQ(added["item"], ojson::parse(R"({"type": "function_call", "id": "fc_1_0", "call_id": "call_q",
      "name": "f", "arguments": "", "status": "in_progress"})"));
  EXPECT_EQ(events[9].second["item_id"], "fc_1_0");
  EXPECT_EQ(events[9].second["delta"], "{\"a\":1}");
  EXPECT_EQ(events[10].second["arguments"], "{\"a\":1}");
  EXPECT_EQ(events[11].second["item"]["status"], "completed");
  EXPECT_EQ(events[12].second["output_index"], 2);
  EXPECT_EQ(events[12].second["item"]["id"], "msg_1_2");
  const ojson& done = events.back().second["response"];
  ASSERT_EQ(done["output"].size(), 3u);
  EXPECT_EQ(done["output"][0]["content"][0]["text"], "Hi");
  EXPECT_EQ(done["output"][1]["arguments"], "{\"a\":1}");
  EXPECT_EQ(done["output"][2]["content"][0]["text"], "ok");
}

// The chat route's warnings (relaxed JSON Schema assertions) reach the
// Responses object, named in Responses terms, full and streamed (from the
// first event on).
TEST(ResponsesWriter, WarningsReachTheResponse) {
  const std::string warning =
      R"J({"type": "relaxed_schema_assertion", "message": "m", "param": "response_format",
          "keyword": "uniqueItems (items is not a finite set)", "pointer": "#/properties/ids"})J";
  ojson want = ojson::parse(warning);
  want["param"] = "text.format";
  auto inner = std::make_shared<testing::CapturingWriter>();
  MakeResponsesWriter(inner, Info())
      ->SendResponse(
          200, "application/json",
          R"({"choices": [{"finish_reason": "stop", "message": {"content": "[]"}}], "warnings": [)" +
              warning + "]}");
  EXPECT_EQ(ojson::parse(inner->body())["warnings"], ojson::array({want}));

  auto streamed = std::make_shared<testing::CapturingWriter>();
  auto writer = MakeResponsesWriter(streamed, Info());
  writer->BeginStream();
  writer->SendStreamData(R"(data: {"choices":[{"delta":{"role":"assistant","content":"[]"}}],"warnings":[)" +
                         ojson::parse(warning).dump() + "]}\n\n");
  writer->SendStreamData(
      "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
  auto events = ParseEvents(streamed->body());
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events[0].first, "response.created");
  EXPECT_EQ(events[0].second["response"]["warnings"], ojson::array({want}));
  EXPECT_EQ(events.back().first, "response.completed");
  EXPECT_EQ(events.back().second["response"]["warnings"], ojson::array({want}));
  // Without warnings, no field.
  auto plain = std::make_shared<testing::CapturingWriter>();
  MakeResponsesWriter(plain, Info())
      ->SendResponse(200, "application/json", R"({"choices": [{"message": {"content": "a"}}]})");
  EXPECT_FALSE(ojson::parse(plain->body()).contains("warnings"));
}

}  // namespace
}  // namespace deepinfer::server
