// Memory for weights repacked at load (packed_weights.h): large chunks
// backed by transparent huge pages where the kernel offers them.
//
// Why: decode streams every weight byte once per token. With 4 KiB pages a
// 1 GB model is ~260k pages: a TLB miss every 4 KiB, and the hardware
// prefetchers stop at each page boundary. 2 MiB pages remove both. The
// pages are requested with madvise(MADV_HUGEPAGE) (the "madvise" THP mode
// common on servers) on a few large mappings, so the only memory lost is
// the untouched tail of the last chunk. BackendConfig::huge_pages = false
// (DEEPINFER_HUGE_PAGES=0) turns it off (plain 4 KiB pages, same layout).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace deepinfer::cpu {

class WeightArena {
 public:
  WeightArena() = default;
  ~WeightArena();  // unmaps every chunk
  WeightArena(const WeightArena&) = delete;
  WeightArena& operator=(const WeightArena&) = delete;

  // `bytes` of zeroed memory, 64-byte aligned, valid until the arena dies.
  // Throws std::bad_alloc when the system has no memory left.
  uint8_t* Allocate(size_t bytes);

  // Bytes mapped so far (reserved address space; pages count only once touched).
  size_t mapped_bytes() const;

 private:
  struct Chunk {
    void* map = nullptr;  // what mmap returned (for munmap)
    size_t map_size = 0;
    uint8_t* base = nullptr;  // 2 MiB aligned
    size_t size = 0, used = 0;
  };
  std::vector<Chunk> chunks_;
};

}  // namespace deepinfer::cpu
