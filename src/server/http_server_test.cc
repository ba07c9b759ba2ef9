// HttpServer over real sockets (loopback, any free port) with a FakeEngine:
// keep-alive, chunked SSE, 413 before the body is read, malformed requests,
// and a client that disconnects mid-stream aborting its engine request.
#include <utility>  // before Asio: 1.74's awaitable.hpp uses std::exchange without it

#include <gtest/gtest.h>
#include <boost/asio.hpp>

#include "server/fake_engine_test_util.h"
#include "server/http_server.h"

namespace deepinfer::server {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tok_ = testing::LoadTestTokenizer();
    ASSERT_NE(tok_, nullptr);
    engine_ = std::make_unique<testing::FakeEngine>(*tok_);
    service_ = std::make_unique<ApiService>(*engine_, ServiceOptions{});
    service_->SetReady(true);
    HttpServerOptions options;
    options.port = 0;
    options.io_threads = 2;
    options.max_body_bytes = 4096;
    server_ = std::make_unique<HttpServer>(*service_, options);
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }

  tcp::socket Connect() {
    tcp::socket s(ioc_);
    s.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), server_->port()));
    return s;
  }

  // Reads until `marker` appears (or EOF); returns everything read.
  static std::string ReadUntil(tcp::socket& s, const std::string& marker) {
    std::string out;
    char buf[4096];
    while (out.find(marker) == std::string::npos) {
      boost::system::error_code ec;
      size_t n = s.read_some(net::buffer(buf), ec);
      out.append(buf, n);
      if (ec) break;
    }
    return out;
  }

  static std::string Post(const std::string& path, const std::string& body, bool close = false) {
    return "POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
           std::to_string(body.size()) + (close ? "\r\nConnection: close" : "") + "\r\n\r\n" + body;
  }

  // Reads one Content-Length response; returns "STATUS BODY".
  static std::string ReadResponse(tcp::socket& s) {
    std::string head = ReadUntil(s, "\r\n\r\n");
    size_t header_end = head.find("\r\n\r\n");
    if (header_end == std::string::npos) return "no response";
    std::string status = head.substr(9, 3);
    size_t cl = head.find("Content-Length: ");
    size_t len = cl == std::string::npos ? 0 : std::stoul(head.substr(cl + 16));
    std::string body = head.substr(header_end + 4);
    char buf[4096];
    while (body.size() < len) {
      boost::system::error_code ec;
      size_t n = s.read_some(net::buffer(buf), ec);
      body.append(buf, n);
      if (ec) break;
    }
    return status + " " + body;
  }

  net::io_context ioc_;
  std::unique_ptr<Tokenizer> tok_;
  std::unique_ptr<testing::FakeEngine> engine_;
  std::unique_ptr<ApiService> service_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  tcp::socket s = Connect();
  net::write(s, net::buffer(std::string("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")));
  EXPECT_EQ(ReadResponse(s).substr(0, 3), "200");
  net::write(s, net::buffer(Post("/v1/completions", R"({"prompt": "a", "max_tokens": 2})")));
  std::string r = ReadResponse(s);
  EXPECT_EQ(r.substr(0, 3), "200") << r;
  EXPECT_NE(r.find("\"completion_tokens\":2"), std::string::npos) << r;
  // Two pipelined requests in one write.
  net::write(s, net::buffer(std::string(
                    "GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /nope HTTP/1.1\r\nHost: x\r\n\r\n")));
  // Both answers may arrive in one read: read until the second one is complete.
  std::string both =
      ReadUntil(s, "\"type\":\"invalid_request_error\"}}");  // keys are sorted: type ends the 404 body
  size_t ok = both.find("HTTP/1.1 200"), missing = both.find("HTTP/1.1 404");
  EXPECT_NE(ok, std::string::npos) << both;
  EXPECT_NE(missing, std::string::npos) << both;
  EXPECT_LT(ok, missing);
}

TEST_F(HttpServerTest, StreamIsChunkedSse) {
  tcp::socket s = Connect();
  net::write(s, net::buffer(Post("/v1/completions", R"({"prompt": "a", "max_tokens": 3, "stream": true})")));
  std::string r = ReadUntil(s, "0\r\n\r\n");
  EXPECT_EQ(r.substr(0, 12), "HTTP/1.1 200");
  EXPECT_NE(r.find("Content-Type: text/event-stream"), std::string::npos);
  EXPECT_NE(r.find("Transfer-Encoding: chunked"), std::string::npos);
  EXPECT_NE(r.find("data: [DONE]\n\n\r\n0\r\n\r\n"), std::string::npos) << r;
  // The connection stays usable after the stream.
  net::write(s, net::buffer(std::string("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")));
  EXPECT_EQ(ReadResponse(s).substr(0, 3), "200");
}

TEST_F(HttpServerTest, OversizedAndMalformedRequests) {
  {
    tcp::socket s = Connect();  // refused on the header alone
    net::write(s, net::buffer(std::string(
                      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")));
    std::string r = ReadResponse(s);
    EXPECT_EQ(r.substr(0, 3), "413") << r;
    EXPECT_NE(r.find("\"error\""), std::string::npos);
  }
  {
    tcp::socket s = Connect();
    net::write(s, net::buffer(std::string("this is not http\r\n\r\n")));
    EXPECT_EQ(ReadResponse(s).substr(0, 3), "400");
  }
  {
    tcp::socket s = Connect();
    net::write(s, net::buffer(Post("/v1/completions", "{\"prompt\": ")));
    EXPECT_EQ(ReadResponse(s).substr(0, 3), "400");
  }
  EXPECT_EQ(engine_->submitted().size(), 0u);
}

TEST_F(HttpServerTest, DisconnectMidStreamAbortsTheRequest) {
  engine_->SetHold(true);
  {
    tcp::socket s = Connect();
    net::write(s,
               net::buffer(Post("/v1/completions", R"({"prompt": "a", "max_tokens": 50, "stream": true})")));
    ASSERT_TRUE(engine_->WaitSubmitted(1));
    s.close();
  }
  bool aborted = false;
  for (int i = 0; i < 500 && !aborted; ++i) {
    aborted = !engine_->aborted().empty();
    if (!aborted) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(aborted);
  engine_->SetHold(false);
  EXPECT_TRUE(server_->WaitIdle(std::chrono::seconds(5)));
}

TEST_F(HttpServerTest, DrainOnShutdown) {
  tcp::socket s = Connect();
  net::write(s, net::buffer(Post("/v1/completions", R"({"prompt": "a", "max_tokens": 20, "stream": true})")));
  ASSERT_TRUE(engine_->WaitSubmitted(1));
  server_->StopAccepting();
  service_->BeginShutdown();
  engine_->Shutdown(/*drain=*/true);
  EXPECT_TRUE(server_->WaitIdle(std::chrono::seconds(5)));
  std::string r = ReadUntil(s, "0\r\n\r\n");
  EXPECT_NE(r.find("data: [DONE]"), std::string::npos);  // the live stream finished
  server_->Stop();
}

}  // namespace
}  // namespace deepinfer::server
