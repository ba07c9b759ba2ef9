// HttpServer: HTTP/1.1 (and 1.0) on Boost.Beast for an ApiService.
// Asynchronous, a few I/O threads, keep-alive; streaming responses use chunked
// transfer coding, or, for an HTTP/1.0 client, a close-delimited body.
//
// Per connection: wait up to idle_timeout for a request's first byte, then
// read its header within header_timeout (408 otherwise). The header alone is
// checked first: routing and the API key (ApiService::CheckBeforeBody), an
// oversized Content-Length (413), so a client that may not send a body never
// gets one buffered; "Expect: 100-continue" is answered after that. The body
// must arrive within body_timeout (408). While the response is in progress a
// read stays pending on the socket in every state: EOF or a reset then means
// the client left and the response's disconnect handler runs (the job aborts
// its engine requests); bytes it sends meanwhile (a pipelined request) are
// kept for the next exchange, up to one request's worth. A failed write does
// the same. More than max_connections open connections: the new one gets 503
// and is closed. When accept fails for lack of descriptors (EMFILE), the
// listener pauses briefly instead of spinning.
//
// CORS (options.cors): every response to a request whose Origin is allowed,
// refusals and streams included, carries Access-Control-Allow-Origin; an
// OPTIONS preflight is answered here (204, or 403 for an origin not
// allowed), before routing and the API key, as browsers send no credentials
// with it.
//
// Thread-safety: Start / StopAccepting / WaitIdle / Stop from one control
// thread. The service must outlive the server.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "server/api_service.h"
#include "server/cors.h"

namespace deepinfer::server {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;  // 0: any free port (see HttpServer::port)
  int io_threads = 4;
  int64_t max_body_bytes = 16 << 20;        // larger bodies: 413
  int64_t max_header_bytes = 64 << 10;      // larger headers: 431
  int64_t max_connections = 1024;           // open connections beyond this: 503 and close
  std::chrono::seconds idle_timeout{300};   // a keep-alive connection with no request is closed after this
  std::chrono::seconds header_timeout{10};  // from a request's first byte to its header's end: else 408
  std::chrono::seconds body_timeout{30};    // from the header's end to the body's end: else 408
  CorsPolicy cors;                          // --allowed-origins; default: no origin (server/cors.h)
};

class HttpServer {
 public:
  HttpServer(ApiService& service, HttpServerOptions options);
  ~HttpServer();  // Stop()

  // Binds, listens and starts the I/O threads. InvalidArgument for a bad
  // host, Unavailable when the address cannot be bound.
  Status Start();
  uint16_t port() const { return bound_port_; }

  void StopAccepting();
  // Blocks until no response is in progress, or the timeout passed (false).
  bool WaitIdle(std::chrono::milliseconds timeout);
  // Closes every connection and joins the I/O threads.
  void Stop();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  uint16_t bound_port_ = 0;
};

}  // namespace deepinfer::server
