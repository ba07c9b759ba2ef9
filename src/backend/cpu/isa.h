// Which SIMD instruction set the CPU kernels use.
//
// The level is chosen once per process: the best the CPU supports (CPUID via
// __builtin_cpu_supports), or the one named by DEEPINFER_ISA=scalar|avx2|avx512
// (for tests and benchmarks). A forced level the CPU lacks falls back to the
// best supported one, with a warning. Thread-safe.
#pragma once

#include <optional>
#include <string_view>

namespace deepinfer::cpu {

enum class Isa {
  kScalar,  // portable C++, the reference every other level is tested against
  kAvx2,    // AVX2 + FMA + F16C
  kAvx512,  // AVX-512 F/BW/DQ/VL + VNNI + BF16 (Zen4/5, Sapphire Rapids)
};

const char* IsaName(Isa isa);
std::optional<Isa> IsaFromName(std::string_view name);

// True when this CPU can execute `isa`'s kernels.
bool CpuSupports(Isa isa);

// The best level this CPU supports.
Isa BestSupportedIsa();

// The level the engine uses: DEEPINFER_ISA if set (and supported), else
// BestSupportedIsa(). Computed on first call, then constant.
Isa ActiveIsa();

}  // namespace deepinfer::cpu
