// Request parsing: types, ranges, aliases and the mapping of OpenAI / vLLM
// fields onto ParsedRequest.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "server/parsed_request.h"

namespace deepinfer::server {
namespace {

using json = nlohmann::ordered_json;  // what ApiService parses bodies as

RequestLimits Limits() {
  RequestLimits l;
  l.vocab_size = 512;
  return l;
}

ParsedRequest Completion(const std::string& body) {
  ParsedRequest r;
  auto e = ParseCompletionRequest(json::parse(body), Limits(), &r);
  EXPECT_FALSE(e.has_value()) << body << " -> " << (e ? e->message : "");
  return r;
}

ApiError CompletionError(const std::string& body) {
  ParsedRequest r;
  auto e = ParseCompletionRequest(json::parse(body), Limits(), &r);
  EXPECT_TRUE(e.has_value()) << body;
  return e.value_or(ApiError{});
}

ApiError ChatError(const std::string& body) {
  ParsedRequest r;
  auto e = ParseChatRequest(json::parse(body), Limits(), &r);
  EXPECT_TRUE(e.has_value()) << body;
  return e.value_or(ApiError{});
}

TEST(CompletionRequest, PromptForms) {
  auto r = Completion(R"({"prompt": "hello"})");
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_FALSE(r.prompts[0].is_tokens);
  EXPECT_EQ(r.prompts[0].text, "hello");
  EXPECT_EQ(r.max_tokens.value(), 16);  // OpenAI's default
  EXPECT_EQ(r.n, 1);

  r = Completion(R"({"prompt": [1, 2, 511]})");
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_TRUE(r.prompts[0].is_tokens);
  EXPECT_EQ(r.prompts[0].tokens, (std::vector<int32_t>{1, 2, 511}));

  r = Completion(R"({"prompt": ["a", [5, 6], "b"]})");
  ASSERT_EQ(r.prompts.size(), 3u);
  EXPECT_EQ(r.prompts[0].text, "a");
  EXPECT_EQ(r.prompts[1].tokens, (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(r.prompts[2].text, "b");
}

TEST(CompletionRequest, BadPrompts) {
  EXPECT_EQ(CompletionError(R"({})").param, "prompt");
  EXPECT_EQ(CompletionError(R"({"prompt": []})").param, "prompt");
  EXPECT_EQ(CompletionError(R"({"prompt": [512]})").param, "prompt");  // id == vocab
  EXPECT_EQ(CompletionError(R"({"prompt": [-1]})").param, "prompt");
  EXPECT_EQ(CompletionError(R"({"prompt": [[]]})").param, "prompt");
  EXPECT_EQ(CompletionError(R"({"prompt": 7})").param, "prompt");
  EXPECT_EQ(CompletionError(R"({"prompt": [1.5]})").param, "prompt");
  EXPECT_EQ(CompletionError(R"({"prompt": [{"a": 1}]})").param, "prompt");
  EXPECT_EQ(CompletionError(R"([1, 2])").http_status, 400);  // body not an object
}

TEST(CompletionRequest, SamplingFields) {
  auto r = Completion(R"({"prompt": "x", "temperature": 0, "top_p": 0.5, "top_k": -1, "min_p": 0.1,
                         "seed": -1, "repetition_penalty": 1.2, "presence_penalty": -2,
                         "frequency_penalty": 2, "logit_bias": {"7": -100, "9": 3.5},
                         "max_tokens": 40, "n": 3, "priority": -5, "ignore_eos": true, "user": "u"})");
  EXPECT_EQ(r.sampling.temperature, 0.0);
  EXPECT_EQ(r.sampling.top_p, 0.5);
  EXPECT_EQ(r.sampling.top_k, 0);  // vLLM's -1 = off
  EXPECT_DOUBLE_EQ(r.sampling.min_p, 0.1);
  EXPECT_TRUE(r.has_seed);
  EXPECT_EQ(r.sampling.seed, ~uint64_t{0});  // -1 wraps to 2^64 - 1
  EXPECT_DOUBLE_EQ(r.sampling.repetition_penalty, 1.2);
  EXPECT_EQ(r.sampling.presence_penalty, -2.0);
  EXPECT_EQ(r.sampling.frequency_penalty, 2.0);
  ASSERT_EQ(r.sampling.logit_bias.size(), 2u);
  EXPECT_EQ(r.sampling.logit_bias[0], (std::pair<int32_t, float>{7, -100.0f}));
  EXPECT_EQ(r.sampling.logit_bias[1], (std::pair<int32_t, float>{9, 3.5f}));
  EXPECT_EQ(r.max_tokens.value(), 40);
  EXPECT_EQ(r.n, 3);
  EXPECT_EQ(r.priority, -5);
  EXPECT_TRUE(r.ignore_eos);
  EXPECT_EQ(r.user, "u");
  EXPECT_FALSE(Completion(R"({"prompt": "x"})").has_seed);
  // Explicit nulls mean "absent".
  auto nulls = Completion(R"({"prompt": "x", "temperature": null, "max_tokens": null, "stop": null})");
  EXPECT_EQ(nulls.sampling.temperature, 1.0);
  EXPECT_EQ(nulls.max_tokens.value(), 16);
  // Integral floats are accepted for integer fields (some clients send 16.0).
  EXPECT_EQ(Completion(R"({"prompt": "x", "max_tokens": 16.0})").max_tokens.value(), 16);
}

TEST(CompletionRequest, BadFieldsNameTheField) {
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "max_tokens": "16"})").param, "max_tokens");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "max_tokens": 0})").param, "max_tokens");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "max_tokens": 1.5})").param, "max_tokens");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "temperature": -0.1})").param, "temperature");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "temperature": "hot"})").param, "temperature");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "top_p": 0})").param, "top_p");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "top_p": 1.01})").param, "top_p");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "min_p": 2})").param, "min_p");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "n": 0})").param, "n");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "n": 1000})").param, "n");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "seed": 1.5})").param, "seed");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "stream": "yes"})").param, "stream");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "presence_penalty": 3})").param, "presence_penalty");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "repetition_penalty": 0})").param, "repetition_penalty");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "logit_bias": {"abc": 1}})").param, "logit_bias");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "logit_bias": {"600": 1}})").param, "logit_bias");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "logit_bias": {"5": 101}})").param, "logit_bias");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "logit_bias": [1]})").param, "logit_bias");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "stop": 3})").param, "stop");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "stop": [""]})").param, "stop");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "stop_token_ids": [512]})").param, "stop_token_ids");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "logprobs": 21})").param, "logprobs");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "logprobs": true})").param, "logprobs");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "stream_options": {"include_usage": true}})").param,
            "stream_options");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "prompt_logprobs": 21})").param, "prompt_logprobs");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "prompt_logprobs": -1})").param, "prompt_logprobs");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "prompt_logprobs": 1.5})").param, "prompt_logprobs");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "prompt_logprobs": 0, "stream": true})").param,
            "prompt_logprobs");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "best_of": 2})").param, "best_of");
  ApiError e = CompletionError(R"({"prompt": "x", "max_tokens": "16"})");
  EXPECT_EQ(e.http_status, 400);
  EXPECT_EQ(e.type, "invalid_request_error");
  EXPECT_NE(e.message.find("max_tokens"), std::string::npos);
}

