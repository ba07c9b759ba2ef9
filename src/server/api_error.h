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

// Maps an engine / tokenizer Status to the HTTP status the API contract gives:
// InvalidArgument / OutOfRange -> 400, ResourceExhausted -> 429,
// Unavailable -> 503, Unimplemented -> 501, anything else -> 500.
ApiError ApiErrorFromStatus(const Status& status, std::string param = "");

}  // namespace deepinfer::server
