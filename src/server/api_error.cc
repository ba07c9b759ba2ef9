#include "server/api_error.h"

#include <nlohmann/json.hpp>

namespace deepinfer::server {

std::string ApiError::ToJson() const {
  nlohmann::json error = {{"message", message},
                          {"type", type},
                          {"param", param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param)},
                          {"code", code.empty() ? nlohmann::json(nullptr) : nlohmann::json(code)}};
  // The message may quote user bytes: never throw on invalid UTF-8.
  return nlohmann::json{{"error", error}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ApiError BadRequest(std::string message, std::string param) {
  ApiError e;
  e.http_status = 400;
  e.message = std::move(message);
  e.param = std::move(param);
  return e;
}

ApiError ApiErrorFromStatus(const Status& status, std::string param) {
  ApiError e;
  e.message = status.message();
  e.param = std::move(param);
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kNotFound:
      e.http_status = 400;
      break;
    case StatusCode::kUnimplemented:
      e.http_status = 400;
      e.code = "unsupported";
      break;
    case StatusCode::kResourceExhausted:
      e.http_status = 429;
      e.type = "rate_limit_error";
      break;
    case StatusCode::kUnavailable:
      e.http_status = 503;
      e.type = "service_unavailable";
      break;
    default:
      e.http_status = 500;
      e.type = "server_error";
      break;
  }
  return e;
}

ApiError RequestContentError(const Status& status, std::string param) {
  ApiError e = ApiErrorFromStatus(status, std::move(param));
  if (status.code() == StatusCode::kInternal) return e;
  e.http_status = 400;
  e.type = "invalid_request_error";
  if (status.code() == StatusCode::kResourceExhausted) e.code = "limit_exceeded";
  return e;
}

}  // namespace deepinfer::server
