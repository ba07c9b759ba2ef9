// Dequantization checked against blocks built byte by byte from the GGML
// layout description, with values computed independently (per element, in
// double) rather than by re-running the decoder's loops.
#include "tensor/dequant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace deepinfer {
namespace {

float Bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

void PutU16(std::vector<uint8_t>& b, size_t at, uint16_t v) {
  b[at] = v & 0xff;
  b[at + 1] = v >> 8;
}

TEST(F16, DecodesSpecialValues) {
  EXPECT_EQ(F16ToF32(0x3c00), 1.0f);
  EXPECT_EQ(F16ToF32(0xc000), -2.0f);
  EXPECT_EQ(F16ToF32(0x3555), 0.333251953125f);  // 1365/4096
  EXPECT_EQ(F16ToF32(0x7bff), 65504.0f);
  EXPECT_EQ(F16ToF32(0x0400), std::ldexp(1.0f, -14));     // smallest normal
  EXPECT_EQ(F16ToF32(0x0001), std::ldexp(1.0f, -24));     // smallest subnormal
  EXPECT_EQ(F16ToF32(0x03ff), std::ldexp(1023.0f, -24));  // largest subnormal
  EXPECT_EQ(F16ToF32(0x8001), -std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::signbit(F16ToF32(0x8000)));
  EXPECT_EQ(F16ToF32(0x8000), 0.0f);
  EXPECT_EQ(F16ToF32(0x7c00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(F16ToF32(0xfc00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(F16ToF32(0x7e00)));
  EXPECT_TRUE(std::isnan(F16ToF32(0x7c01)));
}

TEST(F16, EncodesWithRoundToNearestEven) {
  EXPECT_EQ(F32ToF16(1.0f), 0x3c00);
  EXPECT_EQ(F32ToF16(-2.0f), 0xc000);
  EXPECT_EQ(F32ToF16(65504.0f), 0x7bff);
  EXPECT_EQ(F32ToF16(65519.0f), 0x7bff);  // below the halfway point 65520
  EXPECT_EQ(F32ToF16(65520.0f), 0x7c00);  // tie, max has an odd mantissa: up to Inf
  EXPECT_EQ(F32ToF16(1e9f), 0x7c00);
  EXPECT_EQ(F32ToF16(-1e9f), 0xfc00);
  // 1 + 2^-11 is halfway between 0x3c00 and 0x3c01: stays even.
  EXPECT_EQ(F32ToF16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3*2^-11 is halfway between 0x3c01 and 0x3c02: goes to even 0x3c02.
  EXPECT_EQ(F32ToF16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(F32ToF16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);
  // Subnormals: value / 2^-24 rounded to nearest even.
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -25)), 0x0000);  // tie -> 0
  EXPECT_EQ(F32ToF16(std::ldexp(1.5f, -25)), 0x0001);  // 0.75 ulp -> 1
  EXPECT_EQ(F32ToF16(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 -> 2
  EXPECT_EQ(F32ToF16(std::ldexp(5.0f, -25)), 0x0002);  // 2.5 -> 2
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -30)), 0x0000);
  EXPECT_EQ(F32ToF16(-std::ldexp(1.0f, -30)), 0x8000);    // sign of zero kept
  EXPECT_EQ(F32ToF16(std::ldexp(2047.0f, -25)), 0x0400);  // 1023.5 -> 1024 = min normal
  EXPECT_EQ(F32ToF16(std::numeric_limits<float>::infinity()), 0x7c00);
  const uint16_t nan = F32ToF16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x03ff, 0);
  // A signalling NaN whose payload lives only in the low bits must not become Inf.
  EXPECT_NE(F32ToF16(Bits(0x7f800001)) & 0x03ff, 0);
}

TEST(F16, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x03ff)) continue;  // NaNs: checked above
    ASSERT_EQ(F32ToF16(F16ToF32(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

#ifdef __FLT16_MAX__
// The compiler's own _Float16 conversion is an independent reference.
TEST(F16, MatchesCompilerConversion) {
  uint32_t state = 12345;
  for (int i = 0; i < 2000000; ++i) {
    state = state * 1664525u + 1013904223u;
    const float f = Bits(state);
    if (std::isnan(f)) continue;
    const _Float16 ref = static_cast<_Float16>(f);
    uint16_t ref_bits;
    std::memcpy(&ref_bits, &ref, 2);
    ASSERT_EQ(F32ToF16(f), ref_bits) << f;
    ASSERT_EQ(F16ToF32(ref_bits), static_cast<float>(ref));
  }
}
#endif

TEST(BF16, ConvertsWithRoundToNearestEven) {
  EXPECT_EQ(F32ToBF16(1.0f), 0x3f80);
  EXPECT_EQ(BF16ToF32(0x3f80), 1.0f);
  EXPECT_EQ(BF16ToF32(0xc040), -3.0f);
  EXPECT_EQ(F32ToBF16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // tie -> even
  EXPECT_EQ(F32ToBF16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(F32ToBF16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3f81);
  EXPECT_EQ(F32ToBF16(std::numeric_limits<float>::max()), 0x7f80);  // rounds to Inf
  EXPECT_EQ(F32ToBF16(-std::numeric_limits<float>::infinity()), 0xff80);
  EXPECT_EQ(F32ToBF16(std::ldexp(1.0f, -133)), 0x0001);  // subnormal survives
  const uint16_t nan = F32ToBF16(Bits(0x7f800001));      // payload only in dropped bits
  EXPECT_TRUE(std::isnan(BF16ToF32(nan)));
  EXPECT_TRUE(std::isinf(BF16ToF32(0x7f80)));
}

TEST(Dequantize, F16AndBF16Rows) {
  const uint8_t f16[] = {0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00};  // 1, -2, 2^-24
  float out[3];
  DequantizeRow(DType::kF16, f16, out, 3);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -2.0f);
  EXPECT_EQ(out[2], std::ldexp(1.0f, -24));
  const uint8_t bf16[] = {0x80, 0x3f, 0x40, 0xc0};  // 1, -3
  DequantizeRow(DType::kBF16, bf16, out, 2);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -3.0f);
}

TEST(Dequantize, Q8_0) {
  // Two blocks: d = 0.5 (f16 0x3800) then d = -2 (0xc000); q[j] = j - 16 / 3*j - 50.
  std::vector<uint8_t> b(68);
  PutU16(b, 0, 0x3800);
  PutU16(b, 34, 0xc000);
  for (int j = 0; j < 32; ++j) {
    b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j - 16));
    b[36 + j] = static_cast<uint8_t>(static_cast<int8_t>(3 * j - 50));
  }
  std::vector<float> out(64);
  DequantizeRow(DType::kQ8_0, b.data(), out.data(), 64);
  for (int j = 0; j < 32; ++j) {
    EXPECT_EQ(out[j], 0.5 * (j - 16)) << j;
    EXPECT_EQ(out[32 + j], -2.0 * (3 * j - 50)) << j;
  }
}

TEST(Dequantize, Q4_0) {
  // d = 1.5 (0x3e00); byte j holds element j (low nibble) and j+16 (high).
  std::vector<uint8_t> b(18);
  PutU16(b, 0, 0x3e00);
  int q[32];
  for (int e = 0; e < 32; ++e) q[e] = (e * 5 + 3) % 16;
  for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<uint8_t>(q[j] | (q[j + 16] << 4));
  float out[32];
  DequantizeRow(DType::kQ4_0, b.data(), out, 32);
  for (int e = 0; e < 32; ++e) EXPECT_EQ(out[e], 1.5 * (q[e] - 8)) << e;
}

// Q4_K's (and Q5_K's) 12 scale bytes at b[at..at+12) from 6-bit scales sc
// and minimums mn (per ggml-common.h): bytes 0-3 = sc[0..3] | top2(sc[4..7])<<6,
// bytes 4-7 = m[0..3] | top2(m[4..7])<<6, bytes 8-11 = low4(sc[4+i]) | low4(m[4+i])<<4.
void PutScalesK4(std::vector<uint8_t>& b, size_t at, const int sc[8], const int mn[8]) {
  for (int i = 0; i < 4; ++i) {
    b[at + i] = static_cast<uint8_t>(sc[i] | ((sc[4 + i] >> 4) << 6));
    b[at + 4 + i] = static_cast<uint8_t>(mn[i] | ((mn[4 + i] >> 4) << 6));
    b[at + 8 + i] = static_cast<uint8_t>((sc[4 + i] & 15) | ((mn[4 + i] & 15) << 4));
  }
}

TEST(Dequantize, Q4_K) {
  // d = 1 (0x3c00), dmin = 0.5 (0x3800); 8 sub-blocks of 32 with 6-bit scale
  // and min (PutScalesK4).
  const int sc[8] = {1, 2, 3, 4, 33, 45, 63, 17};
  const int mn[8] = {0, 1, 2, 3, 60, 5, 32, 7};
  std::vector<uint8_t> b(144);
  PutU16(b, 0, 0x3c00);
  PutU16(b, 2, 0x3800);
  PutScalesK4(b, 4, sc, mn);
  // Element e: 64-element group g = e/64 uses qs[32g..32g+32); first 32 in the
  // low nibbles, next 32 in the high nibbles.
  int q[256];
  for (int e = 0; e < 256; ++e) {
    q[e] = (e * 7 + e / 32) % 16;
    const int g = e / 64, w = e % 64;
    uint8_t& byte = b[16 + 32 * g + (w % 32)];
    byte |= static_cast<uint8_t>(w < 32 ? q[e] : q[e] << 4);
  }
  std::vector<float> out(256);
  DequantizeRow(DType::kQ4_K, b.data(), out.data(), 256);
  for (int e = 0; e < 256; ++e) {
    const int s = e / 32;
    EXPECT_EQ(out[e], 1.0 * sc[s] * q[e] - 0.5 * mn[s]) << e;
  }
}

TEST(Dequantize, Q6_K) {
  // Layout: ql[128], qh[64], int8 scales[16], f16 d = 0.25 (0x3400).
  // Element e: half h = e/128, r = e%128, quarter c = r/32, l = r%32.
  // Low nibble: ql[64h + l + 32*(c&1)], high nibble when c >= 2. Top 2 bits:
  // qh[32h + l] >> 2c. Scale: scales[8h + 2c + l/16]. Value d*scale*(q-32).
  std::vector<uint8_t> b(210);
  int8_t scales[16];
  for (int i = 0; i < 16; ++i) {
    scales[i] = static_cast<int8_t>((i * 37) % 256 - 128);
    b[192 + i] = static_cast<uint8_t>(scales[i]);
  }
  PutU16(b, 208, 0x3400);
  int q[256];
  for (int e = 0; e < 256; ++e) {
    q[e] = (e * 11 + 5) % 64;
    const int h = e / 128, r = e % 128, c = r / 32, l = r % 32;
    uint8_t& lo = b[64 * h + l + 32 * (c & 1)];
    lo |= static_cast<uint8_t>(c >= 2 ? (q[e] & 15) << 4 : (q[e] & 15));
    b[128 + 32 * h + l] |= static_cast<uint8_t>((q[e] >> 4) << (2 * c));
  }
  std::vector<float> out(256);
  DequantizeRow(DType::kQ6_K, b.data(), out.data(), 256);
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, r = e % 128, c = r / 32, l = r % 32;
    EXPECT_EQ(out[e], 0.25 * scales[8 * h + 2 * c + l / 16] * (q[e] - 32)) << e;
  }
}

