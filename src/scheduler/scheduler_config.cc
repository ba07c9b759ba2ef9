#include "scheduler/scheduler_config.h"

#include <string>

namespace deepinfer {

Status SchedulerConfig::Validate() const {
  if (max_num_seqs < 1) {
    return InvalidArgument("--max-num-seqs must be >= 1, got " + std::to_string(max_num_seqs));
  }
  if (max_num_batched_tokens < 1) {
    return InvalidArgument("--max-num-batched-tokens must be >= 1, got " +
                           std::to_string(max_num_batched_tokens));
  }
  if (max_model_len < 2) {
    return InvalidArgument("--max-model-len must be >= 2, got " + std::to_string(max_model_len));
  }
  if (max_num_speculative_tokens < 0) {
    return InvalidArgument("--num-speculative-tokens must be >= 0, got " +
                           std::to_string(max_num_speculative_tokens));
  }
  return Status::Ok();
}

}  // namespace deepinfer
