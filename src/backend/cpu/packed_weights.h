// Weight matrices repacked once at load into layouts the AVX-512 kernels read
// with fewer instructions than GGML's file layout: 64-byte aligned rows,
// values already in the form the VNNI instruction wants (unsigned: Q8_0
// w + 128, Q4_0 nibbles w + 8, Q4_K nibbles, Q5_K q = nibble + 16 * fifth
// bit, Q6_K q = w + 32).
//
// Q8_0 / Q4_0 (Q8_0 from 8 blocks on, Q8_0UsesRowPanels): K-interleaved groups, so that one int32 lane of a
// vpdpbusd accumulates one block's whole dot product and the f32 work (convert, scale, fma) is paid once per
// 16 blocks x 32 elements instead of once per 4 elements. A row's blocks are taken 16 at a time ("full"
// group, the last one padded with zero blocks), or 8 for a remainder of 1..8 blocks (one "half" group, last)
// - the same grouping as the activations' group_q (activations.h, GroupsFor). A row holds the values of its
// groups, then the f16 block scales of all its lanes (the file's bytes; 16 per full group, 8 for the half
// group). The values of a group of L lanes (blocks):
//   Q8_0: 8 steps x [L x 4] u8: step s, lane b = bytes 4s..4s+3 of block b, + 128
//         (L = 16: 512 bytes)
//   Q4_0: 4 x [L x 4] u8: byte (j, b, i) = (w_b[4j + i] + 8) | (w_b[4(j+4) + i] + 8) << 4,
//         i.e. one and / shift of a load gives step j / step j + 4  (L = 16: 256 bytes)
// Scales stay f16 because decode streams every byte once: a row is as many
// bytes as in the file (plus padding blocks), not 6% / 11% more as with
// f32 scales. Padding blocks have w = 0 and scale 0, and meet zero
// activations: they add exactly nothing. Summation order over blocks
// differs from the file-layout kernel (per lane, then across lanes), so
// packed and file-layout results agree to f32 rounding, not bit for bit
// (matmul_test bounds it).
//
// Q4_K (K a multiple of 256): K-interleaved, lane b of a group = 32-element
// sub-block b (full group: 2 super-blocks, half group: 1). Values as for
// Q4_0 (4 x [L x 4] bytes, byte (j, b, i) = q(step j) | q(step j + 4) << 4,
// the file's 4-bit q, no offset: L = 16: 256 bytes). After all groups'
// values: per group its lanes' 6-bit scales sc then minimums m (u8, 32 per
// full group, 16 per half), then per super-block its f16 d and dmin. A row
// is the file's 144 bytes per super-block plus 4 (the unpacked scales).
//
// Q5_K (K a multiple of 256): Q4_K's layout with each group's values
// followed by one more [L x 4] bytes, the fifth bits: bit s of byte (b, i)
// is the fifth bit of step s (element 4s + i of sub-block b), so one shift
// and mask of that vector puts step s's fifth bit at bit 4 of its operand
// (L = 16: 320 bytes). Scales, minimums and (d, dmin) as for Q4_K. A row is
// the file's 176 bytes per super-block plus 4.
//
// Q6_K (K a multiple of 256): K-interleaved like Q8_0 / Q4_0, lane b of a
// group = 32-block b, so full groups are 2 super-blocks and a half group (8
// lanes) 1. A group's values are the 6-bit q (0..63, w = q - 32) of steps
// s = 0..7 (step s, lane b, byte i = element 4s + i of block b) split into
//   4 x [L x 4] nibble bytes: byte (j, b, i) = low4(step j) | low4(step j + 4) << 4
//   2 x [L x 4] high bytes:   byte (h, b, i) = sum_m high2(step 4h + m) << 2m
// (L = 16: 384 bytes, as in the file), so one load and two or three bit
// operations give a step's u8 operand. After all groups' values: per group
// its lanes' low-half scales then high-half scales (int8, the file's
// bytes: 32 per full group, 16 per half), then the f16 d of every
// super-block. A row is the file's 210 bytes per super-block, in another order.
//
// Q3_K (K a multiple of 256): Q6_K's grouping, scales (the 6-bit scale - 32
// as int8) and f16 d, with the 3-bit q (0..7, w = q - 4) of a group as
//   2 x [L x 4] pair bytes:  byte (h, b, i) = sum_m low2(step 4h + m) << 2m
//   1 x [L x 4] third bytes: bit s of byte (b, i) = bit 2 of step s's q
// (L = 16: 192 bytes). A row is the file's 110 bytes per super-block plus 4.
//
// Q2_K (K a multiple of 256): Q3_K's two pair units without the third-bit
// unit (q = 0..3; L = 16: 128 bytes); per group its lanes' low-half then
// high-half scale bytes (the file's: 4-bit scale | 4-bit minimum << 4; 32
// per full group), then the f16 d and dmin of every super-block. A row is
// the file's 84 bytes per super-block, in another order.

