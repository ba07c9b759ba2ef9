// Request: one generation request as the scheduler tracks it.
//
// State machine:
//   kWaiting --admit--> kRunning --stop/length/abort--> kFinished
//   kRunning --preempt (KV freed, recompute later)--> kPreempted --admit--> kRunning
// kPreempted is a waiting state: the request sits in the waiting queue and, on
// re-admission, recomputes the KV of its prompt and the outputs it already has.
//
// Token accounting. `tokens` holds the prompt followed by the sampled outputs
// that are known. Under async scheduling a step may be planned before the
// previous step's token is sampled; such future tokens are *placeholders*:
// counted in NumTokens() but not yet in `tokens`. `num_computed_tokens` is
// optimistic: it includes positions scheduled in steps still in flight, and
// always equals the positions the KvManager has claimed for a running request.
//
// Ownership: the Scheduler owns live requests and mutates them; the engine
// reads them (Scheduler::FindRequest) between scheduler calls and receives
// finished requests by value.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "scheduler/request_id.h"

namespace deepinfer {

enum class RequestState : uint8_t { kWaiting, kRunning, kPreempted, kFinished };

// "waiting", "running", "preempted", "finished".
const char* RequestStateName(RequestState state);

// What the engine submits.
struct RequestParams {
  RequestId id = 0;
  std::vector<int32_t> prompt_tokens;   // non-empty
  int32_t max_tokens = 16;              // >= 1 output tokens
  std::vector<int32_t> stop_token_ids;  // include EOS here unless ignore_eos
  int32_t priority = 0;                 // lower is served first (priority policy only)
  // >= 0: every prompt position's logit row is computed (prompt logprobs with
  // the top k): no prefix-cache reuse, chunks of at most
  // kPromptLogprobsMaxChunk tokens while prompt rows remain.
  int32_t prompt_logprobs = -1;
};

// Bounds the f32 [chunk, vocab] logit rows one prompt-logprobs chunk needs
// (512 x a 152k vocabulary: 311 MB), whatever max_num_batched_tokens is.
inline constexpr int64_t kPromptLogprobsMaxChunk = 512;

struct Request {
  RequestId id = 0;
  int32_t priority = 0;
  int32_t prompt_logprobs = -1;  // RequestParams::prompt_logprobs
  uint64_t arrival_seq = 0;      // order of AddRequest; ties in priority go to the earlier
  int32_t max_tokens = 0;
  std::vector<int32_t> stop_token_ids;

  std::vector<int32_t> tokens;  // prompt then known outputs
  int64_t num_prompt_tokens = 0;

  RequestState state = RequestState::kWaiting;
  FinishReason finish_reason = FinishReason::kNone;

  int64_t num_computed_tokens = 0;      // positions scheduled so far (incl. in-flight steps)
  int64_t num_committed_kv_tokens = 0;  // positions whose KV a completed step wrote
  int32_t num_placeholders = 0;         // tokens in-flight steps will sample
  bool verification_in_flight = false;  // a step verifying drafts has not been committed

  // Speculative decoding hook: proposals continuing `tokens`, verified in the
  // next step that schedules this request (then cleared).
  std::vector<int32_t> draft_tokens;

  int64_t num_cached_prompt_tokens = 0;  // prefix-cache hit at first admission
  int32_t num_preemptions = 0;

  int64_t NumKnownTokens() const { return static_cast<int64_t>(tokens.size()); }
  int64_t NumTokens() const { return NumKnownTokens() + num_placeholders; }
  int64_t NumOutputTokens() const { return NumKnownTokens() - num_prompt_tokens; }
  int64_t NumUncomputedTokens() const { return NumTokens() - num_computed_tokens; }
  std::span<const int32_t> PromptTokens() const {
    return {tokens.data(), static_cast<size_t>(num_prompt_tokens)};
  }
  std::span<const int32_t> OutputTokens() const {
    return std::span<const int32_t>(tokens).subspan(static_cast<size_t>(num_prompt_tokens));
  }
  bool IsFinished() const { return state == RequestState::kFinished; }
  // Prompt logprobs: the prompt positions whose rows predict a prompt token
  // are [0, num_prompt_tokens - 1).
  bool WantsPromptRows() const { return prompt_logprobs >= 0 && num_computed_tokens < num_prompt_tokens - 1; }
};

}  // namespace deepinfer
