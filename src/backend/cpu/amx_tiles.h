// The tile configuration shared by the *_amx.cc kernels. Include only from
// files compiled with AMX flags.
//
// A thread's tile configuration is its own state: each kernel names the
// configuration it needs and UseTileConfig loads it only when this thread
// last loaded another one (ldtilecfg also zeroes every tile, so no kernel
// keeps tile state across calls). Configurations live in .rodata, not on
// the stack: a stack copy the compiler thinks dead is a known way to hand
// ldtilecfg garbage.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace deepinfer::cpu {

struct alignas(64) TileConfig {
  uint8_t palette_id;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];  // bytes per row of tile i
  uint8_t rows[16];    // rows of tile i
};

inline void UseTileConfig(const TileConfig& config) {
  thread_local const TileConfig* current = nullptr;
  if (current != &config) {
    _tile_loadconfig(&config);
    current = &config;
  }
}

}  // namespace deepinfer::cpu
