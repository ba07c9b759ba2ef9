#include "backend/cpu/weight_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <new>

#include "backend/cpu/backend_config.h"

namespace deepinfer::cpu {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
// Big enough that a model needs a handful of chunks, small enough that the
// untouched tail of the last one is address space, not memory.
constexpr size_t kChunkBytes = size_t{256} << 20;
constexpr size_t kAlignment = 64;

size_t RoundUp(size_t n, size_t m) { return (n + m - 1) / m * m; }

}  // namespace

WeightArena::~WeightArena() {
  for (const Chunk& c : chunks_) munmap(c.map, c.map_size);
}

uint8_t* WeightArena::Allocate(size_t bytes) {
  bytes = RoundUp(std::max<size_t>(bytes, 1), kAlignment);
  if (chunks_.empty() || chunks_.back().size - chunks_.back().used < bytes) {
    Chunk c;
    c.size = RoundUp(std::max(bytes, kChunkBytes), kHugePage);
    // One huge page of slack so the chunk can start on a 2 MiB boundary
    // (a huge page maps only an aligned 2 MiB range).
    c.map_size = c.size + kHugePage;
    c.map = mmap(nullptr, c.map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (c.map == MAP_FAILED) throw std::bad_alloc();
    // Aligning a fresh mapping, not deriving a pointer to some other object:
    // NOLINTNEXTLINE(performance-no-int-to-ptr)
    c.base = reinterpret_cast<uint8_t*>(RoundUp(reinterpret_cast<uintptr_t>(c.map), kHugePage));
    // Advisory: without THP support this fails and 4 KiB pages are used.
    if (ActiveBackendConfig().huge_pages) madvise(c.base, c.size, MADV_HUGEPAGE);
    chunks_.push_back(c);
  }
  Chunk& c = chunks_.back();
  uint8_t* p = c.base + c.used;  // anonymous mappings start zeroed
  c.used += bytes;
  return p;
}

size_t WeightArena::mapped_bytes() const {
  size_t total = 0;
  for (const Chunk& c : chunks_) total += c.map_size;
  return total;
}

}  // namespace deepinfer::cpu
