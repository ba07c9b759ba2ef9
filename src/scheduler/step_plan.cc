#include "scheduler/step_plan.h"

#include <algorithm>

#include "core/check.h"

namespace deepinfer {

int64_t StepPlan::NumTokens() const {
  int64_t n = 0;
  for (const auto& s : seqs) {
    n += static_cast<int64_t>(s.tokens.size());
  }
  return n;
}

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
    if (!s.samples) {
      chunk.logits = SequenceChunk::Logits::kNone;
    } else if (s.num_draft_tokens > 0) {
      chunk.logits = SequenceChunk::Logits::kAll;
    } else {
      chunk.logits = SequenceChunk::Logits::kLast;
    }
    batch.seqs.push_back(std::move(chunk));
  }
  return batch;
}

}  // namespace deepinfer
