// AMX int8 GEMM over the interleaved packed Q8_0 / Q4_0 / Q3_K..Q6_K layouts
// (packed_weights.h), bit-identical to the AVX-512 kernels of
// interleaved_avx512.cc and kquant_avx512.cc.
//
// Why AMX: one TDPBSSD computes a 16 x 16 block of exact int32 dot products
// (16 tokens x 16 weight rows) over one 32-element block - 8192
// multiply-adds, where a zmm vpdpbusd does 64. What is left is the f32 work
// per block that every int8 format with per-block scales needs:
//   acc += float(isum) * (d_w * d_x)
// so the kernel is bound by that epilogue (4 vector ops per 16 (token, row)
// pairs per block), not by the multiply-adds.
//
// Why the same bits as the AVX-512 kernel: that kernel keeps, per
// (row, token), 16 f32 lanes; lane l adds the products of blocks
// l, l + 16, l + 32, ... in that order (the half group's blocks go to lanes
// 0..7), then the 16 lanes are summed in one fixed tree (SumLanes4). This
// kernel runs lane by lane: for lane l it walks the same blocks in the same
// order, with the same int32 sum (exact, so however it was added up), the
// same conversion, the same product d_w * d_x and the same fused
// multiply-add; then it sums the 16 lanes with the same tree. Only the
// vector direction differs (a zmm holds 16 weight rows of one token instead
// of 16 lanes of one (row, token)), which changes no operation on any
// element. Padding blocks (w = 0, x = 0) add +0 there and are skipped here,
// which changes nothing either (an accumulator starts at +0 and never
// becomes -0). So a token's output does not depend on which kernel, and so
// on how many tokens shared the call (matmul_test checks bit equality).
//
// Data flow for one panel of 16 rows:
//   1. the panel's weights are transposed once into the AMX operand form,
//      per block b: [8 steps][16 rows][4 bytes] signed int8 (512 bytes) and
//      the 16 rows' f32 scales (a 16 x 16 dword transpose of the
//      interleaved groups, whose steps are [16 blocks][4 bytes] per row);
//   2. per tile of 16 tokens and per block: A = the tokens' quantized block
//      (16 rows of 32 bytes: Int8Activations::tile_q, laid out by Prepare), B = the
//      transposed weights, C = A . B (int32 [16 tokens][16 rows]), stored
//      and folded into 16 accumulators (one zmm per token);
//   3. the 16 lanes' accumulators are summed in the fixed tree, + bias.
// Weights are signed here (Q8_0: the file's bytes; Q4_0: nibble - 8), so C
// is sum(w * x) directly: the integer the AVX-512 kernel reaches through its
// unsigned offset and bias.
#include <immintrin.h>

#include <algorithm>
#include <atomic>

#include "backend/cpu/aligned_buffer.h"
#include "backend/cpu/amx_tiles.h"
#include "backend/cpu/kernels_amx.h"
#include "backend/cpu/packed_weights.h"

