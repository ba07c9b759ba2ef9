#include "tensor/dequant.h"

#include <cmath>
#include <cstring>

#include "core/check.h"

namespace deepinfer {
namespace {

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Little-endian f16 load from unaligned bytes (blocks pack a 2-byte scale
// before byte arrays, so nothing in a row is aligned).
float LoadF16(const uint8_t* p) { return F16ToF32(static_cast<uint16_t>(p[0] | (p[1] << 8))); }

void StoreU16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v & 0xff);
  p[1] = static_cast<uint8_t>(v >> 8);
}

// ---- Block layouts (GGML, ggml-common.h) -------------------------------
// Q8_0 (34 bytes / 32 elems):  [f16 d][int8 q[32]]           x = q * d
// Q4_0 (18 bytes / 32 elems):  [f16 d][u8 qs[16]]            x[j] = (lo(qs[j]) - 8) * d,
//                                                            x[j+16] = (hi(qs[j]) - 8) * d
// Q4_K (144 bytes / 256):      [f16 d][f16 dmin][u8 scales[12]][u8 qs[128]]
//   8 sub-blocks of 32; sub-block s has a 6-bit scale sc_s and 6-bit min m_s
//   packed in `scales` (see ScaleMinK4); x = d*sc_s*q - dmin*m_s. Sub-blocks
//   2k and 2k+1 share qs[32k..32k+32): low nibbles, then high nibbles.
// Q6_K (210 bytes / 256):      [u8 ql[128]][u8 qh[64]][int8 scales[16]][f16 d]
//   two halves of 128; in each, for l < 32, four 6-bit values are made of a
//   nibble of ql[l] / ql[l+32] plus 2 bits of qh[l]; x = d * scale * (q - 32).
// Q5_K (176 bytes / 256):      [f16 d][f16 dmin][u8 scales[12]][u8 qh[32]][u8 qs[128]]
//   Q4_K's sub-blocks, scales and nibbles, plus a fifth bit: element l of
//   sub-block s has bit (qh[l] >> s) & 1 as its 16s; x = d*sc_s*q - dmin*m_s, q = 0..31.
// Q3_K (110 bytes / 256):      [u8 hmask[32]][u8 qs[64]][u8 scales[12]][f16 d]
//   16 sub-blocks of 16 with 6-bit scales sc (see Q3_KScale), x = d * (sc - 32) * q,
//   q = 2 bits of qs minus 4 where the hmask bit is clear (-4..3). Element
//   e = 128h + 32j + l (j = 0..3, l < 32): bits 2j of qs[32h + l], hmask bit 4h + j of hmask[l].
// Q2_K (84 bytes / 256):       [u8 scales[16]][u8 qs[64]][f16 d][f16 dmin]
//   16 sub-blocks of 16, each a 4-bit scale (low nibble) and min (high);
//   x = d * sc * q - dmin * m, q = 2 bits of qs as for Q3_K (0..3).

void DequantQ8_0(const uint8_t* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, src += 34, dst += 32) {
    const float d = LoadF16(src);
    for (int j = 0; j < 32; ++j) dst[j] = static_cast<float>(static_cast<int8_t>(src[2 + j])) * d;
  }
}

void DequantQ4_0(const uint8_t* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, src += 18, dst += 32) {
    const float d = LoadF16(src);
    const uint8_t* qs = src + 2;
    for (int j = 0; j < 16; ++j) {
      dst[j] = static_cast<float>((qs[j] & 0x0f) - 8) * d;
      dst[j + 16] = static_cast<float>((qs[j] >> 4) - 8) * d;
    }
  }
}

