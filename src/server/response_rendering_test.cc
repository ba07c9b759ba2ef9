// Rendering: error JSON, SSE framing, usage, both logprobs formats, chunks and
// the Prometheus text.
#include <regex>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/metrics_text.h"
#include "server/response_json.h"

namespace deepinfer::server {
namespace {

TEST(ApiErrorTest, JsonShapeAndStatusMapping) {
  ApiError e = BadRequest("bad 'n'", "n");
  json j = json::parse(e.ToJson());
  EXPECT_EQ(j["error"]["message"], "bad 'n'");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "n");
  EXPECT_TRUE(j["error"]["code"].is_null());
  EXPECT_EQ(ApiErrorFromStatus(InvalidArgument("x")).http_status, 400);
  EXPECT_EQ(ApiErrorFromStatus(OutOfRange("x")).http_status, 400);
  EXPECT_EQ(ApiErrorFromStatus(ResourceExhausted("x")).http_status, 429);
  EXPECT_EQ(ApiErrorFromStatus(Unavailable("x")).http_status, 503);
  EXPECT_EQ(ApiErrorFromStatus(Internal("x")).http_status, 500);
  EXPECT_EQ(ApiErrorFromStatus(Unimplemented("x")).http_status, 400);  // the request's to change
  // Errors about the request's own content are permanent: 400 even for a
  // budget (ResourceExhausted), 500 only for the server's own faults.
  EXPECT_EQ(RequestContentError(ResourceExhausted("x")).http_status, 400);
  EXPECT_EQ(RequestContentError(ResourceExhausted("x")).code, "limit_exceeded");
  EXPECT_EQ(RequestContentError(Unimplemented("x")).http_status, 400);
  EXPECT_EQ(RequestContentError(InvalidArgument("x")).http_status, 400);
  EXPECT_EQ(RequestContentError(Internal("x")).http_status, 500);
  // Invalid UTF-8 in a message never makes serialization throw.
  ApiError bytes = BadRequest(std::string("bad \xff\xfe byte"));
  EXPECT_NO_THROW(json::parse(bytes.ToJson()));
}

TEST(ResponseJson, SseFraming) {
  EXPECT_EQ(SseEvent(json{{"a", 1}}), "data: {\"a\":1}\n\n");
  EXPECT_STREQ(kSseDone, "data: [DONE]\n\n");
}

TEST(ResponseJson, Usage) {
  json u = UsageJson({10, 5, 8});
  EXPECT_EQ(u["prompt_tokens"], 10);
  EXPECT_EQ(u["completion_tokens"], 5);
  EXPECT_EQ(u["total_tokens"], 15);
  EXPECT_EQ(u["prompt_tokens_details"]["cached_tokens"], 8);
}

TokenTextFn Letters() {
  return [](int32_t id) {
    return std::string(static_cast<size_t>(id % 3 + 1), static_cast<char>('a' + id % 26));
  };
}

TEST(ResponseJson, CompletionLogprobs) {
  std::vector<TokenLogprob> lps = {{0, -0.25f, {{0, -0.25f}, {1, -2.0f}}}, {4, -1.5f, {{4, -1.5f}}}};
  json j = CompletionLogprobsJson(lps, Letters(), 7);
  EXPECT_EQ(j["tokens"], json({"a", "ee"}));
  EXPECT_EQ(j["token_logprobs"], json({-0.25, -1.5}));
  EXPECT_EQ(j["text_offset"], json({7, 8}));  // 7, then 7 + len("a")
  EXPECT_EQ(j["top_logprobs"][0]["bb"], -2.0);
  EXPECT_EQ(j["top_logprobs"][1].size(), 1u);
}

TEST(ResponseJson, ChatLogprobs) {
  std::vector<TokenLogprob> lps = {{1, -0.5f, {{1, -0.5f}, {2, -1.0f}}}};
  json j = ChatLogprobsJson(lps, Letters());
  ASSERT_EQ(j["content"].size(), 1u);
  EXPECT_EQ(j["content"][0]["token"], "bb");
  EXPECT_EQ(j["content"][0]["bytes"], json({98, 98}));
  EXPECT_EQ(j["content"][0]["top_logprobs"][1]["token"], "ccc");
  EXPECT_EQ(j["content"][0]["top_logprobs"][1]["logprob"], -1.0);
}

TEST(ResponseJson, ChunksAndFullResponses) {
  ResponseContext ctx{ParsedRequest::Api::kChat, "chatcmpl-1", "m", 123};
  json first = ChatChunkJson(ctx, 0, ChatDelta(true, ""), nullptr, "");
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"], json({{"role", "assistant"}, {"content", ""}}));
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_EQ(ChatDelta(false, "hi"), json({{"content", "hi"}}));
  EXPECT_EQ(ChatDelta(false, ""), json({{"content", ""}}));  // tokens with no text yet still make a chunk
  json last = ChatChunkJson(ctx, 1, json::object(), nullptr, "length");
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(last["choices"][0]["index"], 1);
  json usage = UsageChunkJson(ctx, {3, 4, 0});
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["total_tokens"], 7);

