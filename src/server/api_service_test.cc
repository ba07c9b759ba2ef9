// ApiService end to end over a FakeEngine: routing, auth, the mapping of
// request fields onto engine requests, response assembly (full and SSE),
// usage, n > 1, error statuses and client disconnects.
#include <gtest/gtest.h>

#include "server/api_service.h"
#include "server/capturing_writer_test_util.h"
#include "server/fake_engine_test_util.h"
#include "server/tool_parsers/tool_call_parser.h"

namespace deepinfer::server {
namespace {

using json = nlohmann::json;
using testing::CapturingWriter;
using testing::FakeEngine;

class ApiServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tok_ = testing::LoadTestTokenizer();
    ASSERT_NE(tok_, nullptr) << "stories260K.gguf not found under " << DI_SHARED_DIR;
    engine_ = std::make_unique<FakeEngine>(*tok_);
    ServiceOptions options;
    options.served_model_name = "tiny";
    service_ = std::make_unique<ApiService>(*engine_, options);
    service_->SetReady(true);
  }

  std::shared_ptr<CapturingWriter> Call(const std::string& method, const std::string& path,
                                        const std::string& body = "", const std::string& auth = "") {
    auto w = std::make_shared<CapturingWriter>();
    service_->Handle({method, path, auth, body}, w);
    EXPECT_TRUE(w->Wait()) << method << " " << path << " did not finish";
    return w;
  }

  // The text the fake generates for a prompt (TokenBytes of each token).
  std::string ExpectedText(const std::vector<int32_t>& prompt, const SamplingParams& s, uint32_t draw,
                           int n) {
    std::string text;
    for (int32_t t : FakeEngine::ExpectedTokens(prompt, s, draw, n)) text += tok_->TokenBytes(t);
    return text;
  }

  std::unique_ptr<Tokenizer> tok_;
  std::unique_ptr<FakeEngine> engine_;
  std::unique_ptr<ApiService> service_;
};

TEST_F(ApiServiceTest, HealthModelsRoutes) {
  EXPECT_EQ(Call("GET", "/health")->status(), 200);
  service_->SetReady(false);
  EXPECT_EQ(Call("GET", "/health")->status(), 503);
  EXPECT_EQ(Call("POST", "/v1/completions", R"({"prompt": "x"})")->status(), 503);
  service_->SetReady(true);
  auto models = Call("GET", "/v1/models");
  ASSERT_EQ(models->status(), 200);
  EXPECT_EQ(models->json()["data"][0]["id"], "tiny");
  EXPECT_EQ(models->json()["data"][0]["vocab_size"], 512);
  auto missing = Call("GET", "/v2/nothing");
  EXPECT_EQ(missing->status(), 404);
  EXPECT_TRUE(missing->json()["error"]["message"].is_string());
  EXPECT_EQ(Call("GET", "/v1/completions")->status(), 405);
  EXPECT_EQ(Call("GET", "/health?verbose=1")->status(), 200);
  auto metrics = Call("GET", "/metrics");
  EXPECT_EQ(metrics->status(), 200);
  EXPECT_NE(metrics->body().find("deepinfer_num_requests_running 0\n"), std::string::npos);
}

TEST_F(ApiServiceTest, ApiKey) {
  ServiceOptions options;
  options.api_key = "sekrit";
  ApiService keyed(*engine_, options);
  keyed.SetReady(true);
  auto call = [&](const std::string& path, const std::string& auth) {
    auto w = std::make_shared<CapturingWriter>();
    keyed.Handle({"GET", path, auth, ""}, w);
    EXPECT_TRUE(w->Wait());
    return w->status();
  };
  EXPECT_EQ(call("/v1/models", ""), 401);
  EXPECT_EQ(call("/v1/models", "Bearer wrong"), 401);
  EXPECT_EQ(call("/v1/models", "sekrit"), 401);
  EXPECT_EQ(call("/v1/models", "Bearer sekrit"), 200);
  EXPECT_EQ(call("/health", ""), 200);  // probes need no key
}

