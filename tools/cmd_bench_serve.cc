// deepinfer bench-serve: load generator for a running `deepinfer serve` (or
// any OpenAI-compatible server). Sends streaming /v1/completions requests
// with random token-id prompts (lengths from a distribution, an optional
// shared prefix) and ignore_eos, so each request produces exactly the drawn
// number of tokens; either a fixed number of clients in a closed loop
// (--concurrency) or Poisson arrivals (--request-rate). Reports throughput and
// TTFT / TPOT / ITL / end-to-end latency percentiles.
//
// Each client is a thread with a blocking Beast HTTP/1.1 connection (kept
// alive across its requests); time stamps are taken as SSE events arrive.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "tools/commands.h"
#include "tools/flags.h"
#include "tools/plot_png.h"

namespace deepinfer::tools {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kUsageLine =
    "usage: deepinfer bench-serve --num-requests N (--concurrency C | --request-rate R)\n"
    "         --prompt-tokens DIST --output-tokens DIST [flags]   (DIST: N | uniform:LO,HI | "
    "normal:MEAN,STD)";
constexpr const char* kSummary = "Load generator against a running server: latency and throughput.";

std::vector<FlagSpec> BenchServeFlags() {
  return {{"url", "URL", "the server", "http://127.0.0.1:8000"},
          {"api-key", "KEY", "sent as Authorization: Bearer KEY", ""},
          {"num-requests", "N", "requests to send", kRequired},
          {"concurrency", "C", "requests in flight at once (or --request-rate)", ""},
          {"request-rate", "R", "Poisson arrivals, requests per second (or --concurrency)", ""},
          {"prompt-tokens", "DIST", "prompt length distribution", kRequired},
          {"output-tokens", "DIST", "output length distribution", kRequired},
          {"shared-prefix-tokens", "S", "tokens every prompt starts with", "0"},
          {"seed", "S", "seed of the prompts and arrivals", "0"},
          {"model", "NAME", "the model field of each request", "the server's"},
          {"json", "FILE", "write the results as JSON", ""},
          {"plot", "FILE.png", "draw the latency distribution as a PNG chart", ""}};
}

// A token-count distribution.
struct Dist {
  enum class Kind { kFixed, kUniform, kNormal } kind = Kind::kFixed;
  double a = 0, b = 0;
  std::string text;
  int64_t Draw(std::mt19937_64& rng) const {
    double v = a;
    if (kind == Kind::kUniform) {
      v = std::uniform_int_distribution<int64_t>(static_cast<int64_t>(a), static_cast<int64_t>(b))(rng);
    }
    if (kind == Kind::kNormal) v = std::round(std::normal_distribution<double>(a, b)(rng));
    return std::max<int64_t>(1, static_cast<int64_t>(v));
  }
};

StatusOr<Dist> ParseDist(const std::string& flag, const std::string& text) {
  Dist d;
  d.text = text;
  auto bad = [&] {
    return InvalidArgument("--" + flag + ": '" + text + "' is not N, uniform:LO,HI or normal:MEAN,STD");
  };
  try {
    size_t colon = text.find(':');
    if (colon == std::string::npos) {
      size_t used = 0;
      d.a = static_cast<double>(std::stoll(text, &used));
      if (used != text.size() || d.a < 1) return bad();
      return d;
    }
    std::string kind = text.substr(0, colon), rest = text.substr(colon + 1);
    size_t comma = rest.find(',');
    if (comma == std::string::npos) return bad();
    d.a = std::stod(rest.substr(0, comma));
    d.b = std::stod(rest.substr(comma + 1));
    if (kind == "uniform" && d.a >= 1 && d.b >= d.a) {
      d.kind = Dist::Kind::kUniform;
    } else if (kind == "normal" && d.a >= 1 && d.b >= 0) {
      d.kind = Dist::Kind::kNormal;
    } else {
      return bad();
    }
    if (!std::isfinite(d.a) || !std::isfinite(d.b) || d.b > 1e7) return bad();
    return d;
  } catch (...) {
    return bad();
  }
}

struct Target {
  std::string host, port, base;
};

StatusOr<Target> ParseUrl(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) return InvalidArgument("--url must start with http:// (got '" + url + "')");
  std::string rest = url.substr(scheme.size());
  size_t slash = rest.find('/');
  std::string hostport = rest.substr(0, slash);
  Target t;
  t.base = slash == std::string::npos ? "" : rest.substr(slash);
  while (!t.base.empty() && t.base.back() == '/') t.base.pop_back();
  size_t colon = hostport.rfind(':');
  t.host = hostport.substr(0, colon);
  t.port = colon == std::string::npos ? "80" : hostport.substr(colon + 1);
  if (t.host.empty() || t.port.empty()) return InvalidArgument("--url: no host in '" + url + "'");
  return t;
}

