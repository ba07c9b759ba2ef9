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
      {R"({"input": [{"type": "function_call_output", "call_id": "c", "output": "x"}]})", "input"},
      {R"({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "u"}]}]})", "input"},
      {R"({"input": "x", "max_output_tokens": 0})", "max_output_tokens"},
      {R"({"input": "x", "stream": "yes"})", "stream"},
      {R"({"input": "x", "tools": [{"type": "function", "name": "f"}]})", "tools"},
      {R"({"input": "x", "tool_choice": "required"})", "tool_choice"},
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

}  // namespace
}  // namespace deepinfer::server