// The 12 scale bytes hold 8 (scale, min) pairs of 6 bits. Pairs 0-3 are the
// low 6 bits of bytes 0-3 (scales) and 4-7 (mins); pairs 4-7 take their low
// 4 bits from bytes 8-11 (low nibble scale, high nibble min) and their top 2
// bits from the spare top bits of bytes 0-3 (scales) and 4-7 (mins).
void ScaleMinK4(int s, const uint8_t* scales, uint8_t* sc, uint8_t* m) {
  if (s < 4) {
    *sc = scales[s] & 63;
    *m = scales[s + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((scales[s + 4] & 0x0f) | ((scales[s - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((scales[s + 4] >> 4) | ((scales[s] >> 6) << 4));
  }
}

void DequantQ4_K(const uint8_t* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, src += 144) {
    const float d = LoadF16(src);
    const float dmin = LoadF16(src + 2);
    const uint8_t* scales = src + 4;
    const uint8_t* q = src + 16;
    for (int pair = 0; pair < 4; ++pair, q += 32) {
      uint8_t sc, m;
      ScaleMinK4(2 * pair, scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      ScaleMinK4(2 * pair + 1, scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *dst++ = d1 * static_cast<float>(q[l] & 0x0f) - m1;
      for (int l = 0; l < 32; ++l) *dst++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

void DequantQ6_K(const uint8_t* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, src += 210) {
    const uint8_t* ql = src;
    const uint8_t* qh = src + 128;
    const int8_t* sc = reinterpret_cast<const int8_t*>(src + 192);
    const float d = LoadF16(src + 208);
    for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, dst += 128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        dst[l] = d * sc[is] * static_cast<float>(q1);
        dst[l + 32] = d * sc[is + 2] * static_cast<float>(q2);
        dst[l + 64] = d * sc[is + 4] * static_cast<float>(q3);
        dst[l + 96] = d * sc[is + 6] * static_cast<float>(q4);
      }
    }
  }
}

void DequantQ5_K(const uint8_t* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, src += 176) {
    const float d = LoadF16(src);
    const float dmin = LoadF16(src + 2);
    const uint8_t* scales = src + 4;
    const uint8_t* qh = src + 16;
    const uint8_t* q = src + 48;
    for (int s = 0; s < 8; ++s) {
      uint8_t sc, m;
      ScaleMinK4(s, scales, &sc, &m);
      const float ds = d * sc, ms = dmin * m;
      const uint8_t* qs = q + 32 * (s / 2);
      for (int l = 0; l < 32; ++l) {
        const int nibble = s % 2 == 0 ? qs[l] & 0x0f : qs[l] >> 4;
        *dst++ = ds * static_cast<float>(nibble | (((qh[l] >> s) & 1) << 4)) - ms;
      }
    }
  }
}

void DequantQ3_K(const uint8_t* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, src += 110) {
    const uint8_t* hmask = src;
    const uint8_t* qs = src + 32;
    const float d = LoadF16(src + 108);
    for (int sub = 0; sub < 16; ++sub) {  // 16-element sub-blocks, each with its scale
      const float dl = d * static_cast<float>(Q3_KScale(src, sub));
      for (int e = 16 * sub; e < 16 * sub + 16; ++e) {
        const int h = e / 128, j = (e % 128) / 32, l = e % 32;
        const int q = ((qs[32 * h + l] >> (2 * j)) & 3) - ((hmask[l] >> (4 * h + j)) & 1 ? 0 : 4);
        dst[e] = dl * static_cast<float>(q);
      }
    }
    dst += 256;
  }
}

void DequantQ2_K(const uint8_t* src, float* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, src += 84) {
    const uint8_t* scales = src;
    const uint8_t* qs = src + 16;
    const float d = LoadF16(src + 80), dmin = LoadF16(src + 82);
    for (int sub = 0; sub < 16; ++sub) {  // 16-element sub-blocks, each with its scale and minimum
      const float dl = d * static_cast<float>(scales[sub] & 0x0f),
                  ml = dmin * static_cast<float>(scales[sub] >> 4);
      for (int e = 16 * sub; e < 16 * sub + 16; ++e) {
        const int h = e / 128, j = (e % 128) / 32, l = e % 32;
        dst[e] = dl * static_cast<float>((qs[32 * h + l] >> (2 * j)) & 3) - ml;
      }
    }

    dst += 256;
  }
}

// GGML's reference Q8_0 quantizer: d = amax / 127, q = round-half-away(x / d).
void QuantQ8_0(const float* src, uint8_t* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, src += 32, dst += 34) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(src[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    StoreU16(dst, F32ToF16(d));
    for (int j = 0; j < 32; ++j) {
      float v = std::round(src[j] * id);
      if (!(v >= -128.0f)) v = v != v ? 0.0f : -128.0f;  // NaN -> 0; keeps the cast defined
      if (v > 127.0f) v = 127.0f;
      dst[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(v));
    }
  }
}

// GGML's reference Q4_0 quantizer: the element of largest magnitude (sign
// kept) maps to -8, d = max / -8, q = min(15, trunc(x / d + 8.5)).
void QuantQ4_0(const float* src, uint8_t* dst, int64_t blocks) {
  for (int64_t b = 0; b < blocks; ++b, src += 32, dst += 18) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; ++j) {
      if (amax < std::fabs(src[j])) {
        amax = std::fabs(src[j]);
        max = src[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    StoreU16(dst, F32ToF16(d));
    auto level = [id](float x) {
      float v = x * id + 8.5f;
      if (!(v >= 0.0f)) v = 0.0f;  // also NaN; in range for finite input
      if (v > 15.0f) v = 15.0f;
      return static_cast<uint8_t>(v);  // truncation, as GGML's (int8_t) cast
    };
    for (int j = 0; j < 16; ++j) {
      dst[2 + j] = static_cast<uint8_t>(level(src[j]) | (level(src[j + 16]) << 4));
    }
  }
}

}  // namespace

// The 6-bit scale j (0..15) sits in the 12 scale bytes at 96: its low 4
// bits are the low (j < 8) or high (j >= 8) nibble of byte j % 8, its top 2
// bits are bits 2 (j / 4) of byte 8 + j % 4.
int Q3_KScale(const uint8_t* super_block, int j) {
  const uint8_t* scales = super_block + 96;
  const int low = j < 8 ? scales[j] & 0x0f : scales[j - 8] >> 4;
  return (low | (((scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
}

float F16ToF32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in f32.
    const float mag = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -mag : mag;
  }
  if (exp == 31) return BitsFloat(sign | 0x7f800000u | (mant << 13));  // Inf / NaN (payload kept)
  return BitsFloat(sign | ((exp + 127 - 15) << 23) | (mant << 13));
}

uint16_t F32ToF16(float f) {
  const uint32_t x = FloatBits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00 | ((a >> 13) & 0x3ff);  // NaN, forced quiet
  // 65520 is halfway between 65504 (max f16, odd mantissa) and 2^16: ties go up to Inf.
  if (a >= 0x477ff000u) return sign | 0x7c00;
  if (a >= 0x38800000u) {  // normal f16 range (>= 2^-14)
    uint32_t v = a - ((127u - 15u) << 23);
    v += 0x0fff + ((v >> 13) & 1);  // round to nearest even on the 13 dropped bits
    return static_cast<uint16_t>(sign | (v >> 13));
  }
  if (a <= 0x33000000u) return sign;  // <= 2^-25: rounds (ties to even) to zero
  // Subnormal f16: m = round_even(value * 2^24); m == 1024 is the smallest normal.
  const uint32_t e = a >> 23;
  const uint32_t mant = (a & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126 - e;  // 14..24
  uint32_t m = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (m & 1))) ++m;
  return static_cast<uint16_t>(sign | m);
}

float BF16ToF32(uint16_t h) { return BitsFloat(static_cast<uint32_t>(h) << 16); }

uint16_t F32ToBF16(float f) {
  const uint32_t x = FloatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
  // Round to nearest even; a carry into the exponent is correct (up to Inf).
  return static_cast<uint16_t>((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

bool CanDequantize(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_K:
    case DType::kQ6_K:
    case DType::kQ5_K:
    case DType::kQ3_K:
    case DType::kQ2_K:
      return true;
    default:
      return false;
  }
}

void DequantizeRow(DType t, const void* src, float* dst, int64_t n) {
  DI_CHECK_MSG(CanDequantize(t), DTypeName(t));
  DI_CHECK(n >= 0 && n % BlockElems(t) == 0);
  const auto* s = static_cast<const uint8_t*>(src);
  const int64_t blocks = n / BlockElems(t);
  switch (t) {
    case DType::kF32:
      std::memcpy(dst, s, static_cast<size_t>(n) * 4);
      break;
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = LoadF16(s + 2 * i);
      break;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        dst[i] = BF16ToF32(static_cast<uint16_t>(s[2 * i] | (s[2 * i + 1] << 8)));
      }
      break;
    case DType::kQ8_0:
      DequantQ8_0(s, dst, blocks);
      break;
    case DType::kQ4_0:
      DequantQ4_0(s, dst, blocks);
      break;
    case DType::kQ4_K:
      DequantQ4_K(s, dst, blocks);
      break;
    case DType::kQ6_K:
      DequantQ6_K(s, dst, blocks);
      break;
    case DType::kQ5_K:
      DequantQ5_K(s, dst, blocks);
      break;
    case DType::kQ3_K:
      DequantQ3_K(s, dst, blocks);
      break;
    case DType::kQ2_K:
      DequantQ2_K(s, dst, blocks);
      break;
    default:
      break;
  }
}

bool QuantizeRow(DType t, const float* src, void* dst, int64_t n) {
  if (n < 0 || n % BlockElems(t) != 0) return false;
  auto* d = static_cast<uint8_t*>(dst);
  const int64_t blocks = n / BlockElems(t);
  switch (t) {
    case DType::kF32:
      std::memcpy(d, src, static_cast<size_t>(n) * 4);
      return true;
    case DType::kF16:
      for (int64_t i = 0; i < n; ++i) StoreU16(d + 2 * i, F32ToF16(src[i]));
      return true;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) StoreU16(d + 2 * i, F32ToBF16(src[i]));
      return true;
    case DType::kQ8_0:
      QuantQ8_0(src, d, blocks);
      return true;
    case DType::kQ4_0:
      QuantQ4_0(src, d, blocks);
      return true;
    default:
      return false;
  }
}

}  // namespace deepinfer