  ChoiceResult c;
  c.text = "hello";
  c.finish_reason = "stop";
  json full = FullResponseJson(ctx, {c}, {3, 1, 0}, Letters());
  EXPECT_EQ(full["object"], "chat.completion");
  EXPECT_EQ(full["choices"][0]["message"], json({{"role", "assistant"}, {"content", "hello"}}));
  EXPECT_TRUE(full["choices"][0]["logprobs"].is_null());

  ctx.api = ParsedRequest::Api::kCompletion;
  json text_chunk = CompletionChunkJson(ctx, 0, "abc", nullptr, "");
  EXPECT_EQ(text_chunk["object"], "text_completion");
  EXPECT_EQ(text_chunk["choices"][0]["text"], "abc");
  full = FullResponseJson(ctx, {c}, {3, 1, 0}, Letters());
  EXPECT_EQ(full["choices"][0]["text"], "hello");
  EXPECT_EQ(full["id"], "chatcmpl-1");
  EXPECT_EQ(full["created"], 123);
}

TEST(MetricsText, NamesValuesAndCumulativeHistograms) {
  EngineMetrics m;
  m.num_requests_running = 3;
  m.num_requests_waiting = 2;
  m.kv_cache_usage_ratio = 0.25;
  m.prefix_cache_hit_ratio = 0.5;
  m.prompt_tokens_total = 100;
  m.generation_tokens_total = 40;
  m.executor_idle_seconds_total = 1.5;
  m.steps_planned_ahead_total = 9;
  m.steps_planned_without_overlap_total = 2;
  m.time_to_first_token_seconds.upper_bounds = {0.1, 1.0};
  m.time_to_first_token_seconds.counts = {2, 3, 1};  // per bucket; the last is > 1.0
  m.time_to_first_token_seconds.sum = 4.5;
  m.time_to_first_token_seconds.count = 6;
  std::string text = RenderPrometheusMetrics(m);

  // Every sample line is "name{labels} value" or "name value"; every metric has HELP and TYPE.
  std::regex sample(R"(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-z]+="[^"]*"\})? [-+0-9.eEInfNa]+$)");
  std::istringstream lines(text);
  std::string line;
  std::map<std::string, std::string> values;
  while (std::getline(lines, line)) {
    if (line.rfind("# ", 0) == 0) continue;
    EXPECT_TRUE(std::regex_match(line, sample)) << line;
    values[line.substr(0, line.rfind(' '))] = line.substr(line.rfind(' ') + 1);
  }
  EXPECT_EQ(values["deepinfer_num_requests_running"], "3");
  EXPECT_EQ(values["deepinfer_num_requests_waiting"], "2");
  EXPECT_EQ(values["deepinfer_kv_cache_usage_ratio"], "0.25");
  EXPECT_EQ(values["deepinfer_prefix_cache_hit_ratio"], "0.5");
  EXPECT_EQ(values["deepinfer_prompt_tokens_total"], "100");
  EXPECT_EQ(values["deepinfer_generation_tokens_total"], "40");
  EXPECT_EQ(values["deepinfer_executor_idle_seconds_total"], "1.5");
  EXPECT_EQ(values["deepinfer_time_to_first_token_seconds_bucket{le=\"0.1\"}"], "2");
  EXPECT_EQ(values["deepinfer_time_to_first_token_seconds_bucket{le=\"1\"}"], "5");
  EXPECT_EQ(values["deepinfer_time_to_first_token_seconds_bucket{le=\"+Inf\"}"], "6");
  EXPECT_EQ(values["deepinfer_time_to_first_token_seconds_sum"], "4.5");
  EXPECT_EQ(values["deepinfer_time_to_first_token_seconds_count"], "6");
  EXPECT_EQ(values["deepinfer_time_per_output_token_seconds_count"], "0");
  EXPECT_EQ(values.count("deepinfer_spec_decode_num_accepted_tokens_total"), 1u);
  EXPECT_EQ(values.count("deepinfer_spec_decode_num_draft_tokens_total"), 1u);
  EXPECT_EQ(values["deepinfer_steps_planned_ahead_total"], "9");
  EXPECT_EQ(values["deepinfer_steps_planned_without_overlap_total"], "2");
  EXPECT_NE(text.find("# TYPE deepinfer_time_to_first_token_seconds histogram\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE deepinfer_prompt_tokens_total counter\n"), std::string::npos);
}

