// The few facts about a loaded checkpoint that start-up summaries print
// (`deepinfer serve`): taken before the model moves into the engine.
#pragma once

#include <cstdint>
#include <string>

#include "checkpoint/checkpoint.h"

namespace deepinfer::tools {

struct LoadedModelFacts {
  std::string format;         // "gguf" / "hf"
  std::string architecture;   // ModelConfig::arch
  int64_t parameters = 0;     // elements over every tensor of the checkpoint
  std::string weight_dtypes;  // "bf16 x201, f32 x45"
  int64_t context = 0;        // max_position
};

LoadedModelFacts FactsOf(const LoadedModel& loaded);

// 1234 -> "1.23K", 1100048384 -> "1.10B".
std::string HumanCount(int64_t n);

}  // namespace deepinfer::tools
