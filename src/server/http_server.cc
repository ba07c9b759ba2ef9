#include "server/http_server.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace deepinfer::server {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using error_code = beast::error_code;

std::string StatusLine(int status) {
  std::string reason(http::obsolete_reason(static_cast<http::status>(status)));
  if (reason.empty() || reason == "<unknown-status>") reason = "Status";
  return "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\n";
}

std::string FullResponse(int status, const std::string& content_type, const std::string& body,
                         bool keep_alive) {
  std::string out = StatusLine(status);
  out += "Server: deepinfer\r\nContent-Type: " + content_type +
         "\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: " + (keep_alive ? "keep-alive" : "close") + "\r\n\r\n";
  out += body;
  return out;
}

std::string ChunkFrame(const std::string& data) {
  char size[24];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return size + data + "\r\n";
}

class HttpSession;

// Counts responses in progress, for the drain on shutdown.
struct ActivityCounter {
  std::mutex mu;
  std::condition_variable idle;
  int64_t active = 0;
  void Add(int64_t delta) {
    std::lock_guard<std::mutex> lock(mu);
    active += delta;
    if (active == 0) idle.notify_all();
  }
};

// ResponseWriter for one exchange of an HttpSession: every call is posted to
// the session's strand, in call order.
class SessionWriter : public ResponseWriter {
 public:
  explicit SessionWriter(std::shared_ptr<HttpSession> session) : session_(std::move(session)) {}
  void SendResponse(int http_status, std::string content_type, std::string body) override;
  void BeginStream() override;
  void SendStreamData(std::string data) override;
  void EndStream() override;
  void SetDisconnectHandler(std::function<void()> handler) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (disconnected_) {
      lock.unlock();
      handler();
      return;
    }
    handler_ = std::move(handler);
  }
  // On the strand, when the client left before the response ended.
  void NotifyDisconnect() {
    std::function<void()> handler;
    {
      std::lock_guard<std::mutex> lock(mu_);
      disconnected_ = true;
      handler.swap(handler_);
    }
    if (handler) handler();
  }
  // The response ended (or the client left, or the server stopped): drop the
  // handler, which references the job, and the session. The job may live on
  // in the engine after the server and its io_context are gone; a session kept
  // alive by it would touch the destroyed io_context when it is finally freed.
  void Release() {
    std::shared_ptr<HttpSession> session;
    std::lock_guard<std::mutex> lock(mu_);
    handler_ = nullptr;
    ended_ = true;
    session.swap(session_);
  }

 private:
  void Post(std::string bytes, bool ends_response);

  std::shared_ptr<HttpSession> session_;
  std::mutex mu_;
  std::function<void()> handler_;
  bool disconnected_ = false;
  bool ended_ = false;  // the final bytes were queued
  bool keep_alive_ = true;
  friend class HttpSession;
};

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(tcp::socket socket, ApiService& service, const HttpServerOptions& options,
              ActivityCounter& activity)
      : stream_(std::move(socket)), service_(service), options_(options), activity_(activity) {}

  void Run() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->ReadHeader(); });
  }

  // Strand only. `ends_response`: after these bytes the exchange is complete.
  void QueueWrite(std::string bytes, bool ends_response) {
    if (closed_) return;
    queue_.push_back({std::move(bytes), ends_response});
    if (!writing_) WriteNext();
  }

  net::any_io_executor StrandExecutor() { return stream_.get_executor(); }

  // After the I/O threads stopped: drop the writer, which holds this session
  // (the cycle is otherwise broken only when the response ends).
  void ReleaseAfterStop() {
    if (writer_) writer_->Release();
    writer_.reset();
  }

 private:
  struct Pending {
    std::string bytes;
    bool ends_response;
  };

  void ReadHeader() {
    if (closed_) return;
    parser_.emplace();
    parser_->body_limit(static_cast<uint64_t>(options_.max_body_bytes));
    parser_->header_limit(64 * 1024);
    stream_.expires_after(options_.idle_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(error_code ec) {
    if (ec) return OnReadError(ec);
    auto& req = parser_->get();
    if (auto len = parser_->content_length(); len && *len > static_cast<uint64_t>(options_.max_body_bytes)) {
      return RefuseAndClose(
          413, "the request body is larger than " + std::to_string(options_.max_body_bytes) + " bytes");
    }
    auto expect = req[http::field::expect];
    if (beast::iequals(expect, "100-continue")) {
      auto interim = std::make_shared<std::string>("HTTP/1.1 100 Continue\r\n\r\n");
      net::async_write(stream_, net::buffer(*interim),
                       [self = shared_from_this(), interim](error_code wec, size_t) {
                         if (wec) return self->Close();
                         self->ReadBody();
                       });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](error_code ec, size_t) { self->OnBody(ec); });
  }

  void OnReadError(error_code ec) {
    if (ec == http::error::body_limit) {
      return RefuseAndClose(
          413, "the request body is larger than " + std::to_string(options_.max_body_bytes) + " bytes");
    }
    if (ec == http::error::header_limit) return RefuseAndClose(431, "the request headers are too large");
    if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == net::error::eof ||
        ec == net::error::connection_reset || ec == net::error::operation_aborted) {
      return Close();
    }
    if (ec.category() == make_error_code(http::error::bad_method).category()) {
      return RefuseAndClose(400, "malformed HTTP request: " + ec.message());
    }
    Close();
  }

  void RefuseAndClose(int status, const std::string& message) {
    ApiError e;
    e.http_status = status;
    e.message = message;
    keep_alive_ = false;
    SetActive(true);
    QueueWrite(FullResponse(status, "application/json", e.ToJson(), false), true);
  }

  void OnBody(error_code ec) {
    if (ec) return OnReadError(ec);
    http::request<http::string_body> req = parser_->release();
    keep_alive_ = req.keep_alive();
    HttpRequestView view;
    view.method = std::string(req.method_string());
    view.target = std::string(req.target());
    view.authorization = std::string(req[http::field::authorization]);
    view.body = std::move(req.body());
    stream_.expires_never();
    SetActive(true);
    writer_ = std::make_shared<SessionWriter>(shared_from_this());
    writer_->keep_alive_ = keep_alive_;
    // Watch the socket while the response is produced: a disconnect aborts it.
    if (buffer_.size() == 0) StartMonitor();
    service_.Handle(view, writer_);
  }

  void StartMonitor() {
    monitor_pending_ = true;
    stream_.async_read_some(buffer_.prepare(4096),
                            [self = shared_from_this()](error_code ec, size_t n) { self->OnMonitor(ec, n); });
  }

  void OnMonitor(error_code ec, size_t n) {
    monitor_pending_ = false;
    if (closed_) return;
    if (!ec) {
      buffer_.commit(n);  // a pipelined request: keep it for the next read
      if (!active_) ReadHeader();
      return;
    }
    if (ec == net::error::operation_aborted) {
      if (!active_) ReadHeader();  // cancelled because the response ended
      return;
    }
    ClientGone();
  }

  void WriteNext() {
    writing_ = true;
    net::async_write(stream_, net::buffer(queue_.front().bytes),
                     [self = shared_from_this()](error_code ec, size_t) { self->OnWrite(ec); });
  }

  void OnWrite(error_code ec) {
    writing_ = false;
    if (closed_) return;
    if (ec) return ClientGone();
    bool ends = queue_.front().ends_response;
    queue_.pop_front();
    if (ends) return ResponseDone();
    if (!queue_.empty()) WriteNext();
  }

  void ResponseDone() {
    if (writer_) writer_->Release();
    writer_.reset();
    SetActive(false);
    if (!keep_alive_) {
      error_code ignored;
      stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
      return Close();
    }
    if (monitor_pending_) {
      stream_.socket().cancel();  // OnMonitor then reads the next request
    } else {
      ReadHeader();
    }
  }

  void ClientGone() {
    if (writer_) writer_->NotifyDisconnect();
    Close();
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    if (writer_) {
      writer_->Release();
      writer_.reset();
    }
    SetActive(false);
    queue_.clear();
    error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

  void SetActive(bool active) {
    if (active == active_) return;
    active_ = active;
    activity_.Add(active ? 1 : -1);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  ApiService& service_;
  const HttpServerOptions& options_;
  ActivityCounter& activity_;
  std::shared_ptr<SessionWriter> writer_;
  std::deque<Pending> queue_;
  bool keep_alive_ = true;
  bool writing_ = false;
  bool active_ = false;  // a response is in progress
  bool monitor_pending_ = false;
  bool closed_ = false;
};

void SessionWriter::Post(std::string bytes, bool ends_response) {
  std::shared_ptr<HttpSession> session;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ended_ || !session_) return;
    if (ends_response) ended_ = true;
    session = session_;
  }
  net::any_io_executor strand = session->StrandExecutor();  // before `session` moves into the handler
  net::post(strand, [s = std::move(session), b = std::move(bytes), ends_response]() mutable {
    s->QueueWrite(std::move(b), ends_response);
  });
}

