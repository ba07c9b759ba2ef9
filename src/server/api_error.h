// ApiError: an OpenAI-style error response, {"error": {"message", "type",
// "param", "code"}}, with its HTTP status.
#pragma once

#include <string>

#include "core/status.h"

namespace deepinfer::server {

struct ApiError {
  int http_status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the offending request field, "" if none
  std::string code;   // machine-readable detail, "" if none

  std::string ToJson() const;
};

// 400 invalid_request_error naming `param`.
ApiError BadRequest(std::string message, std::string param = "");

// Maps an engine Status to the HTTP status the API contract gives:
// InvalidArgument / OutOfRange / NotFound / Unimplemented -> 400 (a request
// that asks for what this server does not support is the client's to change,
// and clients retry 5xx), ResourceExhausted -> 429 (load: the waiting queue
// is full), Unavailable -> 503, anything else -> 500.
ApiError ApiErrorFromStatus(const Status& status, std::string param = "");

// A Status about the request's own content (a constraint that does not
// compile, is unsupported or exceeds a compile budget; a chat template that
// fails on these messages; a prompt that does not tokenize): the same
// request would fail again, so every code is 400 except Internal (500). ResourceExhausted here is a
// per-request budget, never load.
ApiError RequestContentError(const Status& status, std::string param = "");

}  // namespace deepinfer::server
