#include "backend/cpu/amx.h"

#include <atomic>

#include "backend/cpu/backend_config.h"
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

// CPUID.(7,0):EDX bit 24 AMX-TILE, 25 AMX-INT8, 22 AMX-BF16.
bool CpuHasAmxBit(int bit) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return ((edx >> bit) & 1) != 0;
}

bool CpuHasAmxTiles() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!CpuHasAmxBit(24)) return false;
  // OSXSAVE, then XCR0 bits 17 (XTILECFG) and 18 (XTILEDATA).
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || ((ecx >> 27) & 1) == 0) return false;
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((lo >> 17) & 3) == 3;
}

bool RequestTileData() { return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtileData) == 0; }
#else
bool CpuHasAmxBit(int) { return false; }
bool CpuHasAmxTiles() { return false; }
bool RequestTileData() { return false; }
#endif

bool DetectSupport() {
  if (ActiveIsa() != Isa::kAvx512 || !CpuHasAmxTiles()) return false;
  if (!RequestTileData()) {
    DI_LOG_WARN("AMX: the kernel refused the tile-data permission; using AVX-512 kernels");
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

bool AmxInt8Supported() {
  static const bool int8 = Supported() && CpuHasAmxBit(25);
  return int8;
}

bool AmxBf16Supported() {
  static const bool bf16 = Supported() && CpuHasAmxBit(22);
  return bf16;
}

namespace {
bool AmxOn() {
  int s = Setting().load(std::memory_order_acquire);
  if (s < 0) {
    int expected = -1;
    Setting().compare_exchange_strong(expected, ActiveBackendConfig().amx && Supported() ? 1 : 0,
                                      std::memory_order_acq_rel);
    s = Setting().load(std::memory_order_acquire);
  }
  return s == 1;
}
}  // namespace

bool AmxInt8Enabled() { return AmxOn() && AmxInt8Supported(); }
bool AmxBf16Enabled() { return AmxOn() && AmxBf16Supported(); }

bool SetAmxEnabled(bool on) {
  const bool previous = AmxOn();
  Setting().store(on && Supported() ? 1 : 0, std::memory_order_release);
  return previous;
}

}  // namespace deepinfer::cpu
