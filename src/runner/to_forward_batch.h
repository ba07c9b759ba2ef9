// ToForwardBatch: the model's view of a launched StepPlan — the one place a
// scheduler plan turns into a model batch, so the scheduler stays free of
// model types.
//
// Row order contract: the plan's sequence order is kept, so the model's logit
// rows come in that order (ForwardBatch::NumLogitRows).
#pragma once

#include "model/forward_batch.h"
#include "scheduler/step_plan.h"

namespace deepinfer {

// REQUIRES: placeholders were resolved (Scheduler::PrepareLaunch); an
// unresolved one is a bug and aborts. Logits: kLast for a sampling row, kAll
// when verifying drafts or computing prompt logprobs (prompt_targets), kNone
// for a mid-prompt chunk.
ForwardBatch ToForwardBatch(const StepPlan& plan);

}  // namespace deepinfer
