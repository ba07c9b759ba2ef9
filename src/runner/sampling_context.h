// SamplingContext: the runner's state for one request — its sampling
// parameters and constraint matcher — beside the one record of its tokens,
// the scheduler's Request, which the runner reads (never a copy of it).
// Created at Submit; the engine drops its reference when the request ends, a
// step still executing keeps it (and the shared Request) alive.
//
// Thread-safety: after Submit only the runner thread touches the context (the
// mask helper too, but only while the runner waits for the forward pass), so
// no lock is needed. The Request's tokens are read on the runner thread under
// Scheduler::ShareRequest's contract: they change only at commits, which
// never overlap a running step; the step's launch orders those writes before
// its reads.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "sampling/logprobs.h"
#include "sampling/sampler.h"
#include "sampling/token_constraint.h"
#include "scheduler/request.h"

namespace deepinfer {

struct SamplingContext {
  RequestId id = 0;
  SamplingParams params;  // seed resolved at Submit
  uint32_t draw_stream = 0;
  int32_t logprobs = -1;  // -1: none; else top-k alternatives to report
  // Prompt and committed outputs (penalties, the constraint, drafters). At a
  // sampling row's launch it holds exactly the tokens before the row's
  // first sampled position.
  std::shared_ptr<const Request> request;
  std::unique_ptr<TokenConstraint> constraint;  // null: unconstrained
  // Outputs the constraint has accepted: the committed ones after a row's
  // Prepare, plus what the row then samples (and forces).
  int64_t constraint_accepted = 0;
  // Outputs the request may produce: min(max_tokens, max_model_len - prompt).
  // A constrained request steers to a shortest valid ending when it runs out.
  int64_t output_budget = 0;
  // The request's latest proposal of drafts sampled for rejection sampling
  // (DraftProposal::probs): its tokens from position draft_position on and
  // the drafter's distribution at each. Runner thread only.
  int64_t draft_position = -1;
  std::vector<int32_t> draft_tokens;
  std::vector<float> draft_probs;      // f32 [draft_tokens.size(), vocab]
  bool cached_tokens_counted = false;  // engine thread: prefix hit added to metrics
  // Engine thread: when a step of the request was first launched (the end
  // of its queue time; default until then).
  std::chrono::steady_clock::time_point first_scheduled{};
  // Engine thread, GenerationRequest::prompt_logprobs: the entries collected
  // so far (entry i: prompt token i + 1), until the first output event takes them.
  int32_t prompt_logprobs = -1;
  std::vector<RankedTokenLogprob> prompt_logprob_entries;
  bool prompt_logprobs_sent = false;
};

}  // namespace deepinfer
