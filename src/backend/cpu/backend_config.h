// The CPU backend's settings: which ISA level its kernels use, whether the
// AMX kernels may run, whether packed weights ask for huge pages. One
// struct, parsed once at start-up (BackendConfigFromEnv: the backend's only
// environment read) and applied once (ApplyBackendConfig) by the program's
// entry point - `deepinfer`'s main, a benchmark's main, the tests' main -
// before the first kernel runs. Nothing below reads the environment.
//
// The `deepinfer` CLI also takes --isa, --no-amx and --no-huge-pages on
// every command (tools/main.cc), over the environment.
// Environment variables (docs/kernels.md):
//   DEEPINFER_ISA=scalar|avx2|avx512  force a level (tests, benchmarks)
//   DEEPINFER_AMX=0                   the AVX-512 kernels instead of AMX
//   DEEPINFER_HUGE_PAGES=0            packed weights on plain 4 KiB pages
#pragma once

#include <optional>

#include "backend/cpu/isa.h"

namespace deepinfer::cpu {

struct BackendConfig {
  // The ISA level; nullopt: the best the CPU supports. A level the CPU lacks
  // falls back to the best one, with a warning (ActiveIsa).
  std::optional<Isa> isa;
  bool amx = true;         // AMX kernels where the CPU and OS allow them (amx.h)
  bool huge_pages = true;  // madvise(MADV_HUGEPAGE) on the packed weights' memory (weight_arena.h)
};

// The settings the DEEPINFER_* variables above name; unset variables keep
// the defaults, an unknown ISA name is ignored with a warning.
BackendConfig BackendConfigFromEnv();

// Makes `config` the process's backend settings. Call once, at start-up,
// before any kernel runs: the ISA level is fixed by the first kernel call
// (a later call that would change it is a checked error). Without a call the
// defaults of BackendConfig apply. Not thread-safe with running kernels.
void ApplyBackendConfig(const BackendConfig& config);

// The settings in effect (the defaults until ApplyBackendConfig). Thread-safe.
const BackendConfig& ActiveBackendConfig();

}  // namespace deepinfer::cpu
