#include "server/cors.h"

#include <algorithm>

namespace deepinfer::server {
namespace {

// A header value copied into a response must not be able to end the line.
bool IsSafeHeaderValue(std::string_view v) {
  return std::none_of(v.begin(), v.end(), [](char c) { return c == '\r' || c == '\n' || c == '\0'; });
}

}  // namespace

CorsPolicy::CorsPolicy(std::vector<std::string> allowed_origins) : allowed_(std::move(allowed_origins)) {
  any_ = std::find(allowed_.begin(), allowed_.end(), "*") != allowed_.end();
}

bool CorsPolicy::Allows(std::string_view origin) const {
  if (origin.empty() || !IsSafeHeaderValue(origin)) return false;
  return any_ || std::find(allowed_.begin(), allowed_.end(), origin) != allowed_.end();
}

std::string CorsPolicy::ResponseHeaders(std::string_view origin) const {
  if (!Allows(origin)) return "";
  return "Access-Control-Allow-Origin: " + std::string(origin) + "\r\nVary: Origin\r\n";
}

std::string CorsPolicy::PreflightHeaders(std::string_view origin, std::string_view requested_headers) const {
  std::string out = ResponseHeaders(origin);
  out += "Access-Control-Allow-Methods: GET, POST, OPTIONS\r\n";
  // The headers a client of this API sends; a browser asks for the ones it
  // will send, which are allowed as asked (they only reach the API's own
  // checks, which read Authorization and Content-Type).
  std::string headers = "Authorization, Content-Type";
  if (!requested_headers.empty() && IsSafeHeaderValue(requested_headers))
    headers = std::string(requested_headers);
  out += "Access-Control-Allow-Headers: " + headers + "\r\n";
  out += "Access-Control-Max-Age: 600\r\n";
  return out;
}

std::vector<std::string> SplitOriginList(std::string_view list) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= list.size()) {
    size_t end = list.find(',', begin);
    if (end == std::string_view::npos) end = list.size();
    std::string_view item = list.substr(begin, end - begin);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    begin = end + 1;
  }
  return out;
}

}  // namespace deepinfer::server