TEST(CompletionRequest, StopAndStreamOptions) {
  auto r = Completion(R"({"prompt": "x", "stop": "\n", "stop_token_ids": [2, 3], "stream": true,
                         "stream_options": {"include_usage": true}, "logprobs": 2, "echo": false})");
  EXPECT_EQ(r.stop, (std::vector<std::string>{"\n"}));
  EXPECT_EQ(r.stop_token_ids, (std::vector<int32_t>{2, 3}));
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.logprobs, 2);
  r = Completion(R"({"prompt": "x", "stop": ["a", "bc"]})");
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "bc"}));
}

TEST(CompletionRequest, StructuredOutputFields) {
  auto r = Completion(R"({"prompt": "x", "guided_json": {"type": "object"}})");
  ASSERT_TRUE(r.structured.has_value());
  EXPECT_EQ(r.structured->kind, StructuredOutputSpec::Kind::kJsonSchema);
  EXPECT_EQ(json::parse(r.structured->text), json::parse(R"({"type": "object"})"));

  r = Completion(R"({"prompt": "x", "guided_regex": "[a-z]+"})");
  EXPECT_EQ(r.structured->kind, StructuredOutputSpec::Kind::kRegex);
  EXPECT_EQ(r.structured->text, "[a-z]+");

  r = Completion(R"({"prompt": "x", "guided_grammar": "root ::= \"a\""})");
  EXPECT_EQ(r.structured->kind, StructuredOutputSpec::Kind::kGbnf);
  r = Completion(R"({"prompt": "x", "guided_grammar": "start: \"a\""})");
  EXPECT_EQ(r.structured->kind, StructuredOutputSpec::Kind::kLark);

  r = Completion(R"({"prompt": "x", "guided_choice": ["yes", "no"]})");
  EXPECT_EQ(r.structured->kind, StructuredOutputSpec::Kind::kChoice);
  EXPECT_EQ(r.structured->choices, (std::vector<std::string>{"yes", "no"}));

  r = Completion(R"({"prompt": "x", "response_format": {"type": "json_object"}})");
  EXPECT_EQ(r.structured->kind, StructuredOutputSpec::Kind::kJsonObject);
  r = Completion(R"({"prompt": "x", "response_format": {"type": "json_schema",
                    "json_schema": {"name": "n", "schema": {"type": "integer"}}}})");
  EXPECT_EQ(r.structured->kind, StructuredOutputSpec::Kind::kJsonSchema);
  EXPECT_EQ(json::parse(r.structured->text), json::parse(R"({"type": "integer"})"));
  EXPECT_FALSE(Completion(R"({"prompt": "x", "response_format": {"type": "text"}})").structured.has_value());

  EXPECT_EQ(CompletionError(R"({"prompt": "x", "guided_choice": []})").param, "guided_choice");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "guided_regex": 5})").param, "guided_regex");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "response_format": {"type": "xml"}})").param,
            "response_format");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "response_format": {"type": "json_schema"}})").param,
            "response_format");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "guided_regex": "a", "guided_choice": ["a"]})").http_status,
            400);
}

