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

using json = nlohmann::json;
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

}  // namespace deepinfer::server::fields