struct BenchOptions {
  Target target;
  std::string url, api_key, model, json_path, plot_path;
  int64_t num_requests = 0;
  int64_t concurrency = 0;  // 0: unbounded (rate mode)
  double request_rate = 0;  // 0: closed loop
  Dist prompt_tokens, output_tokens;
  int64_t shared_prefix = 0;
  uint64_t seed = 0;
};

struct Planned {
  std::vector<int32_t> prompt;
  int64_t max_tokens = 0;
  double arrival_s = 0;
};

struct Result {
  bool ok = false;
  std::string error;
  double start_s = 0, ttft_s = 0, e2e_s = 0;
  int64_t prompt_tokens = 0, output_tokens = 0;
  std::vector<double> itl_s;
};

// One keep-alive connection, reopened after an error.
class Client {
 public:
  explicit Client(const BenchOptions& o) : o_(o), socket_(ioc_) {}

  StatusOr<std::string> Get(const std::string& path) {
    try {
      Connect();
      http::request<http::empty_body> req(http::verb::get, o_.target.base + path, 11);
      req.set(http::field::host, o_.target.host);
      if (!o_.api_key.empty()) req.set(http::field::authorization, "Bearer " + o_.api_key);
      http::write(socket_, req);
      http::response<http::string_body> res;
      http::read(socket_, buffer_, res);
      if (res.result_int() != 200) {
        return Unavailable("GET " + path + ": HTTP " + std::to_string(res.result_int()) + " " + res.body());
      }
      return res.body();
    } catch (const std::exception& e) {
      Reset();
      return Unavailable("GET " + o_.url + path + ": " + e.what());
    }
  }