ParsedRequest Chat(const std::string& body) {
  ParsedRequest r;
  auto e = ParseChatRequest(json::parse(body), Limits(), &r);
  EXPECT_FALSE(e.has_value()) << body << " -> " << (e ? e->message : "");
  return r;
}

TEST(ChatRequest, MessagesAndAliases) {
  auto r = Chat(R"({"messages": [{"role": "system", "content": "be brief"},
                                 {"role": "user", "content": [{"type": "text", "text": "he"},
                                                              {"type": "text", "text": "llo"}]},
                                 {"role": "assistant", "content": null}],
                   "max_completion_tokens": 7, "logprobs": true, "top_logprobs": 3})");
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[0].content, "be brief");
  EXPECT_EQ(r.messages[1].content, "he\nllo");  // text parts joined with "\n", as vLLM does
  EXPECT_FALSE(r.messages[1].content_is_null);
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_TRUE(r.messages[2].content_is_null);  // None for the template
  EXPECT_EQ(r.max_tokens.value(), 7);
  EXPECT_EQ(r.logprobs, 3);
  EXPECT_EQ(r.api, ParsedRequest::Api::kChat);

  r = Chat(R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true})");
  EXPECT_EQ(r.logprobs, 0);
  EXPECT_FALSE(r.max_tokens.has_value());  // the rest of the context, decided after tokenizing
  r = Chat(R"({"messages": [{"role": "user", "content": "x"}], "logprobs": false})");
  EXPECT_EQ(r.logprobs, -1);
}

