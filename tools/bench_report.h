// Output of `deepinfer bench`: the human table (stdout), the JSON file and
// the decode-throughput plot, all from one BenchReport.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "tools/bench_runner.h"

namespace deepinfer::tools {

// What was measured, with the context needed to read the numbers.
struct BenchReport {
  std::string model_path;
  std::string arch;
  std::string dtype;                   // of the layer-0 attention weights
  int64_t weight_bytes = 0;            // every tensor of the checkpoint
  int64_t weight_bytes_per_token = 0;  // read per decode step: all but the embedding (unless tied)
  // What one sequence's decode step reads: weight_bytes_per_token less the
  // routed experts it does not use (MoE: only experts_per_token of
  // num_experts per layer; equal to weight_bytes_per_token for dense models).
  int64_t active_weight_bytes_per_token = 0;
  int threads = 0;
  std::string kernels;  // the CPU kernel level that ran, e.g. "avx512+amx"
  // The matmul kernel per weight type of the model's matrices, e.g.
  // "q4_k=packed-int8-vnni q6_k=packed-int8-vnni f32=f32-fma" ("fallback":
  // rows dequantized to f32).
  std::string weight_kernels;
  BenchConfig config;
  BenchResult result;
  int64_t kv_bytes_per_token = 0;        // KV cache, all layers, K and V, in config.kv_dtype
  int64_t kv_cache_memory = 0;           // --kv-cache-memory; 0: not given
  int64_t max_concurrent_sequences = 0;  // of P + G tokens in kv_cache_memory (when given)
  int64_t peak_rss_bytes = 0;
  double load_avg[3] = {-1, -1, -1};  // /proc/loadavg at the end; -1 when unknown

  double PrefillTokensPerSecond() const;  // median over rounds
  double TtftMs() const;                  // median over rounds
  // Aggregate decode tokens/s at `batch`: median, min and max over rounds.
  double DecodeTokensPerSecond(int64_t batch) const;
  double DecodeTokensPerSecondMin(int64_t batch) const;
  double DecodeTokensPerSecondMax(int64_t batch) const;
};

std::string FormatBenchTable(const BenchReport& r);
std::string FormatBenchJson(const BenchReport& r);
Status WriteBenchPlot(const BenchReport& r, const std::string& path);

// Peak resident set size of this process in bytes (VmHWM; getrusage fallback).
int64_t PeakRssBytes();
// 1/5/15-minute load averages; false when /proc/loadavg is unreadable.
bool ReadLoadAverage(double out[3]);

}  // namespace deepinfer::tools
