#include "tools/bench_report.h"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/stats.h"
#include "tools/plot_png.h"

namespace deepinfer::tools {
namespace {

std::vector<double> Rates(const std::vector<double>& seconds, double tokens) {
  std::vector<double> rates;
  for (double s : seconds) rates.push_back(s > 0 ? tokens / s : 0.0);
  return rates;
}

std::vector<double> DecodeRates(const BenchReport& r, int64_t batch) {
  auto it = r.result.decode_seconds.find(batch);
  if (it == r.result.decode_seconds.end()) return {};
  return Rates(it->second, static_cast<double>(batch * r.config.gen_tokens));
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// JSON has no NaN/Inf: those become null.
std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

std::string JsonArray(const std::vector<double>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + JsonNumber(v[i]);
  return out + "]";
}

std::string Bytes(int64_t b) {
  char buf[32];
  const double v = static_cast<double>(b);
  if (v >= 1 << 30) {
    std::snprintf(buf, sizeof(buf), "%.2f GiB", v / (1 << 30));
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", v / (1 << 20));
  }
  return buf;
}

}  // namespace

double BenchReport::PrefillTokensPerSecond() const {
  return Median(Rates(result.prefill_seconds, static_cast<double>(config.prompt_tokens)));
}
double BenchReport::TtftMs() const { return Median(result.prefill_seconds) * 1e3; }
double BenchReport::DecodeTokensPerSecond(int64_t batch) const { return Median(DecodeRates(*this, batch)); }
double BenchReport::DecodeTokensPerSecondMin(int64_t batch) const {
  auto v = DecodeRates(*this, batch);
  return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
}
double BenchReport::DecodeTokensPerSecondMax(int64_t batch) const {
  auto v = DecodeRates(*this, batch);
  return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
}

std::string FormatBenchTable(const BenchReport& r) {
  std::ostringstream os;
  char line[256];
  os << "model    " << r.model_path << " (" << r.arch << ", " << r.dtype << ", " << Bytes(r.weight_bytes)
     << " weights";
  if (r.active_weight_bytes_per_token != r.weight_bytes_per_token) {
    os << ", " << Bytes(r.active_weight_bytes_per_token) << " read per token at batch 1";
  }
  os << ")\n";
  std::snprintf(
      line, sizeof(line), "threads  %d   kernels %s   prompt %lld   gen %lld   rounds %lld   chunk %lld%s\n",
      r.threads, r.kernels.c_str(), static_cast<long long>(r.config.prompt_tokens),
      static_cast<long long>(r.config.gen_tokens), static_cast<long long>(r.config.rounds),
      static_cast<long long>(r.config.prefill_chunk), r.config.shared_prompt ? "   shared prompt" : "");
  os << line;
  if (!r.weight_kernels.empty()) os << "kernels: " << r.weight_kernels << "\n";
  std::snprintf(line, sizeof(line), "prefill  %.1f tok/s   ttft %.1f ms\n", r.PrefillTokensPerSecond(),
                r.TtftMs());
  os << line;
  os << "batch    decode tok/s (aggregate)    per sequence    ms/step    min .. max tok/s\n";
  for (const auto& [batch, seconds] : r.result.decode_seconds) {
    const double agg = r.DecodeTokensPerSecond(batch);
    const double ms_step = agg > 0 ? 1e3 * static_cast<double>(batch) / agg : 0.0;
    std::snprintf(line, sizeof(line), "%-8lld %-27.1f %-15.2f %-10.2f %.1f .. %.1f\n",
                  static_cast<long long>(batch), agg, agg / static_cast<double>(batch), ms_step,
                  r.DecodeTokensPerSecondMin(batch), r.DecodeTokensPerSecondMax(batch));
    os << line;
  }
  std::snprintf(line, sizeof(line),
                "kv cache %s (%s, %lld bytes/token)   peak rss %s   load %.2f %.2f %.2f\n",
                Bytes(r.result.kv_cache_bytes).c_str(), DTypeName(r.config.kv_dtype),
                static_cast<long long>(r.kv_bytes_per_token), Bytes(r.peak_rss_bytes).c_str(), r.load_avg[0],
                r.load_avg[1], r.load_avg[2]);
  os << line;
  if (r.kv_cache_memory > 0) {
    const int64_t seq_tokens = r.config.prompt_tokens + r.config.gen_tokens;
    std::snprintf(line, sizeof(line), "kv cache memory %s holds %lld sequences of %lld tokens at once%s\n",
                  Bytes(r.kv_cache_memory).c_str(), static_cast<long long>(r.max_concurrent_sequences),
                  static_cast<long long>(seq_tokens), r.config.swa_full_kv ? " (--swa-full-kv)" : "");
    os << line;
  }
  return os.str();
}

std::string FormatBenchJson(const BenchReport& r) {
  std::ostringstream os;
  os << "{\n";
  os << "  \"model\": " << JsonString(r.model_path) << ",\n";
  os << "  \"arch\": " << JsonString(r.arch) << ",\n";
  os << "  \"dtype\": " << JsonString(r.dtype) << ",\n";
  os << "  \"weight_bytes\": " << r.weight_bytes << ",\n";
  os << "  \"weight_bytes_per_token\": " << r.weight_bytes_per_token << ",\n";
  os << "  \"active_weight_bytes_per_token\": " << r.active_weight_bytes_per_token << ",\n";
  os << "  \"threads\": " << r.threads << ",\n";
  os << "  \"kernels\": " << JsonString(r.kernels) << ",\n";
  os << "  \"weight_kernels\": " << JsonString(r.weight_kernels) << ",\n";
  os << "  \"prompt_tokens\": " << r.config.prompt_tokens << ",\n";
  os << "  \"gen_tokens\": " << r.config.gen_tokens << ",\n";
  os << "  \"prefill_chunk\": " << r.config.prefill_chunk << ",\n";
  os << "  \"rounds\": " << r.config.rounds << ",\n";
  os << "  \"shared_prompt\": " << (r.config.shared_prompt ? "true" : "false") << ",\n";
  os << "  \"prefill_tokens_per_s\": " << JsonNumber(r.PrefillTokensPerSecond()) << ",\n";
  os << "  \"prefill_tokens_per_s_rounds\": "
     << JsonArray(Rates(r.result.prefill_seconds, static_cast<double>(r.config.prompt_tokens))) << ",\n";
  os << "  \"ttft_ms\": " << JsonNumber(r.TtftMs()) << ",\n";
  std::string agg, rounds;
  for (const auto& [batch, seconds] : r.result.decode_seconds) {
    const std::string key = JsonString(std::to_string(batch));
    agg += (agg.empty() ? "" : ", ") + key + ": " + JsonNumber(r.DecodeTokensPerSecond(batch));
    rounds += (rounds.empty() ? "" : ", ") + key + ": " + JsonArray(DecodeRates(r, batch));
  }
  os << "  \"decode_tokens_per_s\": {" << agg << "},\n";
  os << "  \"decode_tokens_per_s_rounds\": {" << rounds << "},\n";
  os << "  \"kv_cache_bytes\": " << r.result.kv_cache_bytes << ",\n";
  os << "  \"kv_cache_dtype\": " << JsonString(DTypeName(r.config.kv_dtype)) << ",\n";
  os << "  \"kv_bytes_per_token\": " << r.kv_bytes_per_token << ",\n";
  if (r.kv_cache_memory > 0) {
    os << "  \"kv_cache_memory\": " << r.kv_cache_memory << ",\n";
    os << "  \"max_concurrent_sequences\": " << r.max_concurrent_sequences << ",\n";
  }
  os << "  \"peak_rss_bytes\": " << r.peak_rss_bytes << ",\n";
  os << "  \"load_avg\": " << JsonArray({r.load_avg[0], r.load_avg[1], r.load_avg[2]}) << "\n";
  os << "}\n";
  return os.str();
}

Status WriteBenchPlot(const BenchReport& r, const std::string& path) {
  PlotSeries s;
  s.name = "deepinfer " + r.dtype + ", " + std::to_string(r.threads) + " threads";
  for (const auto& [batch, seconds] : r.result.decode_seconds) {
    s.xs.push_back(static_cast<double>(batch));
    s.ys.push_back(r.DecodeTokensPerSecond(batch));
  }
  PlotOptions o;
  o.log_x = true;
  return WriteLinePlotPng(path, "decode throughput vs batch", "batch size (sequences)",
                          "tokens/s (aggregate)", {s}, o);
}

int64_t PeakRssBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    long long kb = 0;
    if (std::sscanf(line.c_str(), "VmHWM: %lld kB", &kb) == 1) return kb * 1024;
  }
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;  // Linux: kilobytes
}

bool ReadLoadAverage(double out[3]) {
  std::ifstream in("/proc/loadavg");
  return static_cast<bool>(in >> out[0] >> out[1] >> out[2]);
}

}  // namespace deepinfer::tools
