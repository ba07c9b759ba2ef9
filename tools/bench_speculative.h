// `deepinfer bench --speculative-method M`: decode throughput over
// concurrency with no speculation, the fixed schedule and the adaptive one,
// through the engine (speculation needs its scheduler: drafts, verification
// rows, rollbacks), plus the calibration per depth (the reliability diagram).
//
// Per round, for each concurrency C and each schedule in turn (alternating,
// so a noisy machine hurts them alike): a fresh engine, C requests of the
// same prompt (P random tokens, or the --prompt text) submitted at once,
// greedy, G tokens each; decode tokens/s counts the tokens after every
// request produced its first one, over the time from then to the last finish.
//
// Thread-safety: runs on the caller's thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "core/status.h"
#include "engine/engine.h"

namespace deepinfer::tools {

struct SpecBenchConfig {
  EngineConfig engine;               // .speculative and .scheduler.max_num_speculative_tokens from the flags
  std::vector<int64_t> concurrency;  // each >= 1
  int64_t prompt_tokens = 512;       // random prompt length when `prompt` is empty
  std::vector<int32_t> prompt;       // the --prompt text's tokens
  int64_t gen_tokens = 128;
  int64_t rounds = 1;
  uint64_t seed = 1;
};

struct SpecBenchPoint {
  std::string schedule;  // "none", "fixed" or "adaptive"
  int64_t concurrency = 0;
  std::vector<double> tokens_per_second;          // per round
  int64_t draft_tokens = 0, accepted_tokens = 0;  // summed over rounds
  // The last round's calibration per depth (EngineMetrics::spec_*_acceptance).
  std::vector<double> predicted, observed;
};

using SpecBenchProgress = std::function<void(const std::string& what, int64_t done, int64_t total)>;

StatusOr<std::vector<SpecBenchPoint>> RunSpeculativeBench(const std::string& model_path,
                                                          const LoadOptions& load,
                                                          const SpecBenchConfig& config,
                                                          const SpecBenchProgress& progress);

// The human table (one line per concurrency: each schedule's median tokens/s,
// its ratio to none, acceptance) and the calibration per depth.
std::string FormatSpecBenchTable(const SpecBenchConfig& config, const std::vector<SpecBenchPoint>& points);
// The JSON object bench --json writes under "speculative".
std::string FormatSpecBenchJson(const SpecBenchConfig& config, const std::vector<SpecBenchPoint>& points);
// PNG charts: tokens/s vs concurrency at `path`, the reliability diagram
// (observed vs predicted acceptance per depth, with the diagonal) beside it
// as NAME-reliability.png.
Status WriteSpecBenchPlots(const std::vector<SpecBenchPoint>& points, const std::string& path);

}  // namespace deepinfer::tools