TEST(ChatRequest, BadMessages) {
  EXPECT_EQ(ChatError(R"({})").param, "messages");
  EXPECT_EQ(ChatError(R"({"messages": []})").param, "messages");
  EXPECT_EQ(ChatError(R"({"messages": "hi"})").param, "messages");
  EXPECT_EQ(ChatError(R"({"messages": [{"content": "x"}]})").param, "messages");
  EXPECT_EQ(ChatError(R"({"messages": [{"role": "wizard", "content": "x"}]})").param, "messages");
  EXPECT_EQ(ChatError(R"({"messages": [{"role": "user", "content": 5}]})").param, "messages");
  EXPECT_EQ(ChatError(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})").param,
            "messages");
  EXPECT_EQ(ChatError(R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})").param,
            "top_logprobs");
  EXPECT_EQ(ChatError(R"({"messages": [{"role": "user", "content": "x"}], "logprobs": 2})").param,
            "logprobs");
  EXPECT_EQ(
      ChatError(R"({"messages": [{"role": "user", "content": "x"}], "max_completion_tokens": -1})").param,
      "max_completion_tokens");
}

TEST(ChatRequest, MessageFieldsKeepTheirOrder) {
  auto r = Chat(R"({"messages": [{"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                     "function": {"name": "f", "arguments": "{}"}}], "zeta": 1, "content": null},
                                 {"role": "tool", "tool_call_id": "c1", "name": "f", "content": "ok"}]})");
  ASSERT_EQ(r.messages.size(), 2u);
  std::vector<std::string> keys;
  for (auto it = r.messages[0].fields.begin(); it != r.messages[0].fields.end(); ++it)
    keys.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"tool_calls", "zeta"}));
  EXPECT_EQ(r.messages[1].fields["tool_call_id"], "c1");
  EXPECT_EQ(r.messages[1].fields["name"], "f");
  EXPECT_EQ(ChatError(R"({"messages": [{"role": "tool", "tool_call_id": 5, "content": "x"}]})").param,
            "messages");
  EXPECT_EQ(ChatError(R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {}}]}]})").param,
            "messages");
}

TEST(ChatRequest, TemplateInputs) {
  auto r = Chat(R"({"messages": [{"role": "user", "content": "x"}], "add_generation_prompt": false,
                    "documents": [{"text": "d"}], "chat_template_kwargs": {"enable_thinking": false}})");
  EXPECT_FALSE(r.chat.add_generation_prompt);
  EXPECT_EQ(r.chat.documents.size(), 1u);
  EXPECT_EQ(r.chat.variables["enable_thinking"], false);
  r = Chat(R"({"messages": [{"role": "user", "content": "x"}], "continue_final_message": true})");
  EXPECT_TRUE(r.chat.continue_final_message);
  EXPECT_FALSE(r.chat.add_generation_prompt);
  const char* base = R"({"messages": [{"role": "user", "content": "x"}], )";
  EXPECT_EQ(ChatError(std::string(base) + R"("continue_final_message": true, "add_generation_prompt": true})")
                .param,
            "continue_final_message");
  EXPECT_EQ(ChatError(std::string(base) + R"("documents": "d"})").param, "documents");
  EXPECT_EQ(ChatError(std::string(base) + R"("chat_template_kwargs": {"tools": []}})").param,
            "chat_template_kwargs");
}