TEST(PrometheusText, SpeculativeDecodingSeriesPerPositionAndTheDraftLengthHistogram) {
  EngineMetrics m;
  m.spec_num_drafts_total = 10;
  m.spec_paused_steps_total = 7;
  m.spec_draft_tokens_total = 30;
  m.spec_accepted_tokens_total = 12;
  m.spec_accepted_per_position = {7, 4, 1};
  m.spec_predicted_acceptance = {0.75, 0.5, 0.25};
  m.spec_observed_acceptance = {0.7, 0.5, 0.2};
  m.spec_draft_length_counts = {5, 0, 2, 8};  // k = 0, 1, 2, 3
  const std::string text = RenderPrometheusMetrics(m);
  auto has = [&](const std::string& line) { return text.find(line + "\n") != std::string::npos; };
  EXPECT_TRUE(has("deepinfer_spec_decode_num_drafts_total 10"));
  EXPECT_TRUE(has("deepinfer_spec_decode_paused_steps_total 7"));
  EXPECT_TRUE(has("deepinfer_spec_decode_num_draft_tokens_total 30"));
  EXPECT_TRUE(has("deepinfer_spec_decode_num_accepted_tokens_total 12"));
  EXPECT_TRUE(has("deepinfer_spec_decode_num_accepted_tokens_per_pos_total{position=\"0\"} 7"));
  EXPECT_TRUE(has("deepinfer_spec_decode_num_accepted_tokens_per_pos_total{position=\"2\"} 1"));
  EXPECT_TRUE(has("deepinfer_spec_decode_predicted_acceptance{position=\"1\"} 0.5"));
  EXPECT_TRUE(has("deepinfer_spec_decode_observed_acceptance{position=\"2\"} 0.2"));
  // Cumulative buckets: le=0 -> 5, le=1 -> 5, le=2 -> 7, +Inf -> 15; sum 0*5 + 2*2 + 3*8 = 28.
  EXPECT_TRUE(has("deepinfer_spec_decode_draft_length_bucket{le=\"0\"} 5"));
  EXPECT_TRUE(has("deepinfer_spec_decode_draft_length_bucket{le=\"2\"} 7"));
  EXPECT_TRUE(has("deepinfer_spec_decode_draft_length_bucket{le=\"+Inf\"} 15"));
  EXPECT_TRUE(has("deepinfer_spec_decode_draft_length_sum 28"));
  // Speculation off: no per-position series.
  EXPECT_EQ(RenderPrometheusMetrics(EngineMetrics{}).find("per_pos"), std::string::npos);
}

}  // namespace
}  // namespace deepinfer::server
