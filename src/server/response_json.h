// Response bodies of the OpenAI API: full responses, streaming chunks, usage,
// and both logprobs formats (completions: tokens / token_logprobs /
// top_logprobs / text_offset; chat: content[{token, logprob, bytes,
// top_logprobs}]). Pure functions of their inputs.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "server/parsed_request.h"
#include "server/tool_parsers/tool_call_parser.h"

namespace deepinfer::server {

using json = nlohmann::json;

// The text a token id contributes (its raw bytes; may be a partial UTF-8
// sequence, replaced with U+FFFD when serialized).
using TokenTextFn = std::function<std::string(int32_t)>;

struct ResponseContext {
  ParsedRequest::Api api = ParsedRequest::Api::kCompletion;
  std::string id;     // "cmpl-..." / "chatcmpl-..."
  std::string model;  // served model name
  int64_t created = 0;
};

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
};

struct ChoiceResult {
  int32_t index = 0;
  std::string text;                    // chat: the content
  std::string reasoning;               // chat: reasoning_content (a reasoning parser split it off)
  json tool_calls = json::array();     // chat: OpenAI tool_calls objects (ToolCallJson)
  std::string finish_reason;           // "stop", "length", "abort", "tool_calls"
  std::vector<TokenLogprob> logprobs;  // when requested
  bool want_logprobs = false;
  // prompt_logprobs (-1: not requested) and completions echo + logprobs
  // (echo_logprobs: its top count, -1: not both): the prompt's entries from
  // its second token on (GenerationEvent::prompt_logprobs) and its first token.
  int32_t prompt_logprobs = -1;
  int32_t echo_logprobs = -1;
  int32_t first_prompt_token = -1;
  std::vector<RankedTokenLogprob> prompt_entries;
};

// Completions echo with logprobs: the prompt's tokens lead the logprobs
// (the first with null logprob and top_logprobs), top lists cut to top_k.
struct EchoLogprobs {
  int32_t first_token = -1;
  const std::vector<RankedTokenLogprob>* prompt = nullptr;
  int32_t top_k = 0;
};

// Serializes with invalid UTF-8 replaced (never throws).
std::string Dump(const json& j);
// "data: <json>\n\n" and the terminator.
std::string SseEvent(const json& j);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

json UsageJson(const Usage& usage);
// text_offset starts at `text_offset` (the choice's text length so far).
json CompletionLogprobsJson(const std::vector<TokenLogprob>& lps, const TokenTextFn& token_text,
                            int64_t text_offset, const EchoLogprobs* echo = nullptr);
// vLLM's prompt_logprobs: [null, {"<id>": {logprob, rank, decoded_token}, ...}, ...]
// — per prompt token after the first, the token itself then the top_k.
json PromptLogprobsJson(const std::vector<RankedTokenLogprob>& entries, int32_t top_k,
                        const TokenTextFn& token_text);
json ChatLogprobsJson(const std::vector<TokenLogprob>& lps, const TokenTextFn& token_text);

// A full (non-streaming) response.
json FullResponseJson(const ResponseContext& ctx, const std::vector<ChoiceResult>& choices,
                      const Usage& usage, const TokenTextFn& token_text);

// One streaming chunk for choice `index`. finish_reason "" = null.
// Completions: `text`. Chat: `delta` (built by ChatDelta).
json CompletionChunkJson(const ResponseContext& ctx, int32_t index, const std::string& text, json logprobs,
                         const std::string& finish_reason);
json ChatChunkJson(const ResponseContext& ctx, int32_t index, json delta, json logprobs,
                   const std::string& finish_reason);
// {"role": "assistant", "content": ...} when first, else {"content": ...};
// {} when there is neither role nor text.
json ChatDelta(bool first, const std::string& text);
// {"id", "type": "function", "function": {"name", "arguments"}}; with
// index >= 0 also "index" (a stream delta's entry).
json ToolCallJson(const std::string& id, const ParsedToolCall& call, int64_t index = -1);
// The include_usage chunk: no choices, usage set.
json UsageChunkJson(const ResponseContext& ctx, const Usage& usage);

}  // namespace deepinfer::server