TEST(ChatRequest, Tools) {
  const std::string tools =
      R"("tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
         "properties": {"zeta": {"type": "integer"}, "alpha": {"type": "string"}}}}},
                   {"type": "function", "function": {"name": "g"}}])";
  const std::string base = R"({"messages": [{"role": "user", "content": "x"}], )";
  auto r = Chat(base + tools + "}");
  ASSERT_EQ(r.tools.size(), 2u);
  EXPECT_EQ(r.tool_choice.mode, ToolChoice::Mode::kAuto);                // the default with tools
  EXPECT_EQ(r.tools[0].parameters["properties"].begin().key(), "zeta");  // order as sent
  EXPECT_EQ(r.tools[1].parameters, nlohmann::ordered_json::object());
  EXPECT_TRUE(r.chat.tools.is_array());
  EXPECT_TRUE(r.parallel_tool_calls);
  r = Chat(base + tools + R"(, "tool_choice": "required", "parallel_tool_calls": false})");
  EXPECT_EQ(r.tool_choice.mode, ToolChoice::Mode::kRequired);
  EXPECT_FALSE(r.parallel_tool_calls);
  r = Chat(base + tools + R"(, "tool_choice": {"type": "function", "function": {"name": "g"}}})");
  EXPECT_EQ(r.tool_choice.mode, ToolChoice::Mode::kNamed);
  EXPECT_EQ(r.tool_choice.name, "g");
  r = Chat(base + R"("tool_choice": "none"})");
  EXPECT_EQ(r.tool_choice.mode, ToolChoice::Mode::kNone);
  for (const char* bad : {R"("bogus")", R"({"type": "function", "function": {"name": "nope"}})", "5",
                          R"({"type": "function"})"}) {
    EXPECT_EQ(ChatError(base + tools + R"(, "tool_choice": )" + bad + "}").param, "tool_choice") << bad;
  }
  EXPECT_EQ(ChatError(base + R"("tool_choice": "required"})").param, "tool_choice");
  EXPECT_EQ(ChatError(base + R"("tools": [{"type": "function", "function": {"name": "f"}},
                                          {"type": "function", "function": {"name": "f"}}]})")
                .param,
            "tools");
  EXPECT_EQ(ChatError(base + R"("tools": [{"type": "retrieval"}]})").param, "tools");
}

TEST(RequestFields, UnsupportedFieldsAreNamed) {
  const std::string base = R"({"messages": [{"role": "user", "content": "x"}], )";
  for (const char* field : {"suffix", "reasoning_effort", "use_beam_search", "bad_words"}) {
    EXPECT_EQ(ChatError(base + "\"" + field + "\": 1}").param, field);
  }
  EXPECT_EQ(ChatError(base + R"("skip_special_tokens": false})").param, "skip_special_tokens");
  Chat(base + R"("skip_special_tokens": true, "use_beam_search": false, "suffix": null, "brand_new": 1})");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "suffix": "y"})").param, "suffix");
  auto r = Chat(base + R"("min_tokens": 4, "add_special_tokens": true, "echo": true})");
  EXPECT_EQ(r.min_tokens, 4);
  EXPECT_EQ(r.add_special_tokens, true);
  EXPECT_TRUE(r.echo);
  EXPECT_EQ(ChatError(base + R"("min_tokens": -1})").param, "min_tokens");
}

TEST(RequestFields, PromptLogprobs) {
  const std::string base = R"({"messages": [{"role": "user", "content": "x"}], )";
  EXPECT_EQ(Chat(base + R"("prompt_logprobs": 20})").prompt_logprobs, 20);
  EXPECT_EQ(Chat(base + R"("prompt_logprobs": null})").prompt_logprobs, -1);
  EXPECT_EQ(ChatError(base + R"("prompt_logprobs": 21})").param, "prompt_logprobs");
  EXPECT_EQ(ChatError(base + R"("prompt_logprobs": 2, "stream": true})").param, "prompt_logprobs");
  auto r = Completion(R"({"prompt": "x", "prompt_logprobs": 0, "echo": true, "logprobs": 3})");
  EXPECT_EQ(r.prompt_logprobs, 0);
  EXPECT_TRUE(r.echo);
  EXPECT_EQ(r.logprobs, 3);
  EXPECT_EQ(Completion(R"({"prompt": "x"})").prompt_logprobs, -1);
}

TEST(RequestFields, SchemaObjectsKeepPropertyOrder) {
  auto r = Chat(R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema",
      "json_schema": {"name": "o", "schema": {"type": "object", "properties": {"zeta": {}, "alpha": {}, "mid": {}}}}}})");
  ASSERT_TRUE(r.structured.has_value());
  const std::string& text = r.structured->text;
  EXPECT_LT(text.find("zeta"), text.find("alpha"));
  EXPECT_LT(text.find("alpha"), text.find("mid"));
}

}  // namespace
}  // namespace deepinfer::server
