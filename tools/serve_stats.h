// The periodic stats line of `deepinfer serve` (--stats-interval S), in the
// spirit of vLLM's "Avg prompt throughput ..." log line:
//   stats: running 3, waiting 0, prompt 812.4 tok/s, generation 95.1 tok/s,
//          KV usage 12.5%, prefix-cache hits 40.0%
// Throughputs are over the last interval. A line is printed only when
// something happened since the previous one (or requests are live), so an
// idle server stays quiet.
//
// Thread-safety: Start / Stop from one thread; the reporter reads
// Engine::Metrics (thread-safe) on a thread of its own.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "engine/engine.h"

namespace deepinfer::tools {

// One line from two snapshots `seconds` apart ("" when nothing happened).
std::string FormatStatsLine(const EngineMetrics& before, const EngineMetrics& now, double seconds);

class StatsReporter {
 public:
  StatsReporter(const Engine& engine, double interval_seconds);
  ~StatsReporter();  // Stop()
  void Start();
  void Stop();

 private:
  void Run();

  const Engine& engine_;
  const double interval_seconds_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace deepinfer::tools