namespace deepinfer::cpu {
namespace {

constexpr int kSteps = 8;         // 4-byte steps of a 32-element block
constexpr int kBlockBytes = 512;  // transposed block: [8 steps][16 rows][4]

// Tiles: 0, 1 = C (16 tokens x 16 int32), 2, 3 = A (16 tokens x 32 bytes),
// 4, 5 = B (8 steps x 64 bytes). Two sets, so the next block's TDPBSSD
// overlaps this block's epilogue.
constexpr TileConfig kTileConfig = {1,
                                    0,
                                    {},
                                    {64, 64, 32, 32, 64, 64, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
                                    {16, 16, 16, 16, 8, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}};

// Q6_K / Q3_K: their two 16-element halves have their own scales, so one product per
// half: 0, 1 = C of set 0 (low, high half), 2, 3 = C of set 1, 4 / 5 = A
// (16 tokens x 16 bytes), 6 / 7 = B (4 steps x 64 bytes).
constexpr TileConfig kHalvesConfig = {1,
                                      0,
                                      {},
                                      {64, 64, 64, 64, 16, 16, 64, 64, 0, 0, 0, 0, 0, 0, 0, 0},
                                      {16, 16, 16, 16, 16, 16, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0}};

// In-place transpose of a 16 x 16 matrix of dwords (row i = v[i]).
inline void Transpose16x16(__m512i v[16]) {
  __m512i t[16], u[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
  }
  // Inside 128-bit lane j, u[4i + c] now gets column 4j + c of rows 4i..4i+3.
  for (int i = 0; i < 4; ++i) {
    u[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  // A 4 x 4 transpose of 128-bit lanes for each c: column 4j + c is
  // lane j of u[c], u[4 + c], u[8 + c], u[12 + c].
  for (int c = 0; c < 4; ++c) {
    const __m512i v0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x44);
    const __m512i v1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xee);
    const __m512i v2 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x44);
    const __m512i v3 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xee);
    v[c] = _mm512_shuffle_i32x4(v0, v2, 0x88);
    v[4 + c] = _mm512_shuffle_i32x4(v0, v2, 0xdd);
    v[8 + c] = _mm512_shuffle_i32x4(v1, v3, 0x88);
    v[12 + c] = _mm512_shuffle_i32x4(v1, v3, 0xdd);
  }
}

// One step of a group of `lanes` blocks for 16 rows, as rows' u8 values
// (the packed form: Q8_0 w + 128, Q4_0 a nibble w + 8), converted to signed.
struct Q8_0Panel {
  static constexpr DType kType = DType::kQ8_0;
  static constexpr bool kNibbles = false;
  // Row r's step s of the group at `g` (lanes 16 or 8 blocks).
  static __m512i Step(const uint8_t* g, int s, int lanes) {
    if (lanes == 16) return _mm512_xor_si512(_mm512_load_si512(g + s * 64), _mm512_set1_epi8(char(0x80)));
    const __m256i h = _mm256_load_si256(reinterpret_cast<const __m256i*>(g + s * 32));
    return _mm512_castsi256_si512(_mm256_xor_si256(h, _mm256_set1_epi8(char(0x80))));
  }
};

// The nibble formats (Q4_0, Q4_K): byte i of step j's 4-byte unit holds
// step j in its low and step j + 4 in its high nibble (packed_weights.h),
// so TransposePanel transposes each raw unit once for both steps (RawUnit)
// and splits the nibbles after the transpose (Panel::Split): a byte's
// nibbles move together, so this is the same result as transposing each step.
inline __m512i RawUnit(const uint8_t* g, int j, int lanes) {
  if (lanes == 16) return _mm512_load_si512(g + j * 64);
  return _mm512_castsi256_si512(_mm256_load_si256(reinterpret_cast<const __m256i*>(g + j * 32)));
}

struct Q4_0Panel {
  static constexpr DType kType = DType::kQ4_0;
  static constexpr bool kNibbles = true;
  // The signed weight nibble - 8 of the low (step j) or high (step j + 4) nibbles.
  static __m512i Split(__m512i raw, bool high) {
    const __m512i mask = _mm512_set1_epi8(0x0f);
    const __m512i nib =
        high ? _mm512_and_si512(_mm512_srli_epi16(raw, 4), mask) : _mm512_and_si512(raw, mask);
    return _mm512_sub_epi8(nib, _mm512_set1_epi8(8));
  }
};

// Q4_K (packed_weights.h): the nibbles q = 0..15 as they are (no offset:
// the minimum is a separate term), signed for TDPBSSD.
struct Q4_KPanel {
  static constexpr DType kType = DType::kQ4_K;
  static constexpr bool kNibbles = true;
  static __m512i Split(__m512i raw, bool high) {
    const __m512i mask = _mm512_set1_epi8(0x0f);
    return high ? _mm512_and_si512(_mm512_srli_epi16(raw, 4), mask) : _mm512_and_si512(raw, mask);
  }
};

// Q5_K (packed_weights.h): Q4_K's nibbles plus a fifth bit: q = 0..31. The
// fifth-bit unit follows the group's four nibble units and is transposed
// like them (a byte's 8 bits move together), then FifthBit gives step s's
// bit as 16.
struct Q5_KPanel : Q4_KPanel {
  static constexpr DType kType = DType::kQ5_K;
  // Bit s of each byte of f moved to bit 4 (a 16-bit shift right by s
  // brings each byte's bit s to bit 0 of that byte), the rest cleared.
  static __m512i FifthBit(__m512i f, int s) {
    return _mm512_and_si512(_mm512_slli_epi16(_mm512_srl_epi16(f, _mm_cvtsi32_si128(s)), 4),
                            _mm512_set1_epi8(0x10));
  }
};

// Q6_K (packed_weights.h): q = low nibble | two high bits, then q - 32
// (the signed weight). The high bits of step s sit at bits 2 (s % 4) of
// high byte vector s / 4.
struct Q6_KPanel {
  static constexpr DType kType = DType::kQ6_K;
  static constexpr bool kNibbles = false;
  static __m512i Step(const uint8_t* g, int s, int lanes) {
    const int64_t unit = lanes == 16 ? 64 : 32;
    __m512i raw, h;
    if (lanes == 16) {
      raw = _mm512_load_si512(g + (s & 3) * unit);
      h = _mm512_load_si512(g + 4 * unit + (s / 4) * unit);
    } else {
      raw = _mm512_castsi256_si512(_mm256_load_si256(reinterpret_cast<const __m256i*>(g + (s & 3) * unit)));
      h = _mm512_castsi256_si512(
          _mm256_load_si256(reinterpret_cast<const __m256i*>(g + 4 * unit + (s / 4) * unit)));
    }
    const __m512i nib = s < 4 ? raw : _mm512_srli_epi16(raw, 4);
    const int m = s % 4;
    const __m512i hs = m == 0   ? _mm512_slli_epi16(h, 4)
                       : m == 1 ? _mm512_slli_epi16(h, 2)
                       : m == 2 ? h
                                : _mm512_srli_epi16(h, 2);
    const __m512i q = _mm512_or_si512(_mm512_and_si512(nib, _mm512_set1_epi8(0x0f)),
                                      _mm512_and_si512(hs, _mm512_set1_epi8(0x30)));
    return _mm512_sub_epi8(q, _mm512_set1_epi8(32));
  }
};

// Step s's 2-bit pair (0..3) of the Q3_K / Q2_K pair units: bits 2 (s % 4)
// of each byte of unit s / 4 (a 16-bit shift; the mask keeps the byte's own bits).
inline __m512i PairBits(const uint8_t* g, int s, int lanes) {
  return _mm512_and_si512(_mm512_srl_epi16(RawUnit(g, s / 4, lanes), _mm_cvtsi32_si128(2 * (s % 4))),
                          _mm512_set1_epi8(0x03));
}

// Q3_K (packed_weights.h): q = the 2-bit pair at bits 2 (s % 4) of pair unit
// s / 4 | the third bit (bit s of the third-bit unit) << 2, then q - 4.
struct Q3_KPanel {
  static constexpr DType kType = DType::kQ3_K;
  static constexpr bool kNibbles = false;
  static __m512i Step(const uint8_t* g, int s, int lanes) {
    const __m512i low = PairBits(g, s, lanes), third = RawUnit(g, 2, lanes);
    // Bit s of each byte to bit 0 of that byte, then to bit 2.
    const __m512i high = _mm512_and_si512(_mm512_slli_epi16(_mm512_srl_epi16(third, _mm_cvtsi32_si128(s)), 2),
                                          _mm512_set1_epi8(0x04));
    return _mm512_sub_epi8(_mm512_or_si512(low, high), _mm512_set1_epi8(4));
  }
};

// Q2_K (packed_weights.h): q = the 2-bit pair at bits 2 (s % 4) of pair unit
// s / 4 (0..3, no offset: the minimum is a separate term).
struct Q2_KPanel {
  static constexpr DType kType = DType::kQ2_K;
  static constexpr bool kNibbles = false;
  static __m512i Step(const uint8_t* g, int s, int lanes) { return PairBits(g, s, lanes); }
};

// Per-thread scratch: the transposed panel and the epilogue's buffers.
struct Scratch {
  AlignedBuffer<int8_t> w;  // [blocks][8][16][4]
  AlignedBuffer<float> dw;  // [blocks][16] (Q4_K / Q5_K: d * sc)
  AlignedBuffer<float> dm;  // Q4_K / Q5_K: [blocks][16] dmin * m; Q2_K [blocks][2 halves][16]
  // Q4_K / Q5_K: [tile_tokens / 16][blocks][16 tokens] d_x * sum(q_x);
  // Q2_K: [tile_tokens / 16][blocks][2 halves][16 tokens], per half.
  AlignedBuffer<float> dxsum;
  AlignedBuffer<float> sc;       // Q6_K / Q3_K / Q2_K: [blocks][2 halves][16] the sub-block scales
  AlignedBuffer<int32_t> c;      // 2 x [16 tokens][16 rows]
  AlignedBuffer<float> lane;     // [16 lanes][16 tokens][16 rows]
  AlignedBuffer<int32_t> order;  // blocks in the order they are folded
};

Scratch& ThreadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

// Q4_K / Q5_K (t) row `row`'s f32 d * sc (*dsc) and dmin * m (*dm) of the
// lanes of group g (16, or 8 in the half group): the products the AVX-512
// kernel forms (kquant_avx512.cc), lane l = sub-block 16g + l.
inline void MinKQuantGroupScales(DType t, const uint8_t* row, BlockGroups groups, int64_t g, __m512* dsc,
                                 __m512* dm) {
  const uint8_t* sc = row + KQuantScalesOffset(t, groups) + g * 2 * kGroupBlocks;
  const uint8_t* dd = row + KQuantDOffset(t, groups) + g * 8;
  if (g < groups.full) {
    const __m512i even = _mm512_set_epi32(2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i odd = _mm512_set_epi32(3, 3, 3, 3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m128 d = _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(dd)));
    *dsc = _mm512_mul_ps(
        _mm512_permutexvar_ps(even, _mm512_castps128_ps512(d)),
        _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc)))));
    *dm = _mm512_mul_ps(
        _mm512_permutexvar_ps(odd, _mm512_castps128_ps512(d)),
        _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(sc + 16)))));
  } else {  // half group: one super-block, lanes 0..7
    uint16_t h[2];
    __builtin_memcpy(h, dd, 4);
    const __m256 d_sc = _mm256_mul_ps(
        _mm256_set1_ps(_cvtsh_ss(h[0])),
        _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc)))));
    const __m256 d_m = _mm256_mul_ps(
        _mm256_set1_ps(_cvtsh_ss(h[1])),
        _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc + 8)))));
    *dsc = _mm512_zextps256_ps512(d_sc);
    *dm = _mm512_zextps256_ps512(d_m);
  }
}

