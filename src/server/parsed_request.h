// ParsedRequest: a validated /v1/completions or /v1/chat/completions body, in
// engine terms (token-free: tokenization happens in ApiService).
//
// Parsing never throws and never trusts the JSON's types: every field is
// type- and range-checked, and a bad one yields a 400 ApiError naming it.
// null counts as absent (clients send explicit nulls for unset options).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "grammar/structured_output.h"
#include "sampling/sampler.h"
#include "server/api_error.h"
#include "tokenizer/chat_template.h"

namespace deepinfer::server {

struct PromptInput {
  bool is_tokens = false;
  std::string text;             // !is_tokens
  std::vector<int32_t> tokens;  // is_tokens
};

// One entry of `tools` ({"type": "function", "function": {...}}).
// nlohmann::json's members make the implicit moves noexcept(false); nothing
// throws there.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct ToolFunction {
  std::string name;
  nlohmann::ordered_json parameters;  // a JSON Schema object ({} when absent), key order as sent
  bool strict = false;                // function.strict: a forced call refuses what it cannot enforce
};

// tool_choice: "auto" (default with tools), "none" (default without),
// "required", or {"type": "function", "function": {"name": NAME}}.
struct ToolChoice {
  enum class Mode { kNone, kAuto, kRequired, kNamed };
  Mode mode = Mode::kNone;
  std::string name;  // kNamed
};

// nlohmann::json's members make the implicit moves noexcept(false); nothing
// throws there.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct ParsedRequest {
  enum class Api { kCompletion, kChat };
  Api api = Api::kCompletion;
  std::string model;                  // as sent ("" if absent)
  std::vector<PromptInput> prompts;   // completions: one or more
  std::vector<ChatMessage> messages;  // chat
  // Chat: what the template gets besides the messages (tools, documents,
  // chat_template_kwargs, add_generation_prompt, continue_final_message);
  // ApiService's renderer adds the special tokens.
  ChatRenderOptions chat;
  std::vector<ToolFunction> tools;  // chat `tools`
  ToolChoice tool_choice;
  bool parallel_tool_calls = true;
  // Tokens before end-of-generation (EOS, stop_token_ids) may end the
  // request; stop strings still apply. 0 = none.
  int32_t min_tokens = 0;
  // Add the tokenizer's BOS/EOS when tokenizing the prompt. Unset: yes for
  // completions, no for chat (the template writes its own; vLLM's defaults).
  std::optional<bool> add_special_tokens;
  int32_t n = 1;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  bool echo = false;           // completions: the prompt; chat: a final assistant message's content
  // -1: none. Completions: `logprobs` (top count). Chat: `top_logprobs` when
  // `logprobs` is true (0 if top_logprobs is absent).
  int32_t logprobs = -1;
  // vLLM's prompt_logprobs: -1 none, else the top count (<= max_logprobs);
  // refused with stream.
  int32_t prompt_logprobs = -1;
  std::optional<int32_t> max_tokens;  // max_tokens / max_completion_tokens
  SamplingParams sampling;
  bool has_seed = false;
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  int32_t priority = 0;
  std::optional<StructuredOutputSpec> structured;
  std::string structured_field;  // the field that set `structured` (errors and warnings name it)
  std::string user;
};

struct RequestLimits {
  int64_t vocab_size = 0;  // token ids (prompt, stop_token_ids, logit_bias) must be below it
  int32_t max_n = 128;
  int32_t max_logprobs = 20;
  int32_t max_stop_strings = 16;
};

// True when brackets nest deeper than `limit` (strings skipped). Run before
// parsing a body, it bounds the JSON parser's and the value destructor's
// recursion.
bool JsonNestsDeeperThan(std::string_view text, int limit);

// Each returns nullopt and fills *out on success.
// Bodies are parsed as ordered_json, so schemas (response_format,
// guided_json, tool parameters) keep their property order.
std::optional<ApiError> ParseCompletionRequest(const nlohmann::ordered_json& body,
                                               const RequestLimits& limits, ParsedRequest* out);
std::optional<ApiError> ParseChatRequest(const nlohmann::ordered_json& body, const RequestLimits& limits,
                                         ParsedRequest* out);

}  // namespace deepinfer::server
