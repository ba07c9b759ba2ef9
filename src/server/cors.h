// CORS (`deepinfer serve --allowed-origins`): which browser origins may call
// the API, and the Access-Control-* header lines that say so.
//
// Default: no origin is allowed, so responses carry no Access-Control-*
// header and browsers keep pages of other origins from reading them. An
// allowed origin is echoed in Access-Control-Allow-Origin (with
// "Vary: Origin"); "*" allows every origin. A preflight (OPTIONS with
// Access-Control-Request-Method) from an allowed origin gets 204 with the
// methods and the requested headers allowed; from another origin, 403.
//
// Thread-safety: immutable after construction.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace deepinfer::server {

class CorsPolicy {
 public:
  CorsPolicy() = default;
  explicit CorsPolicy(std::vector<std::string> allowed_origins);

  bool enabled() const { return !allowed_.empty(); }
  bool Allows(std::string_view origin) const;
  // "Name: value\r\n" lines for a response to a request with this Origin
  // header ("" when absent or not allowed).
  std::string ResponseHeaders(std::string_view origin) const;
  // The header lines of a 204 answer to an allowed preflight.
  // `requested_headers`: its Access-Control-Request-Headers.
  std::string PreflightHeaders(std::string_view origin, std::string_view requested_headers) const;

 private:
  std::vector<std::string> allowed_;
  bool any_ = false;
};

// "a, b,c" -> {"a", "b", "c"} (--allowed-origins takes a comma-separated list).
std::vector<std::string> SplitOriginList(std::string_view list);

}  // namespace deepinfer::server