//
// Q8_0 of fewer than 8 blocks per row (K < 256: Q8_0UsesRowPanels): row
// panels instead, as for BF16 below, because the interleaved groups would
// be mostly padding. Panel p holds rows [16p, 16p + 16) as, per block b,
// kQ8_0PanelBlockBytes: 8 steps x [16 rows x 4] u8 (step s, row r = bytes
// 4s..4s+3 of row 16p + r's block b, + 128), then the 16 rows' block
// scales as f32 (the file's f16, widened exactly). row_stride = a panel's
// bytes / 16; rows past the matrix are zero bytes with scale 0.
//
// BF16: panels of 16 rows for an outer-product kernel (panels_avx512.cc).
// Panel p holds rows [16p, 16p + 16) as [K/2 pairs][16 rows][2 bf16]: the 64
// bytes at pair i are (w[16p + r][2i], w[16p + r][2i + 1]) for r = 0..15,
// one vdpbf16ps operand whose lane r accumulates row 16p + r. K is padded to
// even with a zero element, the last panel with zero rows. Panel p starts at
// p * 16 * row_stride (row_stride = 2 * K rounded up to even: a panel's
// bytes / 16, a multiple of 4; panels are 64-byte aligned). Memory: the
// file's bytes plus the padding (< 1 pair per row, < 16 rows per matrix).
//
// F16 / F32: panels of 16 rows for the same outer product with f32 fmas.
// Panel p holds rows [16p, 16p + 16) as [K][16 rows] of the file's f16 /
// f32 values (32 / 64 bytes per element index), the last panel padded with
// zero rows; row_stride = a panel's bytes / 16 (F16: 2 * K rounded up to a
// multiple of 4, so panels stay 64-byte aligned). Same bytes as the file
// plus the padding; no value changes (F16 is not rounded to BF16: the
// f32-activation arithmetic, and the reference tests' tolerance, stay).
//
// Row stride rounded up to 64 bytes (except BF16 / F16 / F32, above). Memory: +0% (Q8_0,
// Q4_0 when K is a multiple of 512, Q6_K, Q2_K) / +3% (Q4_K, Q3_K) / +2% (Q5_K) of the packed matrices

// (plus padding blocks when K / 32 is not a multiple of 8); the file's
// pages are no longer read after packing.
#pragma once

#include <cstdint>
#include <deque>

#include "backend/cpu/activations.h"
#include "backend/cpu/isa.h"
#include "backend/cpu/weight_arena.h"
#include "tensor/tensor_view.h"

namespace deepinfer::cpu {

struct PackedLayout {
  DType dtype = DType::kF32;  // the type the packed bytes encode
  int64_t rows = 0, k = 0;
  bool row_panels = false;  // Q8_0 in row panels (Q8_0UsesRowPanels)
  int64_t row_stride = 0;   // bytes (BF16 and row panels: a panel's bytes / 16)
  int64_t bytes = 0;        // the whole packed copy (BF16: padded panels included)
};

// One packed matrix: a view of the copy's bytes (same name, dtype and shape
// as the file's matrix) and its layout, both owned by the PackedWeights that
// made it. `layout` null: `view` is the file's matrix itself (no packed
// kernel for its type at the active ISA level).
struct PackedMatrix {
  TensorView view;
  const PackedLayout* layout = nullptr;
};

// Owns packed copies and their layouts. MatMul is handed the layout with
// the view (MatMulTarget::packed) - there is no lookup by address.
class PackedWeights {
 public:
  PackedWeights() = default;
  PackedWeights(const PackedWeights&) = delete;
  PackedWeights& operator=(const PackedWeights&) = delete;

  // A packed copy of w when the active ISA has a packed kernel for w.dtype,
  // else {w, nullptr}. Valid while *this lives. Not thread-safe; call at load time.
  PackedMatrix Pack(const TensorView& w);

  int64_t packed_bytes() const { return packed_bytes_; }

 private:
  WeightArena arena_;
  std::deque<PackedLayout> layouts_;  // a deque: the addresses handed out stay valid
  int64_t packed_bytes_ = 0;
};

// True when `isa`'s kernel set reads packed matrices of type t.
bool PacksType(Isa isa, DType t);

// Packs rows [0, layout.rows) of w (file layout) into dst (layout.bytes
// bytes). Exposed for tests.
void PackMatrix(const TensorView& w, const PackedLayout& layout, uint8_t* dst);
PackedLayout PackedLayoutFor(DType t, int64_t rows, int64_t k);

// Q8_0 rows of fewer than 8 blocks are packed in row panels: measured
// faster than the interleaved groups there (docs/kernels.md).
constexpr bool Q8_0UsesRowPanels(int64_t k) { return k / 32 < 8; }
// One block of a Q8_0 row panel: 8 steps x 64 bytes, then 16 f32 scales.
inline constexpr int64_t kQ8_0PanelBlockBytes = 8 * 64 + 16 * 4;

// Value bytes of one interleaved Q8_0 / Q4_0 group of `lanes` blocks.
constexpr int64_t GroupValueBytes(DType t, int64_t lanes) { return lanes * (t == DType::kQ8_0 ? 32 : 16); }
// Where a packed Q8_0 / Q4_0 row's f16 scales start (64-byte aligned).
constexpr int64_t InterleavedScalesOffset(DType t, BlockGroups groups) {
  return groups.full * GroupValueBytes(t, kGroupBlocks) + groups.half * GroupValueBytes(t, kGroupBlocks / 2);
}

// Value bytes of a full group (16 lanes) of a packed K-quant; a half group
// (8 lanes) has half as many.
constexpr int64_t KQuantGroupBytes(DType t) {
  return t == DType::kQ2_K   ? 128
         : t == DType::kQ3_K ? 192
         : t == DType::kQ4_K ? 256
         : t == DType::kQ5_K ? 320
                             : 384;
}
// Packed K-quant rows: where the per-lane scales start (two bytes per lane:
// Q4_K / Q5_K u8 scale and minimum, Q6_K / Q3_K the int8 scales of the two
// halves, Q2_K the halves' (scale | minimum << 4) bytes) and where the f16
// super-block scales start.
constexpr int64_t KQuantScalesOffset(DType t, BlockGroups groups) {
  return groups.full * KQuantGroupBytes(t) + groups.half * KQuantGroupBytes(t) / 2;
}
constexpr int64_t KQuantDOffset(DType t, BlockGroups groups) {
  return KQuantScalesOffset(t, groups) + (groups.full * kGroupBlocks + groups.half * kGroupBlocks / 2) * 2;
}

}  // namespace deepinfer::cpu
