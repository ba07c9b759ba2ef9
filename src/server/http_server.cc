#include "server/http_server.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <system_error>

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

// `head`: the answer to a HEAD request, the same header with no body.
// `extra_headers`: "Name: value\r\n" lines (CORS).
std::string FullResponse(int status, const std::string& content_type, const std::string& body,
                         bool keep_alive, bool head = false, const std::string& extra_headers = "") {
  std::string out = StatusLine(status);
  out += "Server: deepinfer\r\n" + extra_headers;
  if (!content_type.empty()) out += "Content-Type: " + content_type + "\r\n";
  if (status != 204)
    out += "Content-Length: " + std::to_string(body.size()) + "\r\n";  // 204: none (RFC 9110)
  out += std::string("Connection: ") + (keep_alive ? "keep-alive" : "close") + "\r\n\r\n";
  if (!head) out += body;
  return out;
}

// How long the listener pauses after accept failed for lack of resources.
constexpr std::chrono::milliseconds kAcceptBackoff{100};
// After a refusal, the client's unread bytes are drained (so the close does
// not reset the connection before the answer is read) for at most this long.
constexpr std::chrono::seconds kLingerTime{2};
constexpr size_t kLingerBytes = 1 << 20;

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
  // `close_connection`: the connection closes after this response (a
  // close-delimited body).
  void Post(std::string bytes, bool ends_response, bool close_connection = false);

  std::shared_ptr<HttpSession> session_;
  std::mutex mu_;
  std::function<void()> handler_;
  bool disconnected_ = false;
  bool ended_ = false;  // the final bytes were queued
  // Set by the session before the writer is shared, then read-only.
  bool keep_alive_ = true;
  bool head_ = false;          // a HEAD request: headers only
  bool http10_ = false;        // an HTTP/1.0 client: no chunked coding
  std::string extra_headers_;  // CORS header lines of this exchange
  friend class HttpSession;
};

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  // `connections` counts open sessions (this one included); it may outlive
  // the server, as a session may.
  HttpSession(tcp::socket socket, ApiService& service, const HttpServerOptions& options,
              ActivityCounter& activity, std::shared_ptr<std::atomic<int64_t>> connections)
      : stream_(std::move(socket)),
        deadline_(stream_.get_executor()),
        service_(service),
        options_(options),
        activity_(activity),
        connections_(std::move(connections)) {}
  ~HttpSession() { connections_->fetch_sub(1); }

  // `over_capacity`: answer 503 and close instead of serving.
  void Run(bool over_capacity) {
    net::dispatch(stream_.get_executor(), [self = shared_from_this(), over_capacity] {
      if (over_capacity) {
        return self->RefuseAndClose(
            503, "too many open connections (limit " + std::to_string(self->options_.max_connections) + ")");
      }
      self->ReadHeader();
    });
  }

  // Strand only. `ends_response`: after these bytes the exchange is complete;
  // `close_connection`: then the connection closes.
  void QueueWrite(std::string bytes, bool ends_response, bool close_connection = false) {
    if (closed_) return;
    if (close_connection) keep_alive_ = false;
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

  // Waits for a request's first byte (idle_timeout: a quiet keep-alive
  // connection is closed), then reads its header (header_timeout).
  void ReadHeader() {
    if (closed_) return;
    parser_.emplace();
    parser_->body_limit(static_cast<uint64_t>(options_.max_body_bytes));
    parser_->header_limit(static_cast<uint32_t>(options_.max_header_bytes));
    if (buffer_.size() > 0) return ReadHeaderRest();
    read_phase_ = ReadPhase::kIdle;
    stream_.expires_after(options_.idle_timeout);
    stream_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](error_code ec, size_t n) {
      if (ec) return self->OnReadError(ec);
      self->buffer_.commit(n);
      self->ReadHeaderRest();
    });
  }

  void ReadHeaderRest() {
    read_phase_ = ReadPhase::kHeader;
    ArmDeadline(options_.header_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(error_code ec) {
    deadline_.cancel();
    if (ec) return OnReadError(ec);
    auto& req = parser_->get();
    cors_headers_ = options_.cors.ResponseHeaders(std::string(req[http::field::origin]));
    // Route and credentials before any body byte is read or buffered. (A
    // request without a body is answered the usual way, keeping the
    // connection.)
    if (parser_->content_length().value_or(0) > 0 || parser_->chunked()) {
      HttpRequestView head;
      head.method = std::string(req.method_string());
      head.target = std::string(req.target());
      head.authorization = std::string(req[http::field::authorization]);
      if (std::optional<ApiError> refused = service_.CheckBeforeBody(head)) return RefuseAndClose(*refused);
    }
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
    read_phase_ = ReadPhase::kBody;
    ArmDeadline(options_.body_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](error_code ec, size_t) { self->OnBody(ec); });
  }

  void OnReadError(error_code ec) {
    if (ec == http::error::body_limit) {
      return RefuseAndClose(
          413, "the request body is larger than " + std::to_string(options_.max_body_bytes) + " bytes");
    }
    if (ec == http::error::header_limit) return RefuseAndClose(431, "the request headers are too large");
    if (timed_out_ && read_phase_ != ReadPhase::kIdle) {
      const bool header = read_phase_ == ReadPhase::kHeader;
      const auto limit = header ? options_.header_timeout : options_.body_timeout;
      return RefuseAndClose(408, std::string("the request ") + (header ? "headers" : "body") +
                                     " did not arrive within " + std::to_string(limit.count()) + " s");
    }
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
    if (status == 503) e.type = "service_unavailable";
    RefuseAndClose(e);
  }

  // Answers `error` and closes: what the client may still send is not read
  // as a request (it is drained for a moment so the answer is not lost to a
  // reset).
  void RefuseAndClose(const ApiError& error) {
    keep_alive_ = false;
    linger_ = true;
    SetActive(true);
    QueueWrite(
        FullResponse(error.http_status, "application/json", error.ToJson(), false, false, cors_headers_),
        true);
  }

  // The header and body deadlines: a timer that cancels the read, so the
  // connection stays open for the 408 (tcp_stream's own timeout closes the
  // socket; it is used for the idle wait only).
  void ArmDeadline(std::chrono::seconds limit) {
    stream_.expires_never();
    timed_out_ = false;
    deadline_.expires_after(limit);
    deadline_.async_wait([self = shared_from_this()](error_code ec) {
      if (ec || self->closed_) return;
      self->timed_out_ = true;
      error_code ignored;
      self->stream_.socket().cancel(ignored);
    });
  }

  void OnBody(error_code ec) {
    deadline_.cancel();
    if (ec) return OnReadError(ec);
    http::request<http::string_body> req = parser_->release();
    keep_alive_ = req.keep_alive();
    if (req.method() == http::verb::options) return AnswerOptions(req);
    HttpRequestView view;
    view.method = std::string(req.method_string());
    view.target = std::string(req.target());
    view.authorization = std::string(req[http::field::authorization]);
    view.body = std::move(req.body());
    stream_.expires_never();
    SetActive(true);
    writer_ = std::make_shared<SessionWriter>(shared_from_this());
    writer_->keep_alive_ = keep_alive_;
    writer_->head_ = req.method() == http::verb::head;
    writer_->http10_ = req.version() < 11;
    writer_->extra_headers_ = cors_headers_;
    // Watch the socket while the response is produced: a disconnect aborts it.
    StartMonitor();
    service_.Handle(view, writer_);
  }

  // OPTIONS: a CORS preflight from an allowed origin gets 204 and the
  // Access-Control-* answer; from another origin 403; without one (a plain
  // OPTIONS), 204 with Allow.
  void AnswerOptions(const http::request<http::string_body>& req) {
    const std::string origin(req[http::field::origin]);
    const bool preflight = !origin.empty() && req.count(http::field::access_control_request_method) > 0;
    SetActive(true);
    if (!preflight) {
      return QueueWrite(
          FullResponse(204, "", "", keep_alive_, false, cors_headers_ + "Allow: GET, POST, OPTIONS\r\n"),
          true);
    }
    if (!options_.cors.Allows(origin)) {
      ApiError e;
      e.http_status = 403;
      e.message = "CORS: the origin '" + std::string(origin) + "' is not allowed (--allowed-origins)";
      return QueueWrite(FullResponse(403, "application/json", e.ToJson(), keep_alive_), true);
    }
    const std::string asked(req[http::field::access_control_request_headers]);
    QueueWrite(FullResponse(204, "", "", keep_alive_, false, options_.cors.PreflightHeaders(origin, asked)),
               true);
  }

  // A read pending for as long as the response is in progress. Bytes that
  // arrive are the client's next requests: kept (up to one request's worth;
  // beyond that the client is not waiting for this answer) and read once
  // the response ended.
  void StartMonitor() {
    if (monitor_pending_ || closed_) return;
    monitor_pending_ = true;
    stream_.async_read_some(buffer_.prepare(4096),
                            [self = shared_from_this()](error_code ec, size_t n) { self->OnMonitor(ec, n); });
  }

  void OnMonitor(error_code ec, size_t n) {
    monitor_pending_ = false;
    if (closed_) return;
    if (!ec) {
      buffer_.commit(n);
      if (!active_) return ReadHeader();
      const auto limit = static_cast<size_t>(options_.max_body_bytes + options_.max_header_bytes);
      if (buffer_.size() > limit) return ClientGone();
      return StartMonitor();
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
      if (linger_ && !monitor_pending_) return Linger(0);
      return Close();
    }
    if (monitor_pending_) {
      stream_.socket().cancel();  // OnMonitor then reads the next request
    } else {
      ReadHeader();
    }
  }

  // Reads and discards what the client still sends, until it closes, for at
  // most kLingerTime and kLingerBytes; then closes.
  void Linger(size_t drained) {
    if (closed_) return;
    if (drained > kLingerBytes) return Close();
    if (drained == 0) stream_.expires_after(kLingerTime);
    buffer_.clear();
    stream_.async_read_some(buffer_.prepare(16384),
                            [self = shared_from_this(), drained](error_code ec, size_t n) {
                              if (ec) return self->Close();
                              self->Linger(drained + n);
                            });
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
    deadline_.cancel();
    error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

  void SetActive(bool active) {
    if (active == active_) return;
    active_ = active;
    activity_.Add(active ? 1 : -1);
  }

  enum class ReadPhase { kIdle, kHeader, kBody };

  beast::tcp_stream stream_;
  net::steady_timer deadline_;  // header / body read deadline (ArmDeadline)
  bool timed_out_ = false;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  ApiService& service_;
  const HttpServerOptions& options_;
  std::string cors_headers_;  // CORS header lines for the current request (from its Origin)
  ActivityCounter& activity_;
  std::shared_ptr<std::atomic<int64_t>> connections_;
  ReadPhase read_phase_ = ReadPhase::kIdle;
  bool linger_ = false;  // a refusal: drain before closing
  std::shared_ptr<SessionWriter> writer_;
  std::deque<Pending> queue_;
  bool keep_alive_ = true;
  bool writing_ = false;
  bool active_ = false;  // a response is in progress
  bool monitor_pending_ = false;
  bool closed_ = false;
};

void SessionWriter::Post(std::string bytes, bool ends_response, bool close_connection) {
  // The lock is held until the post is done and the strand handle is gone:
  // Release (HttpServer::Stop, before the io_context is destroyed) then
  // waits for a Post in flight on an engine thread, and every later Post
  // returns here. net::post never runs the handler inline, so nothing below
  // takes mu_ again.
  std::lock_guard<std::mutex> lock(mu_);
  if (ended_ || !session_) return;
  if (ends_response) ended_ = true;
  std::shared_ptr<HttpSession> session = session_;
  net::any_io_executor strand = session->StrandExecutor();  // before `session` moves into the handler
  net::post(strand,
            [s = std::move(session), b = std::move(bytes), ends_response, close_connection]() mutable {
              s->QueueWrite(std::move(b), ends_response, close_connection);
            });
}

void SessionWriter::SendResponse(int http_status, std::string content_type, std::string body) {
  Post(FullResponse(http_status, content_type, body, keep_alive_, head_, extra_headers_), true);
}

// HTTP/1.1: chunked. HTTP/1.0 has no chunked coding (RFC 9112 section 7):
// the body runs until the connection closes.
void SessionWriter::BeginStream() {
  std::string head = StatusLine(200);
  head += "Server: deepinfer\r\n" + extra_headers_ +
          "Content-Type: text/event-stream\r\nCache-Control: no-cache\r\n";
  if (http10_) {
    head += "Connection: close\r\n\r\n";
    return Post(std::move(head), false, /*close_connection=*/true);
  }
  head += "Transfer-Encoding: chunked\r\nConnection: ";
  head += keep_alive_ ? "keep-alive\r\n\r\n" : "close\r\n\r\n";
  Post(std::move(head), false);
}

void SessionWriter::SendStreamData(std::string data) {
  if (data.empty()) return;  // an empty chunk would end the body
  Post(http10_ ? std::move(data) : ChunkFrame(data), false);
}

void SessionWriter::EndStream() { Post(http10_ ? "" : "0\r\n\r\n", true, /*close_connection=*/http10_); }

}  // namespace