void SessionWriter::SendResponse(int http_status, std::string content_type, std::string body) {
  Post(FullResponse(http_status, content_type, body, keep_alive_), true);
}

void SessionWriter::BeginStream() {
  std::string head = StatusLine(200);
  head +=
      "Server: deepinfer\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
      "Transfer-Encoding: chunked\r\nConnection: ";
  head += keep_alive_ ? "keep-alive\r\n\r\n" : "close\r\n\r\n";
  Post(std::move(head), false);
}

void SessionWriter::SendStreamData(std::string data) {
  if (data.empty()) return;  // an empty chunk would end the body
  Post(ChunkFrame(data), false);
}

void SessionWriter::EndStream() { Post("0\r\n\r\n", true); }

}  // namespace

struct HttpServer::Impl {
  Impl(ApiService& s, HttpServerOptions o)
      : service(s), options(std::move(o)), acceptor(net::make_strand(ioc)) {}

  void Accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](error_code ec, tcp::socket socket) {
      if (ec) {
        if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
        Accept();  // e.g. too many open files: keep serving the others
        return;
      }
      error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);  // SSE chunks go out as they are written
      auto session = std::make_shared<HttpSession>(std::move(socket), service, options, activity);
      {
        std::lock_guard<std::mutex> lock(sessions_mu);
        std::erase_if(sessions, [](const std::weak_ptr<HttpSession>& w) { return w.expired(); });
        sessions.push_back(session);
      }
      session->Run();
      Accept();
    });
  }

  ApiService& service;
  HttpServerOptions options;
  net::io_context ioc;
  tcp::acceptor acceptor;
  ActivityCounter activity;
  std::mutex sessions_mu;
  std::vector<std::weak_ptr<HttpSession>> sessions;  // for ReleaseAfterStop
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::vector<std::thread> threads;
};