TEST_F(ApiServiceTest, CompletionMapsFieldsAndAssemblesText) {
  auto w = Call("POST", "/v1/completions",
                R"({"model": "tiny", "prompt": "Once upon a time", "max_tokens": 5, "temperature": 0.7,
                    "top_k": 40, "top_p": 0.9, "min_p": 0.05, "seed": 42, "stop": ["."],
                    "stop_token_ids": [13], "ignore_eos": true, "priority": 2,
                    "repetition_penalty": 1.1, "logit_bias": {"300": 5}})");
  ASSERT_EQ(w->status(), 200) << w->body();
  auto sub = engine_->submitted();
  ASSERT_EQ(sub.size(), 1u);
  std::vector<int32_t> prompt = tok_->Encode("Once upon a time", true, true);
  EXPECT_EQ(sub[0].prompt_tokens, prompt);
  EXPECT_EQ(sub[0].max_tokens, 5);
  EXPECT_EQ(sub[0].sampling.temperature, 0.7);
  EXPECT_EQ(sub[0].sampling.top_k, 40);
  EXPECT_EQ(sub[0].seed, std::optional<uint64_t>(42));
  EXPECT_DOUBLE_EQ(sub[0].sampling.repetition_penalty, 1.1);
  EXPECT_EQ(sub[0].stop, (std::vector<std::string>{"."}));
  EXPECT_EQ(sub[0].stop_token_ids, (std::vector<int32_t>{13}));
  EXPECT_TRUE(sub[0].ignore_eos);
  EXPECT_EQ(sub[0].priority, 2);
  EXPECT_EQ(sub[0].logprobs, -1);
  EXPECT_FALSE(sub[0].has_constraint);

  json r = w->json();
  EXPECT_EQ(r["object"], "text_completion");
  EXPECT_EQ(r["model"], "tiny");
  EXPECT_EQ(r["choices"][0]["text"], ExpectedText(prompt, sub[0].sampling, 0, 5));
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(r["usage"]["prompt_tokens"], prompt.size());
  EXPECT_EQ(r["usage"]["completion_tokens"], 5);
  EXPECT_EQ(r["usage"]["total_tokens"], prompt.size() + 5);
}

TEST_F(ApiServiceTest, WrongModelIs404) {
  auto w = Call("POST", "/v1/completions", R"({"model": "gpt-4", "prompt": "x"})");
  EXPECT_EQ(w->status(), 404);
  EXPECT_EQ(w->json()["error"]["code"], "model_not_found");
}

TEST_F(ApiServiceTest, NChoicesUseDrawStreamsAndShareTheSeed) {
  auto w =
      Call("POST", "/v1/completions", R"({"prompt": ["ab", [5, 6, 7]], "n": 2, "max_tokens": 3, "seed": 9})");
  ASSERT_EQ(w->status(), 200) << w->body();
  auto sub = engine_->submitted();
  ASSERT_EQ(sub.size(), 4u);
  json r = w->json();
  ASSERT_EQ(r["choices"].size(), 4u);
  int64_t prompt_tokens = 0;
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(sub[i].draw_stream, i % 2);
    EXPECT_EQ(sub[i].seed, std::optional<uint64_t>(9));
    EXPECT_EQ(r["choices"][i]["index"], i);
    EXPECT_EQ(r["choices"][i]["text"],
              ExpectedText(sub[i].prompt_tokens, sub[i].sampling, sub[i].draw_stream, 3));
    if (i % 2 == 0) prompt_tokens += static_cast<int64_t>(sub[i].prompt_tokens.size());
  }
  EXPECT_EQ(sub[2].prompt_tokens, (std::vector<int32_t>{5, 6, 7}));
  EXPECT_NE(r["choices"][0]["text"], r["choices"][1]["text"]);  // different draw streams
  EXPECT_EQ(r["usage"]["prompt_tokens"], prompt_tokens);        // once per prompt, not per choice
  EXPECT_EQ(r["usage"]["completion_tokens"], 12);
}

TEST_F(ApiServiceTest, SeedIsPassedOnlyWhenGiven) {
  Call("POST", "/v1/completions", R"({"prompt": "x", "max_tokens": 1})");
  Call("POST", "/v1/completions", R"({"prompt": "x", "max_tokens": 1, "seed": 0})");
  auto sub = engine_->submitted();
  ASSERT_EQ(sub.size(), 2u);
  EXPECT_FALSE(sub[0].seed.has_value());               // the engine draws a random seed
  EXPECT_EQ(sub[1].seed, std::optional<uint64_t>(0));  // seed 0 is a real seed
}

