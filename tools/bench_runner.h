// The measurement behind `deepinfer bench`: an offline benchmark of the
// engine's step runner (runner/step_runner.h: the forward pass with a paged
// KV cache, then the row sampler) with greedy sampling and no scheduler, so
// the work per step is that of greedy decoding.
//
//   prefill: one P-token prompt, chunked like the engine (prefill_chunk tokens
//            per step); its time is also the time to first token.
//   decode:  for each batch size B, B sequences get their own prompt prefilled
//            (untimed, packed into prefill_chunk-token steps), then G steps of
//            B tokens each are timed; throughput = B * G / time.
// Each is repeated `rounds` times; decode rounds rewrite positions P..P+G-1
// so the prompts are prefilled once per batch size.
//
// Thread-safety: runs on the caller's thread; the model must not be in use.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/model.h"

namespace deepinfer::tools {

struct BenchConfig {
  int64_t prompt_tokens = 512;   // P
  int64_t gen_tokens = 128;      // G
  std::vector<int64_t> batches;  // decode batch sizes, each >= 1
  int64_t prefill_chunk = 512;   // tokens per prefill Forward
  int64_t rounds = 1;
  int64_t block_size = 16;
  // All sequences share the prompt's full KV blocks (as a prefix-cache hit
  // would) instead of each prefilling its own: same decode work, far less
  // prefill time and KV memory at large batches.
  bool shared_prompt = false;
  uint64_t seed = 1;             // prompt token ids
  DType kv_dtype = DType::kF32;  // element type of the KV cache (--kv-cache-dtype, resolved)
  // --swa-full-kv: count sliding-window layers as holding every position in
  // max_concurrent_sequences (the timed run itself always keeps full KV).
  bool swa_full_kv = false;
};

// KV blocks the whole run needs (the largest batch), and their bytes.
int64_t BenchKvBlocks(const BenchConfig& config);
int64_t BenchKvBytes(const BenchConfig& config, const ModelConfig& model);
// KV cache bytes one token holds over all layers, K and V, in config.kv_dtype.
int64_t BenchKvBytesPerToken(const BenchConfig& config, const ModelConfig& model);
// How many sequences of P + G tokens fit at once in `kv_cache_memory` bytes
// of blocks of config.block_size tokens (each sequence holds its own blocks;
// with shared_prompt the prompt's full blocks are held once). For a model with
// sliding-window layers, unless swa_full_kv, as the engine holds them:
// single-layer pages, windowed layers at their decode bound
// (KvManager::MaxUnitsForSequence, docs/kv-cache.md), no prefix sharing.
int64_t MaxConcurrentSequences(const BenchConfig& config, const ModelConfig& model, int64_t kv_cache_memory);

// Checks the config against the model (context length) and the machine
// (KV memory vs MemAvailable). InvalidArgument / ResourceExhausted naming the
// limit that was exceeded.
Status ValidateBenchConfig(const BenchConfig& config, const ModelConfig& model);

struct BenchResult {
  std::vector<double> prefill_seconds;  // per round: one P-token prompt through to its logits
  // Per batch size, per round: seconds for the G decode steps.
  std::map<int64_t, std::vector<double>> decode_seconds;
  int64_t kv_cache_bytes = 0;
};

// Called between steps: phase name, steps done, steps in the phase.
using BenchProgress = std::function<void(const std::string& phase, int64_t done, int64_t total)>;

StatusOr<BenchResult> RunBench(Model& model, const BenchConfig& config, const BenchProgress& progress);

}  // namespace deepinfer::tools
