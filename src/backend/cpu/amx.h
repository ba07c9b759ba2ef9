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
// tile state, the permission request succeeded, and DEEPINFER_AMX is not
// "0". Decided on first call (the permission request happens then), then
// constant unless SetAmxInt8Enabled changes it. Thread-safe.
bool AmxInt8Enabled();

// Turns the AMX path on or off (on only if this machine can run it: see
// AmxInt8Enabled); returns the previous setting. For tests and benchmarks
// that compare the AMX kernel with the AVX-512 one; results are the same
// bits either way (interleaved_avx512.cc), so flipping it never changes
// outputs, only speed. Call while no MatMul is running.
bool SetAmxInt8Enabled(bool on);

// True when the CPU and OS could run AMX int8 at all (ignores DEEPINFER_AMX
// and SetAmxInt8Enabled).
bool AmxInt8Supported();

}  // namespace deepinfer::cpu
