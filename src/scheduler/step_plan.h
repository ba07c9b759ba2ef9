// StepPlan: what one model step computes, as decided by Scheduler::PlanStep,
// and StepOutput: what the step sampled, handed back to Scheduler::OnStepSampled.
//
// Each ScheduledSequence is a run of consecutive positions of one request: a
// prefill chunk (prompt, or prompt + earlier outputs when recomputing after
// preemption), or a decode of the last token followed by num_draft_tokens
// drafts to verify. Under async scheduling the decode input of a request whose
// previous step is still running is kPlaceholderToken until that step is
// committed; Scheduler::PrepareLaunch fills it in.
//
// The model's view of a plan is runner/to_forward_batch.h (rows in plan order).
#pragma once

#include <cstdint>
#include <vector>

#include "kv/kv_types.h"
#include "scheduler/request.h"

namespace deepinfer {

inline constexpr int32_t kPlaceholderToken = -1;

struct ScheduledSequence {
  RequestId request_id = 0;
  int64_t start_pos = 0;             // positions before this are in the KV cache (or in flight)
  std::vector<int32_t> tokens;       // positions start_pos, start_pos + 1, ...
  int32_t num_draft_tokens = 0;      // tokens[size - num_draft_tokens, size) are drafts
  bool samples = false;              // reaches the end of the sequence: sample the next token(s)
  std::vector<BlockId> block_table;  // covers [0, start_pos + tokens.size())
  // Instead of block_table when the KV is per layer (hybrid sliding window):
  // one table per KV layer, kNoBlock where a window released a block.
  std::vector<std::vector<BlockId>> layer_block_tables;
  // Prompt logprobs (RequestParams::prompt_logprobs): the top k to report,
  // and the prompt tokens the chunk's first rows predict — row j (position
  // start_pos + j) predicts prompt_targets[j], the token at start_pos + j + 1.
  // Non-empty: the chunk computes every logit row (its sampling row, if any, last).
  int32_t prompt_logprobs = -1;
  std::vector<int32_t> prompt_targets;
};

struct StepPlan {
  uint64_t step_id = 0;
  std::vector<ScheduledSequence> seqs;
  // Perform, in order, before the forward pass — even if `seqs` ends up empty.
  std::vector<BlockCopy> block_copies;
  // Requests preempted while planning (their KV is gone; the engine may reset
  // per-request device state such as grammar matchers positioned past the cut).
  std::vector<RequestId> preempted;

  bool empty() const { return seqs.empty() && block_copies.empty(); }
  int64_t NumTokens() const;
};

// Sampled tokens of one scheduled sequence: the accepted tokens in order —
// one for a plain decode or last prefill chunk, 1..1+k when verifying k
// drafts (accepted drafts then the correction/bonus token), none when the
// sequence does not sample.
struct SequenceOutput {
  RequestId request_id = 0;
  // The sampled tokens (1 + accepted drafts), then `num_forced` forced ones.
  std::vector<int32_t> tokens;
  // Jump-forward: the last num_forced tokens were not sampled but are the
  // only continuation the request's constraint allows. They are appended as
  // known tokens whose KV later steps compute (like a prompt chunk). The
  // scheduler may drop them (see Scheduler::OnStepSampled); the runner then
  // re-derives its state from the plan's rows.
  int32_t num_forced = 0;
};

struct StepOutput {
  uint64_t step_id = 0;
  std::vector<SequenceOutput> seqs;  // any order; sequences dropped by the engine may be absent
};

}  // namespace deepinfer