  // Streams one completion; fills timings relative to `epoch`.
  void Complete(const Planned& p, const std::string& model, Clock::time_point epoch, Result* r) {
    json body = {{"model", model},
                 {"prompt", p.prompt},
                 {"max_tokens", p.max_tokens},
                 {"ignore_eos", true},
                 {"temperature", 0.0},
                 {"stream", true},
                 {"stream_options", {{"include_usage", true}}}};
    Clock::time_point start = Clock::now();
    r->start_s = std::chrono::duration<double>(start - epoch).count();
    r->prompt_tokens = static_cast<int64_t>(p.prompt.size());
    try {
      Connect();
      http::request<http::string_body> req(http::verb::post, o_.target.base + "/v1/completions", 11);
      req.set(http::field::host, o_.target.host);
      req.set(http::field::content_type, "application/json");
      if (!o_.api_key.empty()) req.set(http::field::authorization, "Bearer " + o_.api_key);
      req.body() = body.dump();
      req.prepare_payload();
      http::write(socket_, req);

      http::response_parser<http::string_body> parser;
      parser.body_limit(uint64_t{1} << 30);  // long streams are fine
      std::string pending;
      Clock::time_point last;
      bool got_first = false;
      auto on_event = [&](const std::string& data) {
        if (data == "[DONE]") return;
        json ev = json::parse(data, nullptr, false);
        if (ev.is_discarded()) return;
        if (ev.contains("usage") && ev["usage"].is_object()) {
          r->output_tokens = ev["usage"].value("completion_tokens", int64_t{0});
        }
        if (ev.contains("error")) r->error = ev["error"].dump();
        if (!ev.contains("choices") || !ev["choices"].is_array() || ev["choices"].empty()) return;
        // A token arrival: a chunk with text, or a chunk before the finish
        // (servers send those for tokens that add no text yet, e.g. a held-back
        // UTF-8 sequence; counting only text would miss them). A chunk that
        // only carries the finish reason is not an arrival.
        const json& c = ev["choices"][0];
        const bool has_text =
            c.contains("text") && c["text"].is_string() && !c["text"].get<std::string>().empty();
        const bool finishes = c.contains("finish_reason") && !c["finish_reason"].is_null();
        if (!has_text && finishes) return;
        if (!c.contains("text")) return;
        Clock::time_point now = Clock::now();
        if (!got_first) {
          r->ttft_s = std::chrono::duration<double>(now - start).count();
          got_first = true;
        } else {
          r->itl_s.push_back(std::chrono::duration<double>(now - last).count());
        }
        last = now;
      };
      auto on_chunk = [&](uint64_t, beast::string_view chunk, beast::error_code&) -> size_t {
        pending.append(chunk.data(), chunk.size());
        size_t end;
        while ((end = pending.find("\n\n")) != std::string::npos) {
          std::string event = pending.substr(0, end);
          pending.erase(0, end + 2);
          if (event.rfind("data: ", 0) == 0) on_event(event.substr(6));
        }
        return chunk.size();
      };
      parser.on_chunk_body(on_chunk);  // Beast keeps a reference: on_chunk outlives the reads
      http::read_header(socket_, buffer_, parser);
      if (parser.get().result_int() != 200) {
        http::read(socket_, buffer_, parser);
        r->error = "HTTP " + std::to_string(parser.get().result_int()) + " " + parser.get().body();
        if (!parser.get().keep_alive()) Reset();
        return;
      }
      while (!parser.is_done()) http::read(socket_, buffer_, parser);
      r->e2e_s = std::chrono::duration<double>(Clock::now() - start).count();
      r->ok = got_first && r->error.empty();
      if (!got_first && r->error.empty()) r->error = "no tokens received";
      if (!parser.get().keep_alive()) Reset();
    } catch (const std::exception& e) {
      r->error = e.what();
      Reset();
    }
  }

 private:
  void Connect() {
    if (socket_.is_open()) return;
    tcp::resolver resolver(ioc_);
    net::connect(socket_, resolver.resolve(o_.target.host, o_.target.port));
    socket_.set_option(tcp::no_delay(true));
    buffer_.clear();
  }
  void Reset() {
    beast::error_code ignored;
    socket_.close(ignored);
    buffer_.clear();
  }

  const BenchOptions& o_;
  net::io_context ioc_;
  tcp::socket socket_;
  beast::flat_buffer buffer_;
};

StatusOr<BenchOptions> ParseOptions(const Flags& flags) {
  BenchOptions o;
  o.url = flags.GetString("url", "http://127.0.0.1:8000");
  DI_ASSIGN_OR_RETURN(o.target, ParseUrl(o.url));
  o.api_key = flags.GetString("api-key");
  o.model = flags.GetString("model");
  o.json_path = flags.GetString("json");
  o.plot_path = flags.GetString("plot");
  DI_ASSIGN_OR_RETURN(o.num_requests, flags.GetInt("num-requests", 0));
  if (o.num_requests < 1 || o.num_requests > 1000000) {
    return InvalidArgument("--num-requests must be in [1, 1000000]");
  }
  if (!flags.Has("concurrency") && !flags.Has("request-rate")) {
    return InvalidArgument("give --concurrency C or --request-rate R");
  }
  DI_ASSIGN_OR_RETURN(o.concurrency, flags.GetInt("concurrency", 0));
  if (flags.Has("concurrency") && (o.concurrency < 1 || o.concurrency > 4096)) {
    return InvalidArgument("--concurrency must be in [1, 4096]");
  }
  DI_ASSIGN_OR_RETURN(o.request_rate, flags.GetDouble("request-rate", 0.0));
  if (flags.Has("request-rate") && !(o.request_rate > 0 && std::isfinite(o.request_rate))) {
    return InvalidArgument("--request-rate must be > 0 (requests per second)");
  }
  DI_ASSIGN_OR_RETURN(std::string prompt_dist, flags.Required("prompt-tokens"));
  DI_ASSIGN_OR_RETURN(o.prompt_tokens, ParseDist("prompt-tokens", prompt_dist));
  DI_ASSIGN_OR_RETURN(std::string output_dist, flags.Required("output-tokens"));
  DI_ASSIGN_OR_RETURN(o.output_tokens, ParseDist("output-tokens", output_dist));
  DI_ASSIGN_OR_RETURN(o.shared_prefix, flags.GetInt("shared-prefix-tokens", 0));
  if (o.shared_prefix < 0 || o.shared_prefix > 10000000) {
    return InvalidArgument("--shared-prefix-tokens must be >= 0");
  }
  DI_ASSIGN_OR_RETURN(int64_t seed, flags.GetInt("seed", 0));
  o.seed = static_cast<uint64_t>(seed);
  return o;
}

