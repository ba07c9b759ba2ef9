// ResponseWriter: how request handling talks back to one HTTP exchange,
// without knowing sockets. Either one SendResponse, or BeginStream, any
// number of SendStreamData, then EndStream.
//
// Thread-safety: every method may be called from any thread (engine output
// thread, I/O threads); the implementation serializes writes in call order.
// After the client went away, writes are dropped silently.
#pragma once

#include <functional>
#include <string>

namespace deepinfer::server {

class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;
  virtual void SendResponse(int http_status, std::string content_type, std::string body) = 0;
  // 200, Content-Type: text/event-stream.
  virtual void BeginStream() = 0;
  virtual void SendStreamData(std::string data) = 0;
  virtual void EndStream() = 0;
  // `handler` runs once if the client disconnects before the response ended
  // (immediately, if that already happened). It must not block.
  virtual void SetDisconnectHandler(std::function<void()> handler) = 0;
};

}  // namespace deepinfer::server