// Step 1: rows [r0, r0 + 16) into s.w / s.dw (Q4_K / Q5_K: and s.dm; real blocks only).
template <class Panel>
void TransposePanel(const MatMulArgs& a, int64_t r0, Scratch& s) {
  constexpr DType kType = Panel::kType;
  constexpr bool kMin = HasBlockMinimum(kType), kQ5_K = kType == DType::kQ5_K, kHalves = HasHalves(kType);
  const Int8Activations& xq = *a.xq;
  const BlockGroups groups = xq.groups;
  const int64_t blocks = xq.blocks;
  const int64_t full_bytes = kMin || kHalves ? KQuantGroupBytes(kType) : GroupValueBytes(kType, kGroupBlocks);
  const int64_t scales_offset = kMin || kHalves ? 0 : InterleavedScalesOffset(kType, groups);
  s.w.Resize(static_cast<size_t>(blocks * kBlockBytes));
  s.dw.Resize(static_cast<size_t>(blocks * 16));
  if constexpr (kMin) s.dm.Resize(static_cast<size_t>(blocks * 16));
  if constexpr (kType == DType::kQ2_K) s.dm.Resize(static_cast<size_t>(blocks * 32));
  if constexpr (kHalves) s.sc.Resize(static_cast<size_t>(blocks * 32));
  const int64_t n_groups = groups.full + groups.half;
  for (int64_t g = 0; g < n_groups; ++g) {
    const int lanes = g < groups.full ? 16 : 8;
    const int64_t b0 = g * kGroupBlocks;
    const int real = static_cast<int>(std::min<int64_t>(lanes, blocks - b0));
    __m512i v[16];
    if constexpr (Panel::kNibbles) {
      [[maybe_unused]] __m512i fifth[16];
      if constexpr (kQ5_K) {
        for (int r = 0; r < 16; ++r) {
          fifth[r] = RawUnit(a.w + (r0 + r) * a.row_bytes + g * full_bytes, kSteps / 2, lanes);
        }
        Transpose16x16(fifth);  // fifth[l] = the 16 rows' fifth-bit unit of block b0 + l
      }
      for (int j = 0; j < kSteps / 2; ++j) {
        for (int r = 0; r < 16; ++r) v[r] = RawUnit(a.w + (r0 + r) * a.row_bytes + g * full_bytes, j, lanes);
        Transpose16x16(v);  // v[l] = the 16 rows' raw unit j of block b0 + l
        for (int l = 0; l < real; ++l) {
          int8_t* block = s.w.data() + (b0 + l) * kBlockBytes;
          __m512i low = Panel::Split(v[l], false), high = Panel::Split(v[l], true);
          if constexpr (kQ5_K) {
            low = _mm512_or_si512(low, Q5_KPanel::FifthBit(fifth[l], j));
            high = _mm512_or_si512(high, Q5_KPanel::FifthBit(fifth[l], j + kSteps / 2));
          }
          _mm512_store_si512(block + j * 64, low);
          _mm512_store_si512(block + (j + kSteps / 2) * 64, high);
        }
      }
    } else {
      for (int st = 0; st < kSteps; ++st) {
        for (int r = 0; r < 16; ++r) {
          v[r] = Panel::Step(a.w + (r0 + r) * a.row_bytes + g * full_bytes, st, lanes);
        }
        Transpose16x16(v);  // v[l] = the 16 rows' step st of block b0 + l
        for (int l = 0; l < real; ++l)
          _mm512_store_si512(s.w.data() + (b0 + l) * kBlockBytes + st * 64, v[l]);
      }
    }
    if constexpr (kMin) {
      __m512i m[16];
      for (int r = 0; r < 16; ++r) {
        __m512 dsc, dm;
        MinKQuantGroupScales(kType, a.w + (r0 + r) * a.row_bytes, groups, g, &dsc, &dm);
        v[r] = _mm512_castps_si512(dsc);
        m[r] = _mm512_castps_si512(dm);
      }
      Transpose16x16(v);  // v[l] = the 16 rows' d * sc of sub-block b0 + l
      Transpose16x16(m);
      for (int l = 0; l < real; ++l) {
        _mm512_store_si512(s.dw.data() + (b0 + l) * 16, v[l]);
        _mm512_store_si512(s.dm.data() + (b0 + l) * 16, m[l]);
      }
      continue;
    }
    if constexpr (kHalves) {
      // As kquant_avx512.cc: the scales of the low / high 16-element half
      // of each lane's block (int8; Q2_K: the low nibble of a u8, the high
      // nibble its minimum), the f32 d (Q2_K: and dmin) of its super-block.
      constexpr bool kMins = kType == DType::kQ2_K;
      constexpr int kSuperBlockD = kMins ? 2 : 1;  // f16 values per super-block
      // The group's lanes' bytes of half i (0: low, 1: high), widened (Q2_K unsigned).
      const auto lane_bytes = [&](const uint8_t* sc, int i) {
        if (lanes == 16) {
          const __m128i bytes = _mm_load_si128(reinterpret_cast<const __m128i*>(sc + 16 * i));
          return kMins ? _mm512_cvtepu8_epi32(bytes) : _mm512_cvtepi8_epi32(bytes);
        }
        const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc + 8 * i));
        return _mm512_zextsi256_si512(kMins ? _mm256_cvtepu8_epi32(bytes) : _mm256_cvtepi8_epi32(bytes));
      };
      // Each lane's super-block value j (0: d, 1: dmin) of the group's ds (16 lanes: two super-blocks).
      const auto super_block = [&](const uint8_t* ds, int j) {
        uint16_t h[4] = {};
        const size_t bytes = lanes == 16 ? 4 * kSuperBlockD : 2 * kSuperBlockD;
        __builtin_memcpy(h, ds, bytes);
        const float first = _cvtsh_ss(h[j]), second = _cvtsh_ss(h[kSuperBlockD + j]);
        if (lanes != 16) return _mm512_castps_si512(_mm512_set1_ps(first));
        return _mm512_castps_si512(
            _mm512_mask_blend_ps(0xff00, _mm512_set1_ps(first), _mm512_set1_ps(second)));
      };
      __m512i lo[16], hi[16];
      [[maybe_unused]] __m512i m_lo[16], m_hi[16];  // Q2_K: dmin * m (f32 bits)
      for (int r = 0; r < 16; ++r) {
        const uint8_t* row = a.w + (r0 + r) * a.row_bytes;
        const uint8_t* sc = row + KQuantScalesOffset(kType, groups) + g * 2 * kGroupBlocks;
        const uint8_t* ds = row + KQuantDOffset(kType, groups) + g * 2 * 2 * kSuperBlockD;
        lo[r] = lane_bytes(sc, 0);
        hi[r] = lane_bytes(sc, 1);
        v[r] = super_block(ds, 0);
        if constexpr (kMins) {  // dmin * m per half, the AVX-512 kernel's products
          const __m512 dmin = _mm512_castsi512_ps(super_block(ds, 1));
          m_lo[r] = _mm512_castps_si512(_mm512_mul_ps(dmin, _mm512_cvtepi32_ps(_mm512_srli_epi32(lo[r], 4))));
          m_hi[r] = _mm512_castps_si512(_mm512_mul_ps(dmin, _mm512_cvtepi32_ps(_mm512_srli_epi32(hi[r], 4))));
          lo[r] = _mm512_and_si512(lo[r], _mm512_set1_epi32(0x0f));
          hi[r] = _mm512_and_si512(hi[r], _mm512_set1_epi32(0x0f));
        }
      }
      Transpose16x16(v);
      Transpose16x16(lo);
      Transpose16x16(hi);
      if constexpr (kMins) {
        Transpose16x16(m_lo);
        Transpose16x16(m_hi);
      }
      for (int l = 0; l < real; ++l) {
        _mm512_store_si512(s.dw.data() + (b0 + l) * 16, v[l]);
        _mm512_store_ps(s.sc.data() + (b0 + l) * 32, _mm512_cvtepi32_ps(lo[l]));
        _mm512_store_ps(s.sc.data() + (b0 + l) * 32 + 16, _mm512_cvtepi32_ps(hi[l]));
        if constexpr (kMins) {
          _mm512_store_si512(s.dm.data() + (b0 + l) * 32, m_lo[l]);
          _mm512_store_si512(s.dm.data() + (b0 + l) * 32 + 16, m_hi[l]);
        }
      }
      continue;
    }

    for (int r = 0; r < 16; ++r) {
      const auto* ws = reinterpret_cast<const uint16_t*>(a.w + (r0 + r) * a.row_bytes + scales_offset) + b0;
      const __m512 d =
          lanes == 16
              ? _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(ws)))
              : _mm512_castps256_ps512(_mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(ws))));
      v[r] = _mm512_castps_si512(d);
    }
    Transpose16x16(v);  // v[l] = the 16 rows' scales of block b0 + l
    for (int l = 0; l < real; ++l) _mm512_store_si512(s.dw.data() + (b0 + l) * 16, v[l]);
  }
}

