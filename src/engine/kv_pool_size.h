// How many KV blocks the engine allocates. By default: what max_num_seqs
// sequences of max_model_len tokens need (each plus a copy-on-write block),
// capped at kv_cache_memory_fraction of the memory available at start-up
// (/proc/meminfo MemAvailable), so a small model on a big machine does not
// zero gigabytes it can never use. With --kv-cache-memory: those bytes, up to
// twice that demand (the rest holds cached prefixes).
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace deepinfer {

struct EngineConfig;

// MemAvailable in bytes; -1 when /proc/meminfo cannot be read.
int64_t MemAvailableBytes(const std::string& meminfo_path = "/proc/meminfo");

// ResourceExhausted when the budget holds less than one sequence of
// max_model_len tokens (the message names the flag to raise).
StatusOr<int32_t> PlanKvBlocks(const EngineConfig& config, int64_t bytes_per_token, int64_t mem_available);

}  // namespace deepinfer
