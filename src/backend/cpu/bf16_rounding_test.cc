// The bf16 activation rounding of the BF16 matmul (kernels.h): RoundToBf16
// against hand-computed bit patterns (ties to even, NaN stays NaN, overflow
// to infinity, denormals to zero), and every kernel set's round_bf16 (the
// AVX-512 one is vcvtneps2bf16) against it bit for bit, padding included.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/isa.h"
#include "backend/cpu/kernels.h"

namespace deepinfer::cpu {
namespace {

float FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

TEST(Bf16RoundingTest, HandComputedValues) {
  struct Case {
    uint32_t f32_bits;
    uint16_t bf16_bits;
  };
  const Case cases[] = {
      {0x3f800000u, 0x3f80},  // 1.0 exact
      {0xc0200000u, 0xc020},  // -2.5 exact
      {0x3f808000u, 0x3f80},  // 1 + 2^-8: halfway between 1 and 1 + 2^-7, even (down)
      {0x3f818000u, 0x3f82},  // 1 + 3 * 2^-8: halfway, odd below -> up to even
      {0x3f808001u, 0x3f81},  // just above halfway: up
      {0x3f807fffu, 0x3f80},  // just below halfway: down
      {0xbf808001u, 0xbf81},  // the same, negative: magnitude rounds
      {0x3fffffffu, 0x4000},  // carry into the exponent: 2 - 2^-23 -> 2
      {0x7f7fffffu, 0x7f80},  // FLT_MAX rounds past the largest bf16: +inf
      {0xff7fffffu, 0xff80},  // -FLT_MAX: -inf
      {0x7f800000u, 0x7f80},  // +inf stays
      {0xff800000u, 0xff80},  // -inf stays
      {0x7fc00000u, 0x7fc0},  // quiet NaN stays
      {0x7f800001u, 0x7fc0},  // signalling NaN, payload only in the low bits: must not become inf
      {0xff80ffffu, 0xffc0},  // negative NaN whose rounding would carry: stays NaN
      {0x00000000u, 0x0000},  // +0
      {0x80000000u, 0x8000},  // -0
      {0x00000001u, 0x0000},  // smallest denormal -> +0 (vcvtneps2bf16 treats denormals as zero)
      {0x807fffffu, 0x8000},  // largest negative denormal -> -0
      {0x00800000u, 0x0080},  // smallest normal stays
  };
  for (const Case& c : cases) {
    EXPECT_EQ(RoundToBf16(FromBits(c.f32_bits)), c.bf16_bits) << std::hex << c.f32_bits;
  }
}

std::vector<const KernelSet*> SupportedSets() {
  std::vector<const KernelSet*> out = {&ScalarKernels()};
  if (CpuSupports(Isa::kAvx2)) out.push_back(&Avx2Kernels());
  if (CpuSupports(Isa::kAvx512)) out.push_back(&Avx512Kernels());
  return out;
}

// Random values (including exact ties and denormals) and every special of
// the test above, at lengths around the 16-lane width; the padding up to
// the stride must be zero even when the buffer held garbage.
TEST(Bf16RoundingTest, EveryKernelSetMatchesRoundToBf16) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> any_bits;
  std::vector<float> x;
  for (uint32_t special : {0x3f808000u, 0x3f818000u, 0x7f7fffffu, 0x7f800001u, 0xff80ffffu, 0x00000001u,
                           0x807fffffu, 0x80000000u, 0x7f800000u}) {
    x.push_back(FromBits(special));
  }
  while (x.size() < 200) {
    const uint32_t bits = any_bits(rng);
    x.push_back(FromBits(x.size() % 3 == 0 ? (bits & 0xffff0000u) | 0x8000u : bits));  // every third a tie
  }
  for (const KernelSet* set : SupportedSets()) {
    ASSERT_NE(set->round_bf16, nullptr);
    for (int64_t k : {1, 15, 16, 17, 31, 33, 200}) {
      const int64_t stride = (k + 31) / 32 * 32;
      std::vector<uint16_t> out(static_cast<size_t>(stride), 0xabcd);
      set->round_bf16(x.data(), k, stride, out.data());
      for (int64_t i = 0; i < stride; ++i) {
        const uint16_t expected = i < k ? RoundToBf16(x[i]) : 0;
        ASSERT_EQ(out[i], expected) << "k=" << k << " i=" << i << " x bits " << std::hex
                                    << std::bit_cast<uint32_t>(x[i]);
      }
    }
  }
}

}  // namespace
}  // namespace deepinfer::cpu