TEST(Dequantize, Q5_K) {
  // Q4_K's header (d = 0.5 (0x3800), dmin = 0.25 (0x3400), the same 12
  // scale bytes), then qh[32], then qs[128]. Element e: sub-block s = e/32,
  // l = e%32; low 4 bits in qs[32(s/2) + l] (low nibble for even s), the
  // fifth bit is bit s of qh[l]; value d*sc[s]*q - dmin*m[s].
  const int sc[8] = {63, 0, 7, 31, 32, 1, 50, 12};
  const int mn[8] = {5, 63, 0, 44, 17, 2, 33, 61};
  std::vector<uint8_t> b(176);
  PutU16(b, 0, 0x3800);
  PutU16(b, 2, 0x3400);
  PutScalesK4(b, 4, sc, mn);
  int q[256];
  for (int e = 0; e < 256; ++e) {
    q[e] = (e * 13 + e / 32 + 3) % 32;
    const int s = e / 32, l = e % 32;
    b[48 + 32 * (s / 2) + l] |= static_cast<uint8_t>(s % 2 == 0 ? (q[e] & 15) : (q[e] & 15) << 4);
    b[16 + l] |= static_cast<uint8_t>((q[e] >> 4) << s);
  }
  std::vector<float> out(256);
  DequantizeRow(DType::kQ5_K, b.data(), out.data(), 256);
  for (int e = 0; e < 256; ++e) {
    const int s = e / 32;
    EXPECT_EQ(out[e], 0.5 * sc[s] * q[e] - 0.25 * mn[s]) << e;
  }
}

