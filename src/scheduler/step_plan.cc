#include "scheduler/step_plan.h"

namespace deepinfer {

int64_t StepPlan::NumTokens() const {
  int64_t n = 0;
  for (const auto& s : seqs) {
    n += static_cast<int64_t>(s.tokens.size());
  }
  return n;
}

}  // namespace deepinfer