TEST_F(ApiServiceTest, EchoAndLogprobs) {
  auto w = Call("POST", "/v1/completions",
                R"({"prompt": "Hello", "max_tokens": 2, "echo": true, "temperature": 0})");
  ASSERT_EQ(w->status(), 200);
  std::vector<int32_t> prompt = tok_->Encode("Hello", true, true);
  SamplingParams greedy;
  greedy.temperature = 0;
  EXPECT_EQ(w->json()["choices"][0]["text"], "Hello" + ExpectedText(prompt, greedy, 0, 2));

  w = Call("POST", "/v1/completions", R"({"prompt": "Hello", "max_tokens": 3, "logprobs": 2})");
  ASSERT_EQ(w->status(), 200);
  EXPECT_EQ(engine_->submitted().back().logprobs, 2);
  json lp = w->json()["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 3u);
  EXPECT_EQ(lp["token_logprobs"][0], -0.5);
  EXPECT_EQ(lp["top_logprobs"][0].size(), 2u);
  EXPECT_EQ(lp["text_offset"][0], 0);
  EXPECT_EQ(lp["text_offset"][1], lp["tokens"][0].get<std::string>().size());
}

TEST_F(ApiServiceTest, StreamingCompletionWithUsage) {
  auto w = Call("POST", "/v1/completions",
                R"({"prompt": "Hi", "max_tokens": 4, "stream": true, "seed": 1,
                    "stream_options": {"include_usage": true}})");
  ASSERT_TRUE(w->streaming());
  auto events = w->Events();
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text;
  std::string finish;
  for (size_t i = 0; i + 2 < events.size(); ++i) {
    json chunk = json::parse(events[i]);
    EXPECT_EQ(chunk["object"], "text_completion");
    text += chunk["choices"][0]["text"].get<std::string>();
    if (!chunk["choices"][0]["finish_reason"].is_null()) finish = chunk["choices"][0]["finish_reason"];
  }
  auto sub = engine_->submitted();
  EXPECT_EQ(text, ExpectedText(sub[0].prompt_tokens, sub[0].sampling, 0, 4));
  EXPECT_EQ(finish, "length");
  json usage = json::parse(events[events.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 4);
  EXPECT_EQ(usage["usage"]["prompt_tokens"], sub[0].prompt_tokens.size());
}

// Tokens that add no text still get one chunk each (with empty text), so a
// client can time the first token and the pacing; the finish reason arrives
// with the last one.
TEST_F(ApiServiceTest, StreamingSendsAChunkPerTokenEvenWithoutText) {
  engine_->SetTextless(true);
  for (const char* path : {"/v1/completions", "/v1/chat/completions"}) {
    const bool chat = std::string(path) == "/v1/chat/completions";
    auto w =
        Call("POST", path,
             chat ? R"({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 5, "stream": true})"
                  : R"({"prompt": "Hi", "max_tokens": 5, "stream": true})");
    ASSERT_TRUE(w->streaming());
    auto events = w->Events();
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back(), "[DONE]");
    int token_chunks = 0;
    for (size_t i = 0; i + 1 < events.size(); ++i) {
      json choice = json::parse(events[i])["choices"][0];
      const json& text = chat ? choice["delta"]["content"] : choice["text"];
      if (text.is_string()) {
        EXPECT_EQ(text, "") << path;
        ++token_chunks;
      }
    }
    EXPECT_EQ(token_chunks, 5) << path;
  }
}

