// Engine: the serving core. Owns the model, the KV cache, the scheduler and a
// step loop on its own threads; callers submit token-level requests and get
// their output as a stream of events. The HTTP server (src/server) sees only
// this header.
//
// Usage:
//   DI_ASSIGN_OR_RETURN(auto engine, Engine::Create(std::move(loaded), config));
//   GenerationRequest req; req.prompt_tokens = ...; req.max_tokens = 64;
//   DI_ASSIGN_OR_RETURN(RequestId id, engine->Submit(std::move(req),
//       [](GenerationEvent ev) { /* stream ev.text; ev.finish_reason ends it */ }));
//   engine->Abort(id);   // client went away
//
// Threads: Submit/Abort/Metrics/Shutdown are thread-safe. Event callbacks run
// on the engine's output thread, in order per request, never concurrently
// with each other; they must not block (post to your own executor) and may
// call Abort. After the final event (finish_reason != kNone) no further
// event arrives for that id.
//
// Errors from Submit (nothing queued): InvalidArgument for bad parameters,
// OutOfRange when prompt + max_tokens exceeds max_model_len or the KV pool,
// ResourceExhausted when the waiting queue is full, Unavailable when shutting
// down.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "core/status.h"
#include "model/kv_cache_dtype.h"
#include "model/model.h"
#include "sampling/logprobs.h"
#include "sampling/sampler.h"
#include "sampling/token_constraint.h"
#include "scheduler/request.h"
#include "scheduler/scheduler_config.h"

namespace deepinfer {

class Tokenizer;

struct EngineConfig {
  SchedulerConfig scheduler;  // --max-num-seqs, --max-num-batched-tokens, --max-model-len, policy
  int32_t block_size = 16;    // --block-size
  // --kv-cache-memory: bytes for the KV pool; 0 = kv_cache_memory_fraction of
  // the memory available at start-up.
  int64_t kv_cache_memory_bytes = 0;
  double kv_cache_memory_fraction = 0.25;
  // --kv-cache-dtype: element type of the KV pool (bytes per token scale with
  // it). f32 is the reference; Create resolves kAuto (config() reports the type used).
  KvCacheDType kv_cache_dtype = KvCacheDType::kF32;
  bool enable_prefix_cache = true;  // --no-prefix-cache turns it off
  bool async_scheduling = true;     // --no-async-scheduling for comparison
  // Jump-forward for constrained requests (--no-jump-forward for comparison):
  // when the constraint allows a single continuation after a sampled token,
  // its tokens are appended without sampling and computed in one chunk.
  // Not applied to requests that ask for logprobs (forced tokens have none).
  bool jump_forward = true;
  int32_t max_waiting_requests = 4096;  // Submit beyond this: ResourceExhausted (HTTP 429)
  Status Validate() const;
};

inline constexpr int32_t kMaxLogprobs = 20;  // like vLLM's default max_logprobs

struct GenerationRequest {
  std::vector<int32_t> prompt_tokens;  // non-empty
  SamplingParams sampling;
  // Makes sampling reproducible (alone, in any batch, after preemption, across
  // restarts). Unset: sampling.seed if it is non-zero (callers that resolve
  // the seed themselves), else a random seed drawn at Submit. Prefer this
  // field: it is the only way to ask for seed 0.
  std::optional<uint64_t> seed;
  // Separates the random streams of several choices that share one seed
  // (OpenAI n > 1: choice i uses draw_stream i).
  uint32_t draw_stream = 0;
  int32_t max_tokens = 16;
  std::vector<int32_t> stop_token_ids;  // in addition to the model's end-of-generation ids
  std::vector<std::string> stop;        // stop strings; the text ends before the match
  bool ignore_eos = false;
  int32_t logprobs = -1;  // -1 none; 0 <= k <= kMaxLogprobs: the sampled token's logprob plus the top k
  int32_t priority = 0;   // lower first, under the priority policy
  std::unique_ptr<TokenConstraint> constraint;  // structured output; null = none
};

struct GenerationEvent {
  RequestId id = 0;
  std::vector<int32_t> token_ids;                    // tokens new since the previous event
  std::string text;                                  // their text (complete UTF-8; stop strings cut off)
  std::vector<TokenLogprob> logprobs;                // one per new token when requested
  FinishReason finish_reason = FinishReason::kNone;  // set on the final event
  std::string error;                                 // non-empty: the request failed (final event)
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;     // so far
  int64_t cached_prompt_tokens = 0;  // prompt tokens served from the prefix cache
};

using EventCallback = std::function<void(GenerationEvent)>;

// Fixed-bucket histogram (Prometheus "le" buckets, cumulative when rendered).
struct Histogram {
  std::vector<double> upper_bounds;  // ascending; +Inf implied
  std::vector<int64_t> counts;       // per bucket (not cumulative), size upper_bounds + 1
  double sum = 0.0;
  int64_t count = 0;
};

struct EngineMetrics {
  int64_t num_requests_running = 0;
  int64_t num_requests_waiting = 0;
  double kv_cache_usage_ratio = 0.0;  // blocks held by live requests / pool
  int64_t kv_blocks_total = 0;
  int64_t kv_blocks_in_use = 0;         // referenced by live requests
  double prefix_cache_hit_ratio = 0.0;  // cached prompt tokens / prompt tokens, over all admitted
  int64_t prompt_tokens_total = 0;
  int64_t generation_tokens_total = 0;
  int64_t requests_finished_total = 0;
  int64_t num_preemptions_total = 0;
  int64_t steps_total = 0;
  double executor_idle_seconds_total = 0.0;  // time the runner waited between steps while work existed
  double executor_busy_seconds_total = 0.0;
  int64_t spec_draft_tokens_total = 0;
  int64_t spec_accepted_tokens_total = 0;
  Histogram time_to_first_token_seconds;
  Histogram time_per_output_token_seconds;
  // MoE models: tokens routed to each expert since load, [layer][expert]
  // (Model::ExpertLoad(); an empty row for a dense layer). Each token of a
  // MoE layer counts once for each of its top-k experts. Empty for dense models.
  std::vector<std::vector<int64_t>> expert_tokens_total;
};

class Engine {
 public:
  // Takes the model; sizes the KV pool; starts the loop threads.
  static StatusOr<std::unique_ptr<Engine>> Create(LoadedModel model, const EngineConfig& config);
  virtual ~Engine() = default;  // implementations stop their threads; live requests end with kAbort

  virtual StatusOr<RequestId> Submit(GenerationRequest request, EventCallback on_event) = 0;
  // Ends a live request (final event kAbort) and frees its KV. No-op for an
  // unknown or finished id.
  virtual void Abort(RequestId id) = 0;
  virtual EngineMetrics Metrics() const = 0;
  // Stops accepting requests (Submit -> Unavailable). drain: returns once
  // every live request finished; otherwise aborts them first. Every final
  // event has been delivered when it returns. Not from an event callback.
  virtual void Shutdown(bool drain) = 0;

  virtual const ModelConfig& model_config() const = 0;
  virtual const Tokenizer& tokenizer() const = 0;
  virtual const EngineConfig& config() const = 0;
};

}  // namespace deepinfer