// The blocks lane l of the AVX-512 kernel accumulates, in its order:
// l, l + 16, ... over the full groups, then (l < 8) the half group's block
// l; only real blocks (padding adds nothing: see the top of the file).
template <class Fn>
void ForEachLaneBlock(const Int8Activations& xq, int l, Fn fn) {
  for (int64_t g = 0; g < xq.groups.full; ++g) {
    const int64_t b = g * kGroupBlocks + l;
    if (b < xq.blocks) fn(b);
  }
  if (xq.groups.half != 0 && l < kGroupBlocks / 2) {
    const int64_t b = xq.groups.full * kGroupBlocks + l;
    if (b < xq.blocks) fn(b);
  }
}

// acc[t] += float(C[t]) * (d_w * d_x[t]) for the 16 tokens of a C tile
// (dx: the 16 tokens' scales of this block, contiguous).
inline void FoldBlock(const int32_t* c, const float* dw, const float* dx, __m512 acc[16]) {
  const __m512 dwv = _mm512_load_ps(dw);
#pragma GCC unroll 16
  for (int t = 0; t < 16; ++t) {
    const __m512 scale = _mm512_mul_ps(dwv, _mm512_set1_ps(dx[t]));
    acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c + t * 16)), scale, acc[t]);
  }
}

