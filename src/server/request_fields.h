// Field readers shared by the completion and chat request parsers: each reads
// one optional field of a JSON object with a type and range check, and
// returns a 400 ApiError naming the field when it is wrong. Absent or null
// fields leave *out untouched.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "server/parsed_request.h"

namespace deepinfer::server::fields {

using json = nlohmann::ordered_json;
using MaybeError = std::optional<ApiError>;

// The field's value, or null when absent / null.
const json* Find(const json& body, const char* name);

MaybeError Bool(const json& body, const char* name, bool* out);
MaybeError Int(const json& body, const char* name, int64_t lo, int64_t hi, int64_t* out);
MaybeError Number(const json& body, const char* name, double lo, double hi, double* out);
MaybeError String(const json& body, const char* name, std::string* out);

// The fields both APIs share: n, stream, stream_options, sampling, penalties,
// logit_bias, seed, stop, stop_token_ids, ignore_eos, priority, user, model,
// guided_* and response_format.
MaybeError ParseCommonFields(const json& body, const RequestLimits& limits, ParsedRequest* out);

// Fields vLLM or OpenAI define that this server does not implement: a 400
// naming the first one present (not null). Any other field outside `known`
// (and the common fields) is logged as a warning once per request.
MaybeError CheckFieldNames(const json& body, std::initializer_list<const char*> known,
                           std::initializer_list<const char*> unsupported);

// prompt_logprobs (both APIs, after ParseCommonFields): an integer in
// [0, max_logprobs]; with stream a 400 (as vLLM refuses it there).
MaybeError PromptLogprobs(const json& body, const RequestLimits& limits, ParsedRequest* out);

// The chat-only parts: tools, tool_choice, parallel_tool_calls.
MaybeError ParseTools(const json& body, ParsedRequest* out);

}  // namespace deepinfer::server::fields