TEST_F(ApiServiceTest, ChatUsesTheFallbackTemplateAndStreamsDeltas) {
  auto w = Call("POST", "/v1/chat/completions",
                R"({"messages": [{"role": "user", "content": "Tell a story"}], "max_tokens": 3,
                    "stream": true, "temperature": 0})");
  auto sub = engine_->submitted();
  ASSERT_EQ(sub.size(), 1u);
  EXPECT_EQ(sub[0].prompt_tokens, tok_->Encode("<|user|>\nTell a story\n<|assistant|>\n", true, true));
  auto events = w->Events();
  ASSERT_GE(events.size(), 3u);
  json first = json::parse(events[0]);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    json d = json::parse(events[i])["choices"][0]["delta"];
    if (d.contains("content")) text += d["content"].get<std::string>();
  }
  EXPECT_EQ(text, ExpectedText(sub[0].prompt_tokens, sub[0].sampling, 0, 3));
  EXPECT_EQ(json::parse(events[events.size() - 2])["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(events.back(), "[DONE]");
}

TEST_F(ApiServiceTest, ChatDefaultsMaxTokensToTheRestOfTheContext) {
  ServiceOptions options;
  options.chat_renderer = [](const std::vector<ChatMessage>& m,
                             const ChatRenderOptions&) -> StatusOr<std::string> {
    return "[" + m[0].content + "]";
  };
  ApiService custom(*engine_, options);
  custom.SetReady(true);
  engine_->SetHold(true);  // no need to generate 250 tokens
  auto w = std::make_shared<CapturingWriter>();
  custom.Handle({"POST", "/v1/chat/completions", "", R"({"messages": [{"role": "user", "content": "hey"}],
                                                         "logprobs": true, "top_logprobs": 1})"},
                w);
  ASSERT_TRUE(engine_->WaitSubmitted(1));
  auto sub = engine_->submitted();
  std::vector<int32_t> prompt = tok_->Encode("[hey]", true, true);
  EXPECT_EQ(sub[0].prompt_tokens, prompt);
  EXPECT_EQ(sub[0].max_tokens, 256 - static_cast<int32_t>(prompt.size()));
  EXPECT_EQ(sub[0].logprobs, 1);
  w->Disconnect();
  engine_->SetHold(false);
  ASSERT_TRUE(w->Wait() || engine_->num_live() == 0);
}

TEST_F(ApiServiceTest, ChatFullResponseWithLogprobs) {
  auto w = Call("POST", "/v1/chat/completions",
                R"({"messages": [{"role": "user", "content": "x"}], "max_completion_tokens": 2,
                    "logprobs": true, "top_logprobs": 2})");
  ASSERT_EQ(w->status(), 200) << w->body();
  json r = w->json();
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["choices"][0]["message"]["role"], "assistant");
  ASSERT_EQ(r["choices"][0]["logprobs"]["content"].size(), 2u);
  EXPECT_EQ(r["choices"][0]["logprobs"]["content"][0]["top_logprobs"].size(), 2u);
}

TEST_F(ApiServiceTest, BadRequestsAndEngineErrors) {
  EXPECT_EQ(Call("POST", "/v1/completions", "{not json")->status(), 400);
  EXPECT_EQ(Call("POST", "/v1/completions", "")->status(), 400);
  EXPECT_EQ(Call("POST", "/v1/completions", std::string(10000, '[') + std::string(10000, ']'))->status(),
            400);
  EXPECT_EQ(Call("POST", "/v1/completions", R"({"prompt": "x", "max_tokens": 300})")->status(), 400);
  EXPECT_EQ(Call("POST", "/v1/chat/completions", R"({"messages": 3})")->status(), 400);
  auto w = Call("POST", "/v1/completions", R"({"prompt": "x", "max_tokens": "many"})");
  EXPECT_EQ(w->json()["error"]["param"], "max_tokens");

  engine_->FailNextSubmit(ResourceExhausted("queue full"));
  EXPECT_EQ(Call("POST", "/v1/completions", R"({"prompt": "x"})")->status(), 429);
  engine_->FailNextSubmit(Unavailable("shutting down"));
  EXPECT_EQ(Call("POST", "/v1/completions", R"({"prompt": "x"})")->status(), 503);
  // The second choice fails: the first is aborted and the client sees the error only.
  engine_->SetHold(true);
  engine_->FailNextSubmit(ResourceExhausted("queue full"), 1);
  size_t before = engine_->submitted().size();
  w = Call("POST", "/v1/completions", R"({"prompt": "x", "n": 2, "stream": true})");
  EXPECT_EQ(w->status(), 429);
  EXPECT_FALSE(w->streaming());
  auto sub = engine_->submitted();
  ASSERT_EQ(sub.size(), before + 1);
  auto aborted = engine_->aborted();
  EXPECT_NE(std::find(aborted.begin(), aborted.end(), sub.back().id), aborted.end());
  engine_->SetHold(false);
}

