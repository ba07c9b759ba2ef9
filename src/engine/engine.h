// Engine: the serving core. Owns the model, the KV cache, the scheduler and a
// step loop on its own threads; callers submit token-level requests and get
// their output as a stream of events. The HTTP server (src/server) sees only
// this header and engine_metrics.h: plain configuration, request and event
// types, no model, KV cache or scheduler internals (those are behind
// engine_impl.h). scripts/check_includes.py rejects any other engine header
// outside src/engine.
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

#include "core/status.h"
#include "engine/engine_metrics.h"
#include "model/kv_cache_dtype.h"
#include "model/model_config.h"
#include "sampling/logprobs.h"
#include "sampling/sampler.h"
#include "sampling/token_constraint.h"
#include "scheduler/request_id.h"
#include "scheduler/scheduler_config.h"

namespace deepinfer {

struct LoadedModel;  // checkpoint/checkpoint.h: what Create takes
class Tokenizer;

// Speculative decoding (docs/speculative.md). The number of drafts per
// request and step is at most scheduler.max_num_speculative_tokens
// (--num-speculative-tokens); verification is lossless, so these settings
// change speed, never output (except --spec-sampling rejection, which keeps
// only the output distribution).
struct SpeculativeConfig {
  std::string method;       // --speculative-method: "" (off), "ngram", "mtp" or "draft"
  bool adaptive = true;     // --spec-schedule adaptive (default) | fixed (verify every proposed draft)
  std::string draft_model;  // --draft-model PATH: method "draft"'s model (the target's vocabulary)
  // --spec-sampling: how a draft model's drafts for sampled requests are made
  // and verified. false ("identical", default): drawn with the target's own
  // uniforms and kept while the target's sample equals them, so the output
  // is token for token the one without speculation. true ("rejection"):
  // drawn independently and verified by rejection sampling —
  // distribution-exact, not the same tokens (runner/draft_model_drafter.h).
  bool rejection_sampling = false;
  // --mtp-weights int8 (default) | stored: the MTP drafter's matrices
  // quantized to int8 at load, or as the checkpoint stores them
  // (model/mtp.h, MtpMatrices). Drafts only: the output is the same.
  bool mtp_int8 = true;
};

struct EngineConfig {
  SchedulerConfig scheduler;  // --max-num-seqs, --max-num-batched-tokens, --max-model-len, policy
  SpeculativeConfig speculative;
  int32_t block_size = 16;  // --block-size
  // --kv-cache-memory: bytes for the KV pool; 0 = what max_num_seqs sequences
  // of max_model_len tokens need, at most kv_cache_memory_fraction of the
  // memory available at start-up (engine/kv_pool_size.h).
  int64_t kv_cache_memory_bytes = 0;
  double kv_cache_memory_fraction = 0.25;
  // --kv-cache-dtype: element type of the KV pool (bytes per token scale with
  // it). f32 is the reference; Create resolves kAuto (config() reports the type used).
  KvCacheDType kv_cache_dtype = KvCacheDType::kF32;
  bool enable_prefix_cache = true;  // --no-prefix-cache turns it off
  // --swa-full-kv: sliding-window layers keep KV for every position (the
  // baseline). Off: a model with sliding-window layers gets per-layer,
  // window-bounded KV (docs/kv-cache.md).
  bool swa_full_kv = false;
  // Window-bounded KV with prefix caching: the most tokens a prefix hit
  // recomputes (spacing of the windowed checkpoints along a cached prefix;
  // docs/kv-cache.md). 0: the environment's DEEPINFER_SWA_REPLAY_TOKENS, else
  // 140. Below a window is an error at Create.
  int64_t swa_replay_tokens = 0;
  bool async_scheduling = true;  // --no-async-scheduling for comparison
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

  // -1 none; 0 <= k <= kMaxLogprobs: per prompt token after the first, its
  // logprob given the tokens before it plus the top k (vLLM's prompt_logprobs),
  // computed like `deepinfer score`. Such a request does not reuse the
  // prefix cache (cached positions have no logits): it computes its whole prompt.
  int32_t prompt_logprobs = -1;
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

  // With prompt_logprobs, on the first event with tokens only: one entry per
  // prompt token but the first (entry i: prompt token i + 1).
  std::vector<RankedTokenLogprob> prompt_logprobs;
};

using EventCallback = std::function<void(GenerationEvent)>;

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