struct HttpServer::Impl {
  Impl(ApiService& s, HttpServerOptions o)
      : service(s),
        options(std::move(o)),
        acceptor(net::make_strand(ioc)),
        accept_backoff(acceptor.get_executor()) {}

  void Accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](error_code ec, tcp::socket socket) {
      if (ec) {
        if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
        // Out of descriptors or memory (EMFILE, ENFILE, ENOBUFS): retrying at
        // once fails the same way and spins a core; pause, keep the others
        // served, then try again.
        accept_backoff.expires_after(kAcceptBackoff);
        accept_backoff.async_wait([this](error_code wec) {
          if (!wec) Accept();
        });
        return;
      }
      error_code ignored;
      socket.set_option(tcp::no_delay(true), ignored);  // SSE chunks go out as they are written
      const bool over_capacity = connections->fetch_add(1) >= options.max_connections;
      auto session =
          std::make_shared<HttpSession>(std::move(socket), service, options, activity, connections);
      {
        std::lock_guard<std::mutex> lock(sessions_mu);
        std::erase_if(sessions, [](const std::weak_ptr<HttpSession>& w) { return w.expired(); });
        sessions.push_back(session);
      }
      session->Run(over_capacity);
      Accept();
    });
  }

  ApiService& service;
  HttpServerOptions options;
  net::io_context ioc;
  tcp::acceptor acceptor;
  net::steady_timer accept_backoff;  // on the acceptor's strand
  ActivityCounter activity;
  std::shared_ptr<std::atomic<int64_t>> connections = std::make_shared<std::atomic<int64_t>>(0);
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
  try {
    for (int i = 0; i < n; ++i) impl_->threads.emplace_back([this] { impl_->ioc.run(); });
  } catch (const std::system_error& e) {
    Stop();  // joins the threads that started
    return Unavailable("cannot start the HTTP I/O threads: " + std::string(e.what()));
  }
  return Status::Ok();
}

void HttpServer::StopAccepting() {
  net::post(impl_->acceptor.get_executor(), [impl = impl_.get()] {
    error_code ignored;
    impl->acceptor.close(ignored);
    impl->accept_backoff.cancel();
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
