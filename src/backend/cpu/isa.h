// Which SIMD instruction set the CPU kernels use.
//
// The level is chosen once per process, on the first kernel call: the best
// the CPU supports (CPUID via __builtin_cpu_supports), or the one
// BackendConfig::isa names (DEEPINFER_ISA, for tests and benchmarks). A
// forced level the CPU lacks falls back to the best supported one, with a
// warning. Thread-safe.
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

// The level `wanted` gives on this CPU: itself when supported, else (and for
// nullopt) BestSupportedIsa(); warns on a fallback.
Isa ResolveIsa(std::optional<Isa> wanted);

// The level the engine uses: ResolveIsa(ActiveBackendConfig().isa),
// computed on first call, then constant.
Isa ActiveIsa();

// ActiveIsa() once it has been computed, else nullopt.
std::optional<Isa> DecidedIsa();

}  // namespace deepinfer::cpu