// The Q4_K fold, as the AVX-512 kernel's per lane (kquant_avx512.cc):
//   acc[t] += float(C[t]) * (d_sc * d_x[t]);  acc[t] -= d_m * dxsum[t]
// (dxsum: the 16 tokens' d_x * sum(q_x) of this sub-block).
inline void FoldBlockMin(const int32_t* c, const float* dsc, const float* dm, const float* dx,
                         const float* dxsum, __m512 acc[16]) {
  const __m512 dscv = _mm512_load_ps(dsc), dmv = _mm512_load_ps(dm);
#pragma GCC unroll 16
  for (int t = 0; t < 16; ++t) {
    const __m512 scale = _mm512_mul_ps(dscv, _mm512_set1_ps(dx[t]));
    acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c + t * 16)), scale, acc[t]);
    acc[t] = _mm512_fnmadd_ps(dmv, _mm512_set1_ps(dxsum[t]), acc[t]);
  }
}

// The Q6_K / Q3_K fold, as the AVX-512 kernel's per lane (kquant_avx512.cc), from
// the two halves' products c_lo / c_hi:
//   acc[t] += float(sc_lo * c_lo[t] + sc_hi * c_hi[t]) * (d_w * d_x[t])
// The integer is formed in f32 (fewer uops than two vpmulld): |sc| <= 128
// and |c| <= 16 * 32 * 127, so both products and their sum are integers
// below 2^24, each exact in f32 - the same float as converting the int32
// sum, bit for bit.
// Q2_K (kMins) then subtracts the minimums' two terms, from dm = dmin * m
// per row and half (the 16 rows' low-half products, then their high-half
// ones) and dxsx = d_x * sum(q_x) per token and half (the 16 tokens'
// low-half products, then their high-half ones), as the AVX-512 kernel:
//   acc[t] -= dm_lo * dxsx_lo[t];  acc[t] -= dm_hi * dxsx_hi[t]
template <bool kMins>
inline void FoldBlockHalves(const int32_t* c_lo, const int32_t* c_hi, const float* sc, const float* dw,
                            const float* dx, const float* dm, const float* dxsx, __m512 acc[16]) {
  const __m512 dwv = _mm512_load_ps(dw);
  const __m512 sc_lo = _mm512_load_ps(sc), sc_hi = _mm512_load_ps(sc + 16);
  [[maybe_unused]] __m512 dm_lo, dm_hi;
  if constexpr (kMins) {
    dm_lo = _mm512_load_ps(dm);
    dm_hi = _mm512_load_ps(dm + 16);
  }
#pragma GCC unroll 16
  for (int t = 0; t < 16; ++t) {
    const __m512 hi = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c_hi + t * 16)), sc_hi);
    const __m512 isum = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c_lo + t * 16)), sc_lo, hi);
    acc[t] = _mm512_fmadd_ps(isum, _mm512_mul_ps(dwv, _mm512_set1_ps(dx[t])), acc[t]);
    if constexpr (kMins) {
      acc[t] = _mm512_fnmadd_ps(dm_lo, _mm512_set1_ps(dxsx[t]), acc[t]);
      acc[t] = _mm512_fnmadd_ps(dm_hi, _mm512_set1_ps(dxsx[16 + t]), acc[t]);
    }
  }
}

