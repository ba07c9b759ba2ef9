#include "tools/serve_stats.h"

#include <chrono>
#include <cstdio>

namespace deepinfer::tools {

std::string FormatStatsLine(const EngineMetrics& before, const EngineMetrics& now, double seconds) {
  const int64_t prompt = now.prompt_tokens_total - before.prompt_tokens_total;
  const int64_t generated = now.generation_tokens_total - before.generation_tokens_total;
  const bool live = now.num_requests_running > 0 || now.num_requests_waiting > 0;
  if (!live && prompt == 0 && generated == 0) return "";
  const double s = seconds > 0 ? seconds : 1.0;
  char buf[256];
  std::snprintf(
      buf, sizeof buf,
      "stats: running %lld, waiting %lld, prompt %.1f tok/s, generation %.1f tok/s, KV usage %.1f%%, "
      "prefix-cache hits %.1f%%",
      static_cast<long long>(now.num_requests_running), static_cast<long long>(now.num_requests_waiting),
      static_cast<double>(prompt) / s, static_cast<double>(generated) / s, 100.0 * now.kv_cache_usage_ratio,
      100.0 * now.prefix_cache_hit_ratio);
  return buf;
}

StatsReporter::StatsReporter(const Engine& engine, double interval_seconds)
    : engine_(engine), interval_seconds_(interval_seconds) {}

StatsReporter::~StatsReporter() { Stop(); }

void StatsReporter::Start() {
  thread_ = std::thread([this] { Run(); });
}

void StatsReporter::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StatsReporter::Run() {
  using Clock = std::chrono::steady_clock;
  EngineMetrics before = engine_.Metrics();
  Clock::time_point last = Clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  const auto interval = std::chrono::duration<double>(interval_seconds_);
  while (!cv_.wait_for(lock, interval, [this] { return stop_; })) {
    EngineMetrics now = engine_.Metrics();
    const Clock::time_point t = Clock::now();
    const std::string line = FormatStatsLine(before, now, std::chrono::duration<double>(t - last).count());
    if (!line.empty()) {
      std::fprintf(stderr, "deepinfer serve: %s\n", line.c_str());
      std::fflush(stderr);
    }
    before = std::move(now);
    last = t;
  }
}

}  // namespace deepinfer::tools