TEST_F(ApiServiceTest, DisconnectAbortsEveryChoice) {
  engine_->SetHold(true);
  auto w = std::make_shared<CapturingWriter>();
  service_->Handle({"POST", "/v1/completions", "", R"({"prompt": "x", "n": 3, "stream": true})"}, w);
  ASSERT_TRUE(engine_->WaitSubmitted(3));
  w->Disconnect();
  auto aborted = engine_->aborted();
  ASSERT_EQ(aborted.size(), 3u);
  engine_->SetHold(false);
  for (int i = 0; i < 500 && engine_->num_live() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(engine_->num_live(), 0u);
}

TEST_F(ApiServiceTest, StructuredOutputAttachesAConstraint) {
  auto w =
      Call("POST", "/v1/completions", R"({"prompt": "x", "max_tokens": 2, "guided_choice": ["yes", "no"]})");
  EXPECT_EQ(w->status(), 200) << w->body();
  EXPECT_TRUE(engine_->submitted().back().has_constraint);
  w = Call("POST", "/v1/completions", R"({"prompt": "x", "guided_regex": "(unclosed"})");
  EXPECT_EQ(w->status(), 400) << w->body();
}

// Issue 19 (10): a constraint that uses an unsupported feature or exceeds a
// compile budget is the request's fault, and permanent: 400 (clients retry
// 429 and 5xx), never 501 or 429. Nothing reaches the engine.
TEST_F(ApiServiceTest, PermanentConstraintErrorsAre400) {
  const size_t before = engine_->submitted().size();
  struct Case {
    const char* body;
    const char* code;  // ApiError::code
  };
  const Case cases[] = {
      {R"({"prompt": "x", "guided_regex": "(?=a)b"})", "unsupported"},        // lookahead
      {R"({"prompt": "x", "guided_regex": "a\\bb"})", "unsupported"},         // word boundary
      {R"({"prompt": "x", "guided_regex": "a{200000}"})", "limit_exceeded"},  // repetition budget
  };
  for (const Case& c : cases) {
    auto w = Call("POST", "/v1/completions", c.body);
    EXPECT_EQ(w->status(), 400) << c.body << " -> " << w->body();
    EXPECT_EQ(w->json()["error"]["type"], "invalid_request_error") << w->body();
    EXPECT_EQ(w->json()["error"]["code"], c.code) << w->body();
  }
  EXPECT_EQ(engine_->submitted().size(), before);
}

// Issue 17 (3): OpenAI's json_schema.strict. uniqueItems over strings is an
// assertion the grammar cannot enforce exactly (docs/structured-output.md:
// relaxed beyond finite item sets). strict: 400 naming the keyword and its
// JSON pointer, nothing submitted; best effort (strict false or absent): 200
// with one top-level "warnings" entry per relaxed assertion, in the full
// response or the first streamed chunk only. A fully enforced schema gets
// no field.
TEST_F(ApiServiceTest, StrictJsonSchemaRefusesWhatBestEffortRelaxes) {
  const std::string schema =
      R"({"type": "object", "properties": {"ids": {"type": "array", "items": {"type": "string", "maxLength": 3},
          "uniqueItems": true, "maxItems": 3}}, "required": ["ids"], "additionalProperties": false})";
  auto chat_body = [&](const std::string& strict, const std::string& extra = "") {
    return R"({"messages": [{"role": "user", "content": "ids"}], "max_tokens": 3, )" + extra +
           R"("response_format": {"type": "json_schema", "json_schema": {"name": "ids", )" + strict +
           R"("schema": )" + schema + "}}}";
  };
  const size_t before = engine_->submitted().size();
  auto refused = Call("POST", "/v1/chat/completions", chat_body(R"("strict": true, )"));
  ASSERT_EQ(refused->status(), 400) << refused->body();
  const json error = refused->json()["error"];
  EXPECT_EQ(error["param"], "response_format");
  EXPECT_EQ(error["code"], "unsupported");
  const std::string message = error["message"];
  EXPECT_NE(message.find("uniqueItems"), std::string::npos) << message;
  EXPECT_NE(message.find("#/properties/ids"), std::string::npos) << message;
  EXPECT_EQ(engine_->submitted().size(), before);

  for (const std::string strict : {std::string(R"("strict": false, )"), std::string()}) {
    auto w = Call("POST", "/v1/chat/completions", chat_body(strict));
    ASSERT_EQ(w->status(), 200) << w->body();
    EXPECT_TRUE(engine_->submitted().back().has_constraint);
    const json warnings = w->json()["warnings"];
    ASSERT_EQ(warnings.size(), 1u) << w->body();
    EXPECT_EQ(warnings[0]["type"], "relaxed_schema_assertion");
    EXPECT_EQ(warnings[0]["param"], "response_format");
    EXPECT_EQ(warnings[0]["pointer"], "#/properties/ids");
    EXPECT_EQ(warnings[0]["keyword"].get<std::string>().rfind("uniqueItems", 0), 0u) << warnings;
    EXPECT_NE(warnings[0]["message"].get<std::string>().find("uniqueItems"), std::string::npos);
  }

  // Streamed: in the first chunk, and only there.
  auto s = Call("POST", "/v1/chat/completions", chat_body("", R"("stream": true, )"));
  ASSERT_TRUE(s->streaming());
  auto events = s->Events();
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(json::parse(events[0])["warnings"][0]["pointer"], "#/properties/ids") << events[0];
  for (size_t i = 1; i + 1 < events.size(); ++i) EXPECT_FALSE(json::parse(events[i]).contains("warnings"));

  // Completions: guided_json is best effort (vLLM has no strict there);
  // response_format takes strict as chat does.
  auto c =
      Call("POST", "/v1/completions", R"({"prompt": "x", "max_tokens": 2, "guided_json": )" + schema + "}");
  ASSERT_EQ(c->status(), 200) << c->body();
  EXPECT_EQ(c->json()["warnings"][0]["param"], "guided_json");
  auto cs = Call("POST", "/v1/completions",
                 R"({"prompt": "x", "max_tokens": 2, "stream": true, "guided_json": )" + schema + "}");
  EXPECT_EQ(json::parse(cs->Events()[0])["warnings"][0]["pointer"], "#/properties/ids");
  auto cr = Call("POST", "/v1/completions",
                 R"({"prompt": "x", "response_format": {"type": "json_schema", "json_schema": {"strict": true,
                     "schema": )" +
                     schema + "}}}");
  EXPECT_EQ(cr->status(), 400) << cr->body();
  EXPECT_NE(cr->json()["error"]["message"].get<std::string>().find("#/properties/ids"), std::string::npos);

  // strict must be a boolean.
  auto bad = Call("POST", "/v1/chat/completions", chat_body(R"("strict": "yes", )"));
  EXPECT_EQ(bad->status(), 400);
  EXPECT_EQ(bad->json()["error"]["param"], "response_format");

  // Everything enforced: strict passes and no warnings field either way.
  const std::string exact = R"({"type": "object", "properties": {"ids": {"type": "array", "items":
      {"enum": ["a", "b"]}, "uniqueItems": true}}, "required": ["ids"]})";
  for (const char* strict : {"true", "false"}) {
    auto w = Call("POST", "/v1/chat/completions",
                  std::string(R"({"messages": [{"role": "user", "content": "ids"}], "max_tokens": 3,
                      "response_format": {"type": "json_schema", "json_schema": {"strict": )") +
                      strict + R"(, "schema": )" + exact + "}}}");
    ASSERT_EQ(w->status(), 200) << w->body();
    EXPECT_FALSE(w->json().contains("warnings")) << w->body();
  }
}

// /v1/responses: text.format json_schema with strict refuses the same way
// (param "text.format"); without strict the Responses object carries the
// warnings.
TEST_F(ApiServiceTest, ResponsesStrictFormatAndWarnings) {
  const std::string format =
      R"({"type": "json_schema", "name": "ids", "schema": {"type": "object", "properties": {"ids":
          {"type": "array", "items": {"type": "string"}, "uniqueItems": true}}}})";
  auto refused = Call("POST", "/v1/responses",
                      R"({"input": "ids", "max_output_tokens": 3, "text": {"format": )" +
                          format.substr(0, format.size() - 1) + R"(, "strict": true}}})");
  ASSERT_EQ(refused->status(), 400) << refused->body();
  EXPECT_EQ(refused->json()["error"]["param"], "text.format");
  const std::string message = refused->json()["error"]["message"];
  EXPECT_NE(message.find("uniqueItems"), std::string::npos) << message;
  EXPECT_NE(message.find("#/properties/ids"), std::string::npos) << message;

  auto w = Call("POST", "/v1/responses",
                R"({"input": "ids", "max_output_tokens": 3, "text": {"format": )" + format + "}}");
  ASSERT_EQ(w->status(), 200) << w->body();
  const json warnings = w->json()["warnings"];
  ASSERT_EQ(warnings.size(), 1u) << w->body();
  EXPECT_EQ(warnings[0]["param"], "text.format");
  EXPECT_EQ(warnings[0]["pointer"], "#/properties/ids");
}