// The order in which this kernel visits blocks: lane by lane (ForEachLaneBlock),
// with lane_first[l] = the index in `order` of lane l's first block.
void LaneOrder(const Int8Activations& xq, AlignedBuffer<int32_t>& order,
               int32_t lane_first[kGroupBlocks + 1]) {
  order.Resize(static_cast<size_t>(xq.blocks));
  int32_t n = 0;
  for (int l = 0; l < kGroupBlocks; ++l) {
    lane_first[l] = n;
    ForEachLaneBlock(xq, l, [&](int64_t b) { order.data()[n++] = static_cast<int32_t>(b); });
  }
  lane_first[kGroupBlocks] = n;
}

// Steps 2 and 3 for tokens [t0, t0 + 16) of the transposed panel r0.
// Software-pipelined: while block i is folded, block i + 1's product is
// stored and block i + 2's is computed, so neither the fold nor the tile
// store waits for the tile unit (each right behind its producer stalled it:
// docs/kernels.md, "AMX int8 GEMM").
// Tile registers are not renamed, so two tile sets alternate.
template <DType kType>
void TokenTile(const MatMulArgs& a, int64_t r0, int64_t t0, Scratch& s,
               const int32_t lane_first[kGroupBlocks + 1]) {
  constexpr bool kMin = HasBlockMinimum(kType), kHalves = HasHalves(kType);
  const Int8Activations& xq = *a.xq;
  const int32_t* order = s.order.data();
  const int8_t* q = xq.tile_q.data() + (t0 / 16) * xq.blocks * 512;  // [blocks][16 tokens][32]
  const float* dx = xq.tile_d.data() + (t0 / 16) * xq.blocks * 16;   // [blocks][16 tokens]
  const int64_t n = lane_first[kGroupBlocks];
  constexpr int64_t kBuffers = 4;
  // Item j: its product in tile set j % 2, stored one iteration later (the
  // store waits for the product; right behind it, it stalled the core),
  // folded one iteration after that, from buffer j % kBuffers.
  const auto multiply = [&](int64_t j) {
    const int64_t b = order[j];
    if constexpr (kHalves) {  // Q6_K / Q3_K: C = tiles 0..3 (set, half), A 4 / 5, B 6 / 7 (kHalvesConfig)
      const int8_t* qb = q + b * 512;
      const int8_t* wb = s.w.data() + b * kBlockBytes;
      if (j % 2 == 0) {
        _tile_loadd(4, qb, 32);
        _tile_loadd(6, wb, 64);
        _tile_zero(0);
        _tile_dpbssd(0, 4, 6);
        _tile_loadd(5, qb + 16, 32);
        _tile_loadd(7, wb + 256, 64);
        _tile_zero(1);
        _tile_dpbssd(1, 5, 7);
      } else {
        _tile_loadd(4, qb, 32);
        _tile_loadd(6, wb, 64);
        _tile_zero(2);
        _tile_dpbssd(2, 4, 6);
        _tile_loadd(5, qb + 16, 32);
        _tile_loadd(7, wb + 256, 64);
        _tile_zero(3);
        _tile_dpbssd(3, 5, 7);
      }
      return;
    }
    if (j % 2 == 0) {
      _tile_loadd(2, q + b * 512, 32);
      _tile_loadd(4, s.w.data() + b * kBlockBytes, 64);
      _tile_zero(0);
      _tile_dpbssd(0, 2, 4);
    } else {
      _tile_loadd(3, q + b * 512, 32);
      _tile_loadd(5, s.w.data() + b * kBlockBytes, 64);
      _tile_zero(1);
      _tile_dpbssd(1, 3, 5);
    }
  };
  const auto store = [&](int64_t j) {
    int32_t* c = s.c.data() + (j % kBuffers) * 512;
    if constexpr (kHalves) {
      if (j % 2 == 0) {
        _tile_stored(0, c, 64);
        _tile_stored(1, c + 256, 64);
      } else {
        _tile_stored(2, c, 64);
        _tile_stored(3, c + 256, 64);
      }
      return;
    }
    if (j % 2 == 0) {
      _tile_stored(0, c, 64);
    } else {
      _tile_stored(1, c, 64);
    }
  };
  if (n > 0) multiply(0);
  if (n > 1) multiply(1);
  if (n > 0) store(0);
  const int32_t* c_base = s.c.data();
  const float* dw = s.dw.data();
  float* lanes = s.lane.data();
  int64_t i = 0;
  for (int l = 0; l < kGroupBlocks; ++l) {
    __m512 acc[16];
    for (auto& v : acc) v = _mm512_setzero_ps();
    for (const int64_t end = lane_first[l + 1]; i < end; ++i) {
      if (i + 1 < n) store(i + 1);
      if (i + 2 < n) multiply(i + 2);
      const int64_t b = order[i];
      const int32_t* c = c_base + (i % kBuffers) * 512;
      if constexpr (kMin) {
        const float* dxsum = s.dxsum.data() + (t0 / 16) * xq.blocks * 16;
        FoldBlockMin(c, dw + b * 16, s.dm.data() + b * 16, dx + b * 16, dxsum + b * 16, acc);
      } else if constexpr (kHalves) {
        constexpr bool kMins = kType == DType::kQ2_K;
        const float* dm = kMins ? s.dm.data() + b * 32 : nullptr;
        const float* dxsx = kMins ? s.dxsum.data() + ((t0 / 16) * xq.blocks + b) * 32 : nullptr;
        FoldBlockHalves<kMins>(c, c + 256, s.sc.data() + b * 32, dw + b * 16, dx + b * 16, dm, dxsx, acc);

      } else {
        FoldBlock(c, dw + b * 16, dx + b * 16, acc);
      }
    }
    for (int t = 0; t < 16; ++t) _mm512_store_ps(lanes + l * 256 + t * 16, acc[t]);
  }
  // SumLanes4's tree over the lanes: (l, l + 8), then (i, i + 4), (k, k + 2), (0, 1).
  const __m512 bias = a.bias ? _mm512_loadu_ps(a.bias + r0) : _mm512_setzero_ps();
  // The last tile may be padded past n_tokens (activations.h): y has no row there.
  const int64_t tokens = std::min<int64_t>(16, a.n_tokens - t0);
  for (int t = 0; t < tokens; ++t) {
    const auto at = [&](int j) { return _mm512_load_ps(s.lane.data() + j * 256 + t * 16); };
    __m512 s1[8], s2[4], s3[2];
    for (int j = 0; j < 8; ++j) s1[j] = _mm512_add_ps(at(j), at(j + 8));
    for (int i = 0; i < 4; ++i) s2[i] = _mm512_add_ps(s1[i], s1[i + 4]);
    for (int k = 0; k < 2; ++k) s3[k] = _mm512_add_ps(s2[k], s2[k + 2]);
    __m512 sum = _mm512_add_ps(s3[0], s3[1]);
    if (a.bias) sum = _mm512_add_ps(sum, bias);
    _mm512_storeu_ps(a.y + (t0 + t) * a.n_rows + r0, sum);
  }
}

