#include "backend/cpu/isa.h"

#include <atomic>
#include <string>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "backend/cpu/backend_config.h"
#include "core/log.h"

namespace deepinfer::cpu {

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return "scalar";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
  }
  return "?";
}

std::optional<Isa> IsaFromName(std::string_view name) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    if (name == IsaName(isa)) return isa;
  }
  return std::nullopt;
}

#if defined(__x86_64__) || defined(__i386__)
namespace {
// CPUID leaf 1, ECX bit F16C. Asked directly: clang before 15 rejects "f16c"
// in __builtin_cpu_supports. Asked once: CpuSupports runs on every MatMul
// (KernelsFor), and under a hypervisor each cpuid traps to it (~3 us, 5% of
// a 1024-row GEMV's profile).
bool CpuHasF16c() {
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
  }();
  return has;
}
}  // namespace
#endif

bool CpuSupports(Isa isa) {
#if defined(__x86_64__) || defined(__i386__)
  switch (isa) {
    case Isa::kScalar:
      return true;
    case Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && CpuHasF16c();
    case Isa::kAvx512:
      // Every flag the _avx512.cc files are compiled with.
      return CpuSupports(Isa::kAvx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
             __builtin_cpu_supports("avx512bf16");
  }
  return false;
#else
  return isa == Isa::kScalar;
#endif
}

Isa BestSupportedIsa() {
  if (CpuSupports(Isa::kAvx512)) return Isa::kAvx512;
  if (CpuSupports(Isa::kAvx2)) return Isa::kAvx2;
  return Isa::kScalar;
}

Isa ResolveIsa(std::optional<Isa> wanted) {
  const Isa best = BestSupportedIsa();
  if (!wanted) return best;
  if (!CpuSupports(*wanted)) {
    DI_LOG_WARN("ISA level %s is not supported by this CPU; using %s", IsaName(*wanted), IsaName(best));
    return best;
  }
  return *wanted;
}

namespace {
std::atomic<int>& Decided() {  // -1: not decided yet, else the Isa
  static std::atomic<int> decided{-1};
  return decided;
}
}  // namespace

Isa ActiveIsa() {
  int isa = Decided().load(std::memory_order_acquire);
  if (isa < 0) {
    int expected = -1;
    Decided().compare_exchange_strong(expected, static_cast<int>(ResolveIsa(ActiveBackendConfig().isa)),
                                      std::memory_order_acq_rel);
    isa = Decided().load(std::memory_order_acquire);
  }
  return static_cast<Isa>(isa);
}

std::optional<Isa> DecidedIsa() {
  const int isa = Decided().load(std::memory_order_acquire);
  return isa < 0 ? std::nullopt : std::optional<Isa>(static_cast<Isa>(isa));
}

}  // namespace deepinfer::cpu
