// HttpServer: HTTP/1.1 on Boost.Beast for an ApiService. Asynchronous, a few
// I/O threads, keep-alive; streaming responses use chunked transfer coding.
//
// Per connection: read a request (header first, so an oversized
// Content-Length is refused with 413 before its body is read, and
// "Expect: 100-continue" is answered), hand it to the service, and while the
// response is in progress keep a read pending on the socket: EOF or a reset
// then means the client left, and the response's disconnect handler runs
// (the job aborts its engine requests). A failed write does the same.
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

namespace deepinfer::server {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;  // 0: any free port (see HttpServer::port)
  int io_threads = 4;
  int64_t max_body_bytes = 16 << 20;       // larger bodies: 413
  std::chrono::seconds idle_timeout{300};  // an idle keep-alive connection is closed after this
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
