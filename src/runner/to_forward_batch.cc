#include "runner/to_forward_batch.h"

#include <algorithm>

#include "core/check.h"

namespace deepinfer {

ForwardBatch ToForwardBatch(const StepPlan& plan) {
  ForwardBatch batch;
  batch.seqs.reserve(plan.seqs.size());
  for (const ScheduledSequence& s : plan.seqs) {
    DI_CHECK_MSG(std::find(s.tokens.begin(), s.tokens.end(), kPlaceholderToken) == s.tokens.end(),
                 "unresolved placeholder: call Scheduler::PrepareLaunch first");
    SequenceChunk chunk;
    chunk.tokens = s.tokens;
    chunk.start_pos = s.start_pos;
    chunk.block_table = s.block_table;
    chunk.layer_block_tables = s.layer_block_tables;
    if (!s.samples && s.prompt_targets.empty()) {
      chunk.logits = SequenceChunk::Logits::kNone;
    } else if (s.num_draft_tokens > 0 || !s.prompt_targets.empty()) {
      // Drafts to verify, or prompt logprobs (the sampling row, if any, is the last).
      chunk.logits = SequenceChunk::Logits::kAll;
    } else {
      chunk.logits = SequenceChunk::Logits::kLast;
    }
    batch.seqs.push_back(std::move(chunk));
  }
  return batch;
}

}  // namespace deepinfer