// OpenAI's function.strict (chat's nested shape and the Responses API's flat
// one): a forced call (tool_choice "required" / named) of strict functions
// refuses a parameters schema with an assertion the grammar cannot enforce
// exactly, naming it (param "tools"); without strict the call is forced best
// effort.
TEST_F(ApiServiceTest, StrictFunctionsRefuseWhatTheirForcedCallCannotEnforce) {
  ServiceOptions options;
  options.served_model_name = "tiny";
  options.chat.tool_parser = FindToolCallParser("hermes");
  ASSERT_NE(options.chat.tool_parser, nullptr);
  ApiService tools(*engine_, options);
  tools.SetReady(true);
  auto post = [&](const std::string& path, const std::string& body) {
    auto w = std::make_shared<CapturingWriter>();
    tools.Handle({"POST", path, "", body}, w);
    EXPECT_TRUE(w->Wait()) << body;
    return w;
  };
  const std::string params =
      R"({"type": "object", "properties": {"ids": {"type": "array", "items": {"type": "string"},
          "uniqueItems": true}}})";
  auto chat = [&](const std::string& strict) {
    return R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 3, "tool_choice": "required",
               "tools": [{"type": "function", "function": {"name": "f", )" +
           strict + R"("parameters": )" + params + "}}]}";
  };
  const size_t before = engine_->submitted().size();
  auto refused = post("/v1/chat/completions", chat(R"("strict": true, )"));
  ASSERT_EQ(refused->status(), 400) << refused->body();
  EXPECT_EQ(refused->json()["error"]["param"], "tools");
  const std::string message = refused->json()["error"]["message"];
  EXPECT_NE(message.find("uniqueItems"), std::string::npos) << message;
  EXPECT_NE(message.find("/ids"), std::string::npos) << message;
  auto responses = post("/v1/responses", R"({"input": "x", "max_output_tokens": 3, "tool_choice": "required",
      "tools": [{"type": "function", "name": "f", "strict": true, "parameters": )" +
                                             params + "}]}");
  ASSERT_EQ(responses->status(), 400) << responses->body();
  EXPECT_EQ(responses->json()["error"]["param"], "tools");
  EXPECT_EQ(engine_->submitted().size(), before);
  for (const std::string strict : {std::string(R"("strict": false, )"), std::string()}) {
    auto w = post("/v1/chat/completions", chat(strict));
    EXPECT_EQ(w->status(), 200) << w->body();
    EXPECT_TRUE(engine_->submitted().back().has_constraint);
  }
  EXPECT_EQ(post("/v1/chat/completions", chat(R"("strict": "yes", )"))->json()["error"]["param"], "tools");
}

// Issue 19 (14): more choices than the waiting queue can ever hold is a 400
// (retrying cannot help); a queue that is full right now stays a 429.
TEST_F(ApiServiceTest, ChoicesBeyondTheQueueAre400) {
  engine_->SetMaxWaitingRequests(1);
  auto w = Call("POST", "/v1/completions", R"({"prompt": "x", "n": 5, "max_tokens": 2})");
  EXPECT_EQ(w->status(), 400) << w->body();
  EXPECT_EQ(w->json()["error"]["param"], "n");
  EXPECT_NE(w->json()["error"]["message"].get<std::string>().find("--max-waiting-requests"),
            std::string::npos);
  w = Call("POST", "/v1/completions", R"({"prompt": ["x", "y"], "max_tokens": 2})");
  EXPECT_EQ(w->status(), 400) << w->body();
  EXPECT_EQ(engine_->submitted().size(), 0u);
  EXPECT_EQ(Call("POST", "/v1/completions", R"({"prompt": "x", "max_tokens": 2})")->status(), 200);
  engine_->FailNextSubmit(ResourceExhausted("queue full"));
  EXPECT_EQ(Call("POST", "/v1/completions", R"({"prompt": "x"})")->status(), 429);
}

}  // namespace
}  // namespace deepinfer::server
