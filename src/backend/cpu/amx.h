// Intel AMX (Advanced Matrix Extensions) availability for the int8 GEMM.
//
// AMX multiplies 16 x 64-byte tiles in a unit beside the vector registers
// (TDPBSSD: a 16 x 16 int32 block of dot products over 64 int8 per
// instruction, 8x a zmm vpdpbusd). Using it takes three things beyond the
// CPUID bits: the OS must enable the tile state in XCR0, Linux must grant
// this process the XTILEDATA state (arch_prctl ARCH_REQ_XCOMP_PERM; without
// it the first tile instruction dies with SIGILL), and every thread loads a
// tile configuration before its first tile instruction (the int8 kernel
// does that itself, once per thread).
#pragma once

namespace deepinfer::cpu {

// True when the AMX int8 kernel may run in this process: the CPU has
// AMX-TILE and AMX-INT8, the AVX-512 level is active, the OS enables the
// tile state, the permission request succeeded, and BackendConfig::amx is
// set (DEEPINFER_AMX is not "0"). Decided on first call (the permission request happens then), then
// constant unless SetAmxEnabled changes it. Thread-safe.
bool AmxInt8Enabled();
// The same for the BF16 kernel (AMX-BF16 instead of AMX-INT8).
bool AmxBf16Enabled();

// Turns the AMX kernels on or off (each only if this machine can run it);
// returns the previous setting. For tests and benchmarks that compare them
// with the AVX-512 kernels. Int8 results are the same bits either way
// (packed_int8_amx.cc); BF16 results differ in the last bits (another
// summation order, like another ISA level), so flip it only between
// comparisons, never inside one. Call while no MatMul is running.
bool SetAmxEnabled(bool on);

// True when the CPU and OS could run the AMX int8 / bf16 kernel at all
// (ignores BackendConfig::amx and SetAmxEnabled).
bool AmxInt8Supported();
bool AmxBf16Supported();

}  // namespace deepinfer::cpu
