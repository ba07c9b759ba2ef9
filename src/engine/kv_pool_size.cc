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
  int64_t budget = config.kv_cache_memory_bytes;
  if (budget == 0) {
    if (mem_available < 0) {
      return Unavailable("cannot read MemAvailable from /proc/meminfo; give --kv-cache-memory");
    }
    budget = static_cast<int64_t>(static_cast<double>(mem_available) * config.kv_cache_memory_fraction);
  }
  const int64_t blocks_per_seq = (config.scheduler.max_model_len + config.block_size - 1) / config.block_size;
  // One full sequence plus a copy-on-write block, as Scheduler::AddRequest requires.
  const int64_t min_blocks = blocks_per_seq + 1;
  int64_t blocks = budget / block_bytes;
  if (blocks < min_blocks) {
    return ResourceExhausted("KV cache budget of " + std::to_string(budget) + " bytes holds " +
                             std::to_string(blocks) + " blocks; one sequence of max_model_len " +
                             std::to_string(config.scheduler.max_model_len) + " tokens needs " +
                             std::to_string(min_blocks) + " (" + std::to_string(min_blocks * block_bytes) +
                             " bytes): raise --kv-cache-memory, lower --max-model-len or use a narrower "
                             "--kv-cache-dtype");
  }
  // Twice the most the running batch can reference: the rest is prefix cache.
  const int64_t useful = 2 * static_cast<int64_t>(config.scheduler.max_num_seqs) * (blocks_per_seq + 1);
  blocks = std::min(blocks, std::max(useful, min_blocks));
  blocks = std::min<int64_t>(blocks, std::numeric_limits<int32_t>::max() / 2);
  return static_cast<int32_t>(blocks);
}

}  // namespace deepinfer
