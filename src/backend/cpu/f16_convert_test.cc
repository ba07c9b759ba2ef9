// F32ToF16Strided: the AVX-512 conversion against the scalar one (tensor's
// F32ToF16, itself tested against hand-computed halves in dequant_test.cc),
// bit for bit, on every class of f32: normals, values at and around the
// rounding ties, f16 subnormals and the underflow edge, overflow at 65520,
// infinities, zeros and NaNs with payloads; rows of every length 0..40 and
// strided (a dim-major K row) as well as contiguous.
#include "backend/cpu/f16_convert.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backend/cpu/isa.h"

namespace deepinfer::cpu {
namespace {

float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof(f));
  return f;
}

std::vector<float> Inputs() {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.0f,
                          65504.0f,
                          65519.99f,
                          65520.0f,
                          -65520.0f,
                          1e9f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::ldexp(1.0f, -14),
                          std::ldexp(1.0f, -24),
                          std::ldexp(1.0f, -25),
                          std::ldexp(1.5f, -25),
                          std::ldexp(1.0f, -26),
                          std::ldexp(3.0f, -25)};
  for (uint32_t payload : {0x1u, 0x2000u, 0x3fffffu, 0x400000u, 0x7fffffu}) {  // NaNs, both signs
    v.push_back(FromBits(0x7f800000u | payload));
    v.push_back(FromBits(0xff800000u | payload));
  }
  // Ties and their neighbours: an f16 mantissa step is 2^13 f32 ulps at 1.0.
  for (uint32_t base : {0x3f800000u, 0x3f801000u, 0x3f802000u, 0x38800000u, 0x33800000u}) {
    for (int d = -2; d <= 2; ++d) v.push_back(FromBits(base + static_cast<uint32_t>(d)));
  }
  std::mt19937 rng(9);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 20000; ++i) v.push_back(FromBits(bits(rng)));  // every exponent, NaNs too
  std::normal_distribution<float> n(0.0f, 3.0f);
  for (int i = 0; i < 2000; ++i) v.push_back(n(rng));
  return v;
}

TEST(F16Convert, Avx512MatchesScalarBitForBit) {
  if (!CpuSupports(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512";
  const std::vector<float> in = Inputs();
  for (int64_t stride : {1, 3, 16}) {
    for (int64_t len = 0; len <= 40; ++len) {
      for (size_t at = 0; at + static_cast<size_t>(len) <= in.size(); at += 997) {
        std::vector<uint8_t> want(static_cast<size_t>(2 * 41 * stride), 0xaa), got(want);
        F32ToF16StridedScalar(in.data() + at, want.data(), len, stride);
        F32ToF16StridedAvx512(in.data() + at, got.data(), len, stride);
        ASSERT_EQ(want, got) << "stride " << stride << " length " << len << " at " << at;
      }
    }
    // The whole input as one row: every class through the 16-lane blocks.
    const auto n = static_cast<int64_t>(in.size());
    std::vector<uint8_t> want(static_cast<size_t>(2 * n * stride), 0x55), got(want);
    F32ToF16StridedScalar(in.data(), want.data(), n, stride);
    F32ToF16StridedAvx512(in.data(), got.data(), n, stride);
    ASSERT_EQ(want, got) << "stride " << stride;
  }
}

}  // namespace
}  // namespace deepinfer::cpu