// Random prompts over the vocabulary, skipping the lowest ids (control tokens
// in most vocabularies); the first `shared_prefix` tokens are common to all.
std::vector<Planned> Plan(const BenchOptions& o, int64_t vocab) {
  std::mt19937_64 rng(o.seed);
  const int32_t lo = vocab > 300 ? 259 : 0;
  std::uniform_int_distribution<int32_t> token(lo, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> prefix(static_cast<size_t>(o.shared_prefix));
  for (int32_t& t : prefix) t = token(rng);
  std::exponential_distribution<double> gap(o.request_rate > 0 ? o.request_rate : 1.0);
  std::vector<Planned> plan(static_cast<size_t>(o.num_requests));
  double t = 0;
  for (Planned& p : plan) {
    p.prompt = prefix;
    int64_t n = o.prompt_tokens.Draw(rng);
    while (static_cast<int64_t>(p.prompt.size()) < o.shared_prefix + n) p.prompt.push_back(token(rng));
    p.max_tokens = o.output_tokens.Draw(rng);
    if (o.request_rate > 0) {
      p.arrival_s = t;
      t += gap(rng);
    }
  }
  return plan;
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  double pos = q * static_cast<double>(v.size() - 1);
  size_t i = static_cast<size_t>(pos);
  double frac = pos - static_cast<double>(i);
  return i + 1 < v.size() ? v[i] * (1 - frac) + v[i + 1] * frac : v[i];
}

json Summary(const std::vector<double>& seconds) {
  double mean = 0;
  for (double s : seconds) mean += s;
  mean = seconds.empty() ? 0 : mean / static_cast<double>(seconds.size());
  return {{"mean", mean * 1e3},
          {"p50", Percentile(seconds, 0.5) * 1e3},
          {"p90", Percentile(seconds, 0.9) * 1e3},
          {"p99", Percentile(seconds, 0.99) * 1e3}};
}

int Run(const BenchOptions& o) {
  Client probe(o);
  auto models = probe.Get("/v1/models");
  if (!models.ok()) return Fail("bench-serve", models.status().message());
  json list = json::parse(*models, nullptr, false);
  if (list.is_discarded() || !list.contains("data") || !list["data"].is_array() || list["data"].empty()) {
    return Fail("bench-serve", "GET /v1/models: unexpected answer");
  }
  const json& m = list["data"][0];
  std::string model = o.model.empty() ? m.value("id", std::string()) : o.model;
  int64_t vocab =
      m.contains("vocab_size") && m["vocab_size"].is_number_integer() ? m["vocab_size"].get<int64_t>() : 256;
  std::vector<Planned> plan = Plan(o, vocab);

  std::vector<Result> results(plan.size());
  std::atomic<size_t> next{0};
  const size_t workers =
      static_cast<size_t>(o.concurrency > 0 ? std::min<int64_t>(o.concurrency, o.num_requests)
                                            : std::min<int64_t>(o.num_requests, 4096));
  Clock::time_point epoch = Clock::now();
  std::vector<std::thread> threads;
  for (size_t w = 0; w < workers; ++w) {
    threads.emplace_back([&] {
      Client client(o);
      for (size_t i = next++; i < plan.size(); i = next++) {
        std::this_thread::sleep_until(epoch + std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double>(plan[i].arrival_s)));
        client.Complete(plan[i], model, epoch, &results[i]);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  double duration = std::chrono::duration<double>(Clock::now() - epoch).count();

  std::vector<double> ttft, tpot, itl, e2e;
  int64_t completed = 0, output_tokens = 0, prompt_tokens = 0;
  std::string first_error;
  for (const Result& r : results) {
    if (!r.ok) {
      if (first_error.empty()) first_error = r.error;
      continue;
    }
    ++completed;
    output_tokens += r.output_tokens;
    prompt_tokens += r.prompt_tokens;
    ttft.push_back(r.ttft_s);
    e2e.push_back(r.e2e_s);
    if (r.output_tokens > 1) tpot.push_back((r.e2e_s - r.ttft_s) / static_cast<double>(r.output_tokens - 1));
    itl.insert(itl.end(), r.itl_s.begin(), r.itl_s.end());
  }
  json report = {{"url", o.url},
                 {"model", model},
                 {"num_requests", o.num_requests},
                 {"completed", completed},
                 {"failed", o.num_requests - completed},
                 {"concurrency", o.concurrency},
                 {"request_rate", o.request_rate},
                 {"prompt_tokens", o.prompt_tokens.text},
                 {"output_tokens", o.output_tokens.text},
                 {"shared_prefix_tokens", o.shared_prefix},
                 {"seed", o.seed},
                 {"duration_s", duration},
                 {"request_throughput", completed / duration},
                 {"output_token_throughput", output_tokens / duration},
                 {"input_token_throughput", prompt_tokens / duration},
                 {"total_output_tokens", output_tokens},
                 {"ttft_ms", Summary(ttft)},
                 {"tpot_ms", Summary(tpot)},
                 {"itl_ms", Summary(itl)},
                 {"e2e_latency_ms", Summary(e2e)}};
  std::printf("requests: %lld completed, %lld failed in %.2f s\n", static_cast<long long>(completed),
              static_cast<long long>(o.num_requests - completed), duration);
  std::printf("throughput: %.2f req/s, %.1f output tok/s, %.1f input tok/s\n", completed / duration,
              output_tokens / duration, prompt_tokens / duration);
  for (const char* key : {"ttft_ms", "tpot_ms", "itl_ms", "e2e_latency_ms"}) {
    const json& s = report[key];
    std::printf("%-15s mean %9.2f  p50 %9.2f  p90 %9.2f  p99 %9.2f\n", key, s["mean"].get<double>(),
                s["p50"].get<double>(), s["p90"].get<double>(), s["p99"].get<double>());
  }
  if (!first_error.empty()) {
    std::fprintf(stderr, "deepinfer bench-serve: first error: %s\n", first_error.c_str());
  }
  if (!o.json_path.empty()) {
    std::ofstream out(o.json_path);
    out << report.dump(2) << "\n";
    if (!out) return Fail("bench-serve", "cannot write --json " + o.json_path);
  }
  if (!o.plot_path.empty()) {
    // Latency of each request against when it started.
    PlotSeries ttft_series{"TTFT ms", {}, {}}, e2e_series{"E2E ms", {}, {}};
    std::vector<Result> by_start = results;
    std::sort(by_start.begin(), by_start.end(),
              [](const Result& a, const Result& b) { return a.start_s < b.start_s; });
    for (const Result& r : by_start) {
      if (!r.ok) continue;
      ttft_series.xs.push_back(r.start_s);
      ttft_series.ys.push_back(r.ttft_s * 1e3);
      e2e_series.xs.push_back(r.start_s);
      e2e_series.ys.push_back(r.e2e_s * 1e3);
    }
    if (ttft_series.xs.empty()) return Fail("bench-serve", "--plot: no request completed");
    Status s = WriteLinePlotPng(o.plot_path, "bench-serve latency per request", "start time (s)", "ms",
                                {ttft_series, e2e_series});
    if (!s.ok()) return Fail("bench-serve", s.message());
  }
  return completed == o.num_requests ? 0 : 1;
}

}  // namespace

int RunBenchServe(const Args& args) {
  Flags flags(BenchServeFlags());
  int code = 0;
  if (!ParseOrExit(&flags, args, "bench-serve", kUsageLine, kSummary, &code)) return code;
  auto options = ParseOptions(flags);
  if (!options.ok()) return Fail("bench-serve", options.status().message(), 2);
  return Run(*options);
}

}  // namespace deepinfer::tools
