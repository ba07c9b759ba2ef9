#include "engine/kv_pool_size.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include "engine/engine.h"

namespace deepinfer {

int64_t MemAvailableBytes(const std::string& meminfo_path) {
  std::ifstream in(meminfo_path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    int64_t kib = -1;
    if (fields >> key >> kib && key == "MemAvailable:" && kib >= 0) return kib * 1024;
  }
  return -1;
}

StatusOr<int32_t> PlanKvBlocks(const EngineConfig& config, int64_t bytes_per_token, int64_t mem_available) {
  if (bytes_per_token <= 0) return InvalidArgument("model has no KV cache (0 bytes per token)");
  const int64_t block_bytes = bytes_per_token * config.block_size;
  const int64_t blocks_per_seq = (config.scheduler.max_model_len + config.block_size - 1) / config.block_size;
  // One full sequence plus a copy-on-write block, as Scheduler::AddRequest requires.
  const int64_t min_blocks = blocks_per_seq + 1;
  // What the running batch can reference at once: max_num_seqs sequences of
  // max_model_len tokens.
  const int64_t demand = static_cast<int64_t>(config.scheduler.max_num_seqs) * (blocks_per_seq + 1);
  int64_t budget = config.kv_cache_memory_bytes;
  int64_t blocks = 0;
  if (budget == 0) {
    // The default: the demand, capped by a fraction of the memory free now.
    if (mem_available < 0) {
      return Unavailable("cannot read MemAvailable from /proc/meminfo; give --kv-cache-memory");
    }
    budget = static_cast<int64_t>(static_cast<double>(mem_available) * config.kv_cache_memory_fraction);
    blocks = std::min(budget / block_bytes, demand);
  } else {
    // Given bytes: up to twice the demand, the rest being prefix cache.
    blocks = std::min(budget / block_bytes, std::max(2 * demand, min_blocks));
  }
  if (blocks < min_blocks) {
    return ResourceExhausted("KV cache budget of " + std::to_string(budget) + " bytes holds " +
                             std::to_string(budget / block_bytes) +
                             " blocks; one sequence of max_model_len " +
                             std::to_string(config.scheduler.max_model_len) + " tokens needs " +
                             std::to_string(min_blocks) + " (" + std::to_string(min_blocks * block_bytes) +
                             " bytes): raise --kv-cache-memory, lower --max-model-len or use a narrower "
                             "--kv-cache-dtype");
  }
  blocks = std::min<int64_t>(blocks, std::numeric_limits<int32_t>::max() / 2);
  return static_cast<int32_t>(blocks);
}

}  // namespace deepinfer
