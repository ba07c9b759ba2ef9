#include "backend/cpu/amx.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "backend/cpu/isa.h"
#include "core/log.h"

#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace deepinfer::cpu {
namespace {

#if defined(__x86_64__) && defined(__linux__)
constexpr long kArchReqXcompPerm = 0x1023;  // arch_prctl: request an XSAVE feature
constexpr long kXfeatureXtileData = 18;     // the 8 KiB of tile registers

bool CpuHasAmxInt8() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  const bool amx_tile = (edx >> 24) & 1, amx_int8 = (edx >> 25) & 1;
  if (!amx_tile || !amx_int8) return false;
  // OSXSAVE, then XCR0 bits 17 (XTILECFG) and 18 (XTILEDATA).
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || ((ecx >> 27) & 1) == 0) return false;
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((lo >> 17) & 3) == 3;
}

bool RequestTileData() { return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtileData) == 0; }
#else
bool CpuHasAmxInt8() { return false; }
bool RequestTileData() { return false; }
#endif

bool DetectSupport() {
  if (ActiveIsa() != Isa::kAvx512 || !CpuHasAmxInt8()) return false;
  if (!RequestTileData()) {
    DI_LOG_WARN("AMX: the kernel refused the tile-data permission; using AVX-512 for int8 GEMM");
    return false;
  }
  return true;
}

bool Supported() {
  static const bool supported = DetectSupport();  // thread-safe static init
  return supported;
}

std::atomic<int>& Setting() {  // -1: not decided yet, else 0 / 1
  static std::atomic<int> setting{-1};
  return setting;
}

}  // namespace

bool AmxInt8Supported() { return Supported(); }

bool AmxInt8Enabled() {
  int s = Setting().load(std::memory_order_acquire);
  if (s < 0) {
    const char* env = std::getenv("DEEPINFER_AMX");
    const bool off = env != nullptr && std::strcmp(env, "0") == 0;
    int expected = -1;
    Setting().compare_exchange_strong(expected, !off && Supported() ? 1 : 0, std::memory_order_acq_rel);
    s = Setting().load(std::memory_order_acquire);
  }
  return s == 1;
}

bool SetAmxInt8Enabled(bool on) {
  const bool previous = AmxInt8Enabled();
  Setting().store(on && Supported() ? 1 : 0, std::memory_order_release);
  return previous;
}

}  // namespace deepinfer::cpu