HttpServer::HttpServer(ApiService& service, HttpServerOptions options)
    : impl_(std::make_unique<Impl>(service, std::move(options))) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start() {
  error_code ec;
  auto address = net::ip::make_address(impl_->options.host, ec);
  if (ec) return InvalidArgument("--host: '" + impl_->options.host + "' is not an IP address");
  tcp::endpoint endpoint(address, impl_->options.port);
  tcp::acceptor& acceptor = impl_->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return Unavailable("cannot listen on " + impl_->options.host + ":" + std::to_string(impl_->options.port) +
                       ": " + ec.message());
  }
  bound_port_ = acceptor.local_endpoint().port();
  impl_->Accept();
  impl_->work.emplace(net::make_work_guard(impl_->ioc));
  int n = std::max(1, impl_->options.io_threads);
  for (int i = 0; i < n; ++i) impl_->threads.emplace_back([this] { impl_->ioc.run(); });
  return Status::Ok();
}

void HttpServer::StopAccepting() {
  net::post(impl_->acceptor.get_executor(), [impl = impl_.get()] {
    error_code ignored;
    impl->acceptor.close(ignored);
  });
}

bool HttpServer::WaitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(impl_->activity.mu);
  return impl_->activity.idle.wait_for(lock, timeout, [&] { return impl_->activity.active == 0; });
}

void HttpServer::Stop() {
  if (!impl_ || impl_->threads.empty()) return;
  impl_->work.reset();
  impl_->ioc.stop();
  for (std::thread& t : impl_->threads) t.join();
  impl_->threads.clear();
  std::lock_guard<std::mutex> lock(impl_->sessions_mu);
  for (auto& weak : impl_->sessions) {
    if (auto session = weak.lock()) session->ReleaseAfterStop();
  }
  impl_->sessions.clear();
}

}  // namespace deepinfer::server