template <class Panel>
void Panels(const MatMulArgs& a, int64_t row_begin, int64_t row_end) {
  UseTileConfig(HasHalves(Panel::kType) ? kHalvesConfig : kTileConfig);
  Scratch& s = ThreadScratch();
  s.c.Resize(4 * 512);
  s.lane.Resize(16 * 256);
  const Int8Activations& xq = *a.xq;
  int32_t lane_first[kGroupBlocks + 1];
  LaneOrder(xq, s.order, lane_first);
  constexpr bool kMin = HasBlockMinimum(Panel::kType);
  if constexpr (kMin) {
    // d_x * float(sum q_x) per (sub-block, token), the product the AVX-512
    // kernel forms from group_d / group_bias (Prepare: bias = + sum(q)),
    // in the tile order [tile][blocks][16 tokens].
    s.dxsum.Resize(static_cast<size_t>(xq.tile_tokens * xq.blocks));
    for (int64_t t = xq.n_tokens; t < xq.tile_tokens; ++t) {  // padding tokens (no group_d row)
      float* out = s.dxsum.data() + (t / 16) * xq.blocks * 16 + t % 16;
      for (int64_t b = 0; b < xq.blocks; ++b) out[b * 16] = 0.0f;
    }
    for (int64_t t = 0; t < std::min(xq.tile_tokens, xq.n_tokens); ++t) {
      const float* gd = xq.group_d.data() + t * xq.GroupLaneStride();
      const int32_t* gs = xq.group_bias.data() + t * xq.GroupLaneStride();
      float* out = s.dxsum.data() + (t / 16) * xq.blocks * 16 + t % 16;
      for (int64_t b = 0; b < xq.blocks; ++b) out[b * 16] = gd[b] * static_cast<float>(gs[b]);
    }
  }
  if constexpr (Panel::kType == DType::kQ2_K) {
    // d_x * float(sum q_x) per (block, half, token), the products the
    // AVX-512 kernel forms (Prepare: group_bias_lo / group_bias = + the low
    // / high half's sum), in the tile order [tile][blocks][2 halves][16
    // tokens]; padding tokens 0.
    s.dxsum.Resize(static_cast<size_t>(xq.tile_tokens * xq.blocks * 2));
    for (int64_t t = 0; t < xq.tile_tokens; ++t) {
      const bool real = t < xq.n_tokens;
      const float* gd = xq.group_d.data() + t * xq.GroupLaneStride();
      const int32_t* lo = xq.group_bias_lo.data() + t * xq.GroupLaneStride();
      const int32_t* hi = xq.group_bias.data() + t * xq.GroupLaneStride();
      float* out = s.dxsum.data() + (t / 16) * xq.blocks * 32 + t % 16;
      for (int64_t b = 0; b < xq.blocks; ++b) {
        out[b * 32] = real ? gd[b] * static_cast<float>(lo[b]) : 0.0f;
        out[b * 32 + 16] = real ? gd[b] * static_cast<float>(hi[b]) : 0.0f;
      }
    }
  }

  for (int64_t r0 = row_begin; r0 < row_end; r0 += 16) {
    TransposePanel<Panel>(a, r0, s);
    for (int64_t t0 = 0; t0 < xq.tile_tokens; t0 += 16) TokenTile<Panel::kType>(a, r0, t0, s, lane_first);
  }
}

