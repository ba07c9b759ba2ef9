// libFuzzer: one HTTP request as a client may send it -> what the server
// reads from it: Beast's request parser with the server's header and body
// limits, then (for a complete request) the nesting guard, the JSON parse
// and both OpenAI request parsers (completions and chat), as ApiService
// runs them. Must never crash, hang or throw; a parsed request's fields obey
// the documented limits.
#include <utility>  // before Asio: 1.74's awaitable.hpp uses std::exchange without it

#include <cstdint>
#include <string>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "server/parsed_request.h"

namespace {

namespace http = boost::beast::http;
using namespace deepinfer::server;

constexpr int kMaxJsonDepth = 128;  // as ApiService

void CheckParsed(const ParsedRequest& r, const RequestLimits& limits) {
  bool ok = r.n >= 1 && r.n <= limits.max_n && r.logprobs <= limits.max_logprobs &&
            static_cast<int64_t>(r.stop.size()) <= limits.max_stop_strings;
  for (const PromptInput& p : r.prompts) {
    for (int32_t t : p.tokens) ok = ok && t >= 0 && t < limits.vocab_size;
  }
  for (int32_t t : r.stop_token_ids) ok = ok && t >= 0 && t < limits.vocab_size;
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  http::request_parser<http::string_body> parser;
  parser.eager(true);
  parser.header_limit(64 * 1024);
  parser.body_limit(1 << 20);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(data, size), ec);
  if (ec || !parser.is_done()) return 0;
  const std::string& body = parser.get().body();
  (void)parser.get().method_string();
  (void)parser.get().target();
  (void)parser.get().keep_alive();
  (void)parser.get()[http::field::authorization];
  if (JsonNestsDeeperThan(body, kMaxJsonDepth)) return 0;
  nlohmann::json parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return 0;
  RequestLimits limits;
  limits.vocab_size = 512;
  ParsedRequest completion, chat;
  if (!ParseCompletionRequest(parsed, limits, &completion)) CheckParsed(completion, limits);
  if (!ParseChatRequest(parsed, limits, &chat)) CheckParsed(chat, limits);
  return 0;
}
