// SchedulerConfig: the step policy's limits, validated once at start-up.
#pragma once

#include <cstdint>

#include "core/status.h"

namespace deepinfer {

enum class SchedulingPolicy : uint8_t {
  kFcfs,      // admission by arrival order
  kPriority,  // by RequestParams::priority (lower first), then arrival; may preempt lower priorities
};

struct SchedulerConfig {
  int32_t max_num_seqs = 256;             // --max-num-seqs: running requests at once
  int64_t max_num_batched_tokens = 2048;  // --max-num-batched-tokens: tokens per step
  int64_t max_model_len = 4096;           // --max-model-len: prompt + output
  SchedulingPolicy policy = SchedulingPolicy::kFcfs;
  int32_t max_num_speculative_tokens = 0;  // drafts verified per request per step (0: speculation off)

  // InvalidArgument naming the flag when a limit is out of range.
  Status Validate() const;
};

}  // namespace deepinfer