std::atomic<uint64_t> panel_calls{0};

}  // namespace

uint64_t PackedInt8PanelsAmxCalls() { return panel_calls.load(std::memory_order_relaxed); }

void PackedInt8PanelsAmx(const MatMulArgs& args, int64_t row_begin, int64_t row_end) {
  panel_calls.fetch_add(1, std::memory_order_relaxed);
  if (args.dtype == DType::kQ8_0) {
    Panels<Q8_0Panel>(args, row_begin, row_end);
  } else if (args.dtype == DType::kQ4_K) {
    Panels<Q4_KPanel>(args, row_begin, row_end);
  } else if (args.dtype == DType::kQ2_K) {
    Panels<Q2_KPanel>(args, row_begin, row_end);
  } else if (args.dtype == DType::kQ3_K) {
    Panels<Q3_KPanel>(args, row_begin, row_end);
  } else if (args.dtype == DType::kQ5_K) {
    Panels<Q5_KPanel>(args, row_begin, row_end);
  } else if (args.dtype == DType::kQ6_K) {
    Panels<Q6_KPanel>(args, row_begin, row_end);
  } else {
    Panels<Q4_0Panel>(args, row_begin, row_end);
  }
}

void PrepareAmxTileToken(Int8Activations* xq, int64_t t) {
  const int8_t* q = xq->TokenQ(t);
  const float* d = xq->TokenD(t);
  int8_t* tq = xq->tile_q.data() + (t / 16) * xq->blocks * 512 + (t % 16) * 32;
  float* td = xq->tile_d.data() + (t / 16) * xq->blocks * 16 + t % 16;
  for (int64_t b = 0; b < xq->blocks; ++b) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(tq + b * 512),
                       _mm256_load_si256(reinterpret_cast<const __m256i*>(q + b * 32)));
    td[b * 16] = d[b];
  }
}

}  // namespace deepinfer::cpu
