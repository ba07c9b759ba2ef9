// CapturingWriter: a ResponseWriter that records what the service wrote, for
// tests that drive ApiService without sockets.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/response_writer.h"

namespace deepinfer::server::testing {

class CapturingWriter : public ResponseWriter {
 public:
  void SendResponse(int http_status, std::string content_type, std::string body) override {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = http_status;
    content_type_ = content_type;
    body_ = std::move(body);
    ++ends_;
    cv_.notify_all();
  }
  void BeginStream() override {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = 200;
    streaming_ = true;
  }
  void SendStreamData(std::string data) override {
    std::lock_guard<std::mutex> lock(mu_);
    body_ += data;
  }
  void EndStream() override {
    std::lock_guard<std::mutex> lock(mu_);
    ++ends_;
    cv_.notify_all();
  }
  void SetDisconnectHandler(std::function<void()> handler) override {
    std::lock_guard<std::mutex> lock(mu_);
    handler_ = std::move(handler);
  }
  void Disconnect() {
    std::function<void()> h;
    {
      std::lock_guard<std::mutex> lock(mu_);
      h.swap(handler_);
    }
    if (h) h();
  }

  // Waits (5 s at most) for the response to end; false on timeout.
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(5), [&] { return ends_ > 0; });
  }
  int status() const {
    std::lock_guard<std::mutex> l(mu_);
    return status_;
  }
  int ends() const {
    std::lock_guard<std::mutex> l(mu_);
    return ends_;
  }
  bool streaming() const {
    std::lock_guard<std::mutex> l(mu_);
    return streaming_;
  }
  std::string body() const {
    std::lock_guard<std::mutex> l(mu_);
    return body_;
  }
  nlohmann::json json() const { return nlohmann::json::parse(body()); }
  // The SSE payloads ("data: X\n\n" -> X), in order.
  std::vector<std::string> Events() const {
    std::vector<std::string> out;
    std::string b = body();
    size_t pos = 0;
    while (pos < b.size()) {
      size_t end = b.find("\n\n", pos);
      if (end == std::string::npos || b.compare(pos, 6, "data: ") != 0) {
        out.push_back("<malformed>");
        break;
      }
      out.push_back(b.substr(pos + 6, end - pos - 6));
      pos = end + 2;
    }
    return out;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int status_ = 0;
  int ends_ = 0;
  bool streaming_ = false;
  std::string content_type_, body_;
  std::function<void()> handler_;
};

}  // namespace deepinfer::server::testing