TEST(Dequantize, Q3_K) {
  // hmask[32], qs[64], scales[12], f16 d = 2 (0x4000). 16 sub-blocks of 16
  // with 6-bit scales stored with an offset of 32: low nibbles of bytes 0-7
  // are scales 0-7, their high nibbles scales 8-15; bits 2k of byte 8 + i
  // are the top 2 bits of scale i + 4k. Element e = 128h + 32j + l: 2 bits
  // at 2j of qs[32h + l], and bit 4h + j of hmask[l] set means no -4.
  std::vector<uint8_t> b(110);
  int scale[16];
  for (int i = 0; i < 16; ++i) {
    scale[i] = (i * 23 + 5) % 64;
    b[96 + i % 8] |= static_cast<uint8_t>(i < 8 ? (scale[i] & 15) : (scale[i] & 15) << 4);
    b[96 + 8 + i % 4] |= static_cast<uint8_t>((scale[i] >> 4) << (2 * (i / 4)));
  }
  PutU16(b, 108, 0x4000);
  int q[256];
  for (int e = 0; e < 256; ++e) {
    q[e] = (e * 5 + e / 16) % 8 - 4;  // -4..3
    const int h = e / 128, j = (e % 128) / 32, l = e % 32;
    b[32 + 32 * h + l] |= static_cast<uint8_t>(((q[e] + 4) & 3) << (2 * j));
    if (q[e] >= 0) b[l] |= static_cast<uint8_t>(1 << (4 * h + j));
  }
  std::vector<float> out(256);
  DequantizeRow(DType::kQ3_K, b.data(), out.data(), 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(out[e], 2.0 * (scale[e / 16] - 32) * q[e]) << e;
}

TEST(Dequantize, Q2_K) {
  // scales[16] (low nibble scale, high nibble min), qs[64], f16 d = 0.5
  // (0x3800), f16 dmin = 1.5 (0x3e00). Element e = 128h + 32j + l: 2 bits at
  // 2j of qs[32h + l]; value d*sc*q - dmin*m of sub-block e/16.
  std::vector<uint8_t> b(84);
  int sc[16], mn[16];
  for (int i = 0; i < 16; ++i) {
    sc[i] = (i * 7 + 1) % 16;
    mn[i] = (i * 11 + 4) % 16;
    b[i] = static_cast<uint8_t>(sc[i] | (mn[i] << 4));
  }
  PutU16(b, 80, 0x3800);
  PutU16(b, 82, 0x3e00);
  int q[256];
  for (int e = 0; e < 256; ++e) {
    q[e] = (e * 3 + e / 64) % 4;
    const int h = e / 128, j = (e % 128) / 32, l = e % 32;
    b[16 + 32 * h + l] |= static_cast<uint8_t>(q[e] << (2 * j));
  }
  std::vector<float> out(256);
  DequantizeRow(DType::kQ2_K, b.data(), out.data(), 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(out[e], 0.5 * sc[e / 16] * q[e] - 1.5 * mn[e / 16]) << e;
}

TEST(Dequantize, CanDequantize) {
  EXPECT_TRUE(CanDequantize(DType::kQ6_K));
  EXPECT_TRUE(CanDequantize(DType::kQ5_K));
  EXPECT_TRUE(CanDequantize(DType::kQ3_K));
  EXPECT_TRUE(CanDequantize(DType::kQ2_K));
  EXPECT_FALSE(CanDequantize(DType::kI32));
  EXPECT_FALSE(CanDequantize(DType::kU8));
}

}  // namespace
}  // namespace deepinfer
