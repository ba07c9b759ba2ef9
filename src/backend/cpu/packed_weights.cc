#include "backend/cpu/packed_weights.h"

#include <algorithm>
#include <cstring>

#include "backend/cpu/activations.h"
#include "backend/cpu/kernels.h"
#include "core/check.h"
#include "tensor/dequant.h"

namespace deepinfer::cpu {
namespace {

// Element j (0..31) of a Q4_0 block as its stored nibble (w + 8).
int Q4_0Nibble(const uint8_t* block, int j) { return j < 16 ? block[2 + j] & 0x0f : block[2 + j - 16] >> 4; }

// One interleaved group (packed_weights.h) of `lanes` blocks starting at
// block b0 of a Q8_0 / Q4_0 row `src`: its values at `dst`, its f16 scales
// at `scales`; blocks >= `blocks` are padding (w = 0, scale 0).
void PackGroup(DType t, const uint8_t* src, int64_t blocks, int64_t b0, int64_t lanes, uint8_t* dst,
               uint8_t* scales) {
  const int64_t block_bytes = t == DType::kQ8_0 ? 34 : 18;
  for (int64_t b = 0; b < lanes; ++b) {
    const bool real = b0 + b < blocks;
    const uint8_t* blk = real ? src + (b0 + b) * block_bytes : nullptr;
    // The file's f16 scale bytes as they are (little-endian): the kernel
    // widens them with vcvtph2ps, which is exact.
    scales[2 * b] = real ? blk[0] : 0;
    scales[2 * b + 1] = real ? blk[1] : 0;
    for (int s = 0; s < 8; ++s) {
      for (int i = 0; i < 4; ++i) {
        const int e = 4 * s + i;  // element of the block
        if (t == DType::kQ8_0) {
          dst[(s * lanes + b) * 4 + i] = real ? blk[2 + e] ^ 0x80 : 0x80;
        } else if (s < 4) {  // steps s and s + 4 share a byte: low / high nibble
          const int lo = real ? Q4_0Nibble(blk, e) : 8, hi = real ? Q4_0Nibble(blk, e + 16) : 8;
          dst[(s * lanes + b) * 4 + i] = static_cast<uint8_t>(lo | (hi << 4));
        }
      }
    }
  }
}

void PackInterleavedRow(DType t, const uint8_t* src, int64_t blocks, uint8_t* dst) {
  const BlockGroups groups = GroupsFor(blocks);
  uint8_t* scales = dst + InterleavedScalesOffset(t, groups);
  for (int64_t g = 0; g < groups.full; ++g) {
    PackGroup(t, src, blocks, g * kGroupBlocks, kGroupBlocks, dst + g * GroupValueBytes(t, kGroupBlocks),
              scales + g * kGroupBlocks * 2);
  }
  if (groups.half != 0) {
    PackGroup(t, src, blocks, groups.full * kGroupBlocks, kGroupBlocks / 2,
              dst + groups.full * GroupValueBytes(t, kGroupBlocks), scales + groups.full * kGroupBlocks * 2);
  }
}

// Q4_K / Q5_K (packed_weights.h): group g covers sub-blocks [16g, 16g + lanes).
void PackQ4_KOrQ5_KRow(DType t, const uint8_t* src, int64_t blocks, uint8_t* dst) {
  const bool five = t == DType::kQ5_K;
  const int64_t sb_bytes = BlockBytes(t);
  const BlockGroups groups = GroupsFor(blocks);
  uint8_t* scales = dst + KQuantScalesOffset(t, groups);
  uint8_t* ds = dst + KQuantDOffset(t, groups);
  for (int64_t sb = 0; sb < blocks / 8; ++sb) std::memcpy(ds + 4 * sb, src + sb * sb_bytes, 4);  // d, dmin
  for (int64_t g = 0; g < groups.full + groups.half; ++g) {
    const int64_t lanes = g < groups.full ? kGroupBlocks : kGroupBlocks / 2;
    uint8_t* values = dst + g * KQuantGroupBytes(t);
    uint8_t* fifth = values + 16 * lanes;
    for (int64_t b = 0; b < lanes; ++b) {
      const int64_t block = g * kGroupBlocks + b;
      const uint8_t* sb = src + block / 8 * sb_bytes;
      const int s = static_cast<int>(block % 8);
      int sc, m;
      Q4KScaleMin(s, sb + 4, &sc, &m);

      scales[b] = static_cast<uint8_t>(sc);
      scales[lanes + b] = static_cast<uint8_t>(m);
      // Sub-block s's q (Q4_K: the low (s even) or high (s odd) nibbles of qs[32 (s / 2) ..]).
      const uint8_t* qs = sb + 16 + 32 * (s / 2);
      const auto q = [&](int e) {
        if (five) return Q5_KValue(sb, s, e);
        return s % 2 == 0 ? qs[e] & 0x0f : qs[e] >> 4;
      };
      for (int j = 0; j < 4; ++j) {
        for (int i = 0; i < 4; ++i) {
          values[(j * lanes + b) * 4 + i] =
              static_cast<uint8_t>((q(4 * j + i) & 0x0f) | ((q(4 * (j + 4) + i) & 0x0f) << 4));
        }
      }
      if (!five) continue;
      for (int i = 0; i < 4; ++i) {
        int bits = 0;
        for (int step = 0; step < 8; ++step) bits |= (q(4 * step + i) >> 4) << step;
        fifth[b * 4 + i] = static_cast<uint8_t>(bits);
      }
    }
    scales += 2 * lanes;
  }
}

// Q6_K / Q3_K / Q2_K (packed_weights.h): group g covers blocks [16g, 16g + lanes).
void PackHalvesRow(DType t, const uint8_t* src, int64_t blocks, uint8_t* dst) {
  const bool q6 = t == DType::kQ6_K, q2 = t == DType::kQ2_K;
  const int64_t sb_bytes = BlockBytes(t), d_at = q6 ? 208 : q2 ? 80 : 108, d_bytes = q2 ? 4 : 2;
  const BlockGroups groups = GroupsFor(blocks);
  uint8_t* scales = dst + KQuantScalesOffset(t, groups);
  uint8_t* ds = dst + KQuantDOffset(t, groups);
  for (int64_t sb = 0; sb < blocks / 8; ++sb) {
    std::memcpy(ds + d_bytes * sb, src + sb * sb_bytes + d_at, static_cast<size_t>(d_bytes));  // d (, dmin)
  }
  for (int64_t g = 0; g < groups.full + groups.half; ++g) {
    const int64_t lanes = g < groups.full ? kGroupBlocks : kGroupBlocks / 2;
    uint8_t* values = dst + g * KQuantGroupBytes(t);
    for (int64_t b = 0; b < lanes; ++b) {
      const int64_t block = g * kGroupBlocks + b;
      const uint8_t* sb = src + block / 8 * sb_bytes;
      const int e0 = static_cast<int>(block % 8) * 32;  // the block's first element in its super-block
      for (int half = 0; half < 2; ++half) {
        const int j = e0 / 16 + half;
        // Q2_K: the file's (scale | minimum << 4) byte; Q6_K / Q3_K: the int8 scale.
        const int scale = q2 ? sb[j] : q6 ? sb[192 + j] : Q3_KScale(sb, j);
        scales[half * lanes + b] = static_cast<uint8_t>(scale);
      }
      for (int i = 0; i < 4; ++i) {
        for (int step = 0; step < 8; ++step) {
          const int e = e0 + 4 * step + i;
          if (q6) {  // 4 nibble units (steps s and s + 4), then 2 units of 2-bit pairs (steps 4h..4h+3)
            const int q = Q6_KValue(sb, e);
            values[((step % 4) * lanes + b) * 4 + i] |= static_cast<uint8_t>((q & 0x0f) << (4 * (step / 4)));
            values[((4 + step / 4) * lanes + b) * 4 + i] |=
                static_cast<uint8_t>((q >> 4) << (2 * (step % 4)));
          } else {  // 2 units of 2-bit pairs (steps 4h..4h+3), then (Q3_K) 1 unit of third bits
            const int q = q2 ? Q2_KValue(sb, e) : Q3_KValue(sb, e);
            values[((step / 4) * lanes + b) * 4 + i] |= static_cast<uint8_t>((q & 3) << (2 * (step % 4)));
            if (!q2) values[(2 * lanes + b) * 4 + i] |= static_cast<uint8_t>((q >> 2) << step);
          }
        }
      }
    }
    scales += 2 * lanes;
  }
}

// BF16 panels (packed_weights.h): pair i of panel p's row r is the 4 bytes
// of elements 2i, 2i + 1 of row 16p + r (element K of an odd K, and rows
// past the matrix, stay the zeros dst was cleared to).
void PackBf16Panels(const uint8_t* src, int64_t rows, int64_t k, uint8_t* dst) {
  const int64_t panels = (rows + 15) / 16, full_pairs = k / 2, pairs = (k + 1) / 2;
  const int64_t row_bytes = 2 * k;
  for (int64_t p = 0; p < panels; ++p) {
    uint8_t* panel = dst + p * pairs * 64;
    const int64_t n = std::min<int64_t>(16, rows - p * 16);
    for (int64_t i = 0; i < full_pairs; ++i) {
      for (int64_t r = 0; r < n; ++r) {
        std::memcpy(panel + i * 64 + r * 4, src + (p * 16 + r) * row_bytes + i * 4, 4);
      }
    }
    if (pairs != full_pairs) {
      for (int64_t r = 0; r < n; ++r) {
        std::memcpy(panel + full_pairs * 64 + r * 4, src + (p * 16 + r) * row_bytes + full_pairs * 4, 2);
      }
    }
  }
}

// Q8_0 row panels (packed_weights.h): block b of panel p's row r at
// p * panel_bytes + b * kQ8_0PanelBlockBytes, step s's 4 bytes at s * 64 +
// r * 4, its scale at 512 + r * 4; rows past the matrix stay the zeros dst
// was cleared to.
void PackQ8_0Panels(const uint8_t* src, int64_t rows, int64_t blocks, int64_t panel_bytes, uint8_t* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* panel = dst + r / 16 * panel_bytes;
    const int64_t lane = r % 16;
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* blk = src + (r * blocks + b) * 34;
      uint8_t* out = panel + b * kQ8_0PanelBlockBytes;
      uint16_t d16;
      std::memcpy(&d16, blk, 2);
      const float d = F16ToF32(d16);
      std::memcpy(out + 512 + lane * 4, &d, 4);
      for (int s = 0; s < 8; ++s) {
        for (int i = 0; i < 4; ++i) out[s * 64 + lane * 4 + i] = blk[2 + 4 * s + i] ^ 0x80;
      }
    }
  }
}

// F16 / F32 panels (packed_weights.h): element i of panel p's row r at
// (i * 16 + r) * size; rows past the matrix stay the zeros dst was cleared to.
void PackFloatPanels(const uint8_t* src, int64_t rows, int64_t k, int64_t size, int64_t panel_bytes,
                     uint8_t* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* panel = dst + r / 16 * panel_bytes + r % 16 * size;
    const uint8_t* row = src + r * k * size;
    for (int64_t i = 0; i < k; ++i)
      std::memcpy(panel + i * 16 * size, row + i * size, static_cast<size_t>(size));
  }
}

}  // namespace

bool PacksType(Isa isa, DType t) {
  return isa == Isa::kAvx512 &&
         (t == DType::kQ8_0 || t == DType::kQ4_0 || t == DType::kQ2_K || t == DType::kQ3_K ||
          t == DType::kQ4_K || t == DType::kQ5_K || t == DType::kQ6_K || t == DType::kBF16 ||
          t == DType::kF16 || t == DType::kF32);
}

PackedLayout PackedLayoutFor(DType t, int64_t rows, int64_t k) {
  PackedLayout layout;
  layout.dtype = t;
  layout.rows = rows;
  layout.k = k;
  if (t == DType::kBF16) {
    layout.row_stride = (k + 1) / 2 * 4;
    layout.bytes = (rows + 15) / 16 * 16 * layout.row_stride;
    return layout;
  }
  if (t == DType::kF16 || t == DType::kF32) {
    layout.row_stride = t == DType::kF16 ? (2 * k + 3) / 4 * 4 : 4 * k;
    layout.bytes = (rows + 15) / 16 * 16 * layout.row_stride;
    return layout;
  }
  if (t == DType::kQ8_0 && Q8_0UsesRowPanels(k)) {
    layout.row_panels = true;
    layout.row_stride = k / 32 * kQ8_0PanelBlockBytes / 16;
    layout.bytes = (rows + 15) / 16 * 16 * layout.row_stride;
    return layout;
  }
  int64_t bytes = 0;
  if (t == DType::kQ4_K || t == DType::kQ5_K) {
    bytes = KQuantDOffset(t, GroupsFor(k / 32)) + k / 256 * 4;
  } else if (HasHalves(t)) {
    bytes = KQuantDOffset(t, GroupsFor(k / 32)) + k / 256 * (t == DType::kQ2_K ? 4 : 2);
  } else {
    const BlockGroups groups = GroupsFor(k / 32);
    bytes = InterleavedScalesOffset(t, groups) +
            (groups.full * kGroupBlocks + groups.half * kGroupBlocks / 2) * 2;
  }
  layout.row_stride = (bytes + 63) / 64 * 64;
  layout.bytes = rows * layout.row_stride;
  return layout;
}

void PackMatrix(const TensorView& w, const PackedLayout& layout, uint8_t* dst) {
  const int64_t row_bytes = RowBytes(w.dtype, layout.k);
  const int64_t blocks = layout.k / 32;
  const auto* src = static_cast<const uint8_t*>(w.data);
  if (w.dtype == DType::kBF16) {
    std::memset(dst, 0, static_cast<size_t>(layout.bytes));
    PackBf16Panels(src, layout.rows, layout.k, dst);
    return;
  }
  if (w.dtype == DType::kF16 || w.dtype == DType::kF32) {
    std::memset(dst, 0, static_cast<size_t>(layout.bytes));
    PackFloatPanels(src, layout.rows, layout.k, w.dtype == DType::kF16 ? 2 : 4, 16 * layout.row_stride, dst);
    return;
  }
  if (layout.row_panels) {
    std::memset(dst, 0, static_cast<size_t>(layout.bytes));
    PackQ8_0Panels(src, layout.rows, blocks, 16 * layout.row_stride, dst);
    return;
  }
  for (int64_t r = 0; r < layout.rows; ++r) {
    uint8_t* out = dst + r * layout.row_stride;
    std::memset(out, 0, static_cast<size_t>(layout.row_stride));
    if (w.dtype == DType::kQ8_0 || w.dtype == DType::kQ4_0) {
      PackInterleavedRow(w.dtype, src + r * row_bytes, blocks, out);
    } else if (HasHalves(w.dtype)) {
      PackHalvesRow(w.dtype, src + r * row_bytes, blocks, out);
    } else {
      DI_CHECK(w.dtype == DType::kQ4_K || w.dtype == DType::kQ5_K);
      PackQ4_KOrQ5_KRow(w.dtype, src + r * row_bytes, blocks, out);
    }
  }
}

PackedMatrix PackedWeights::Pack(const TensorView& w) {
  if (!PacksType(ActiveIsa(), w.dtype) || w.shape.size() != 2 || RowBytes(w.dtype, w.cols()) <= 0) return {w};
  const PackedLayout& layout = layouts_.emplace_back(PackedLayoutFor(w.dtype, w.rows(), w.cols()));
  uint8_t* data = arena_.Allocate(static_cast<size_t>(layout.bytes));
  PackMatrix(w, layout, data);
  PackedMatrix packed{w, &layout};
  packed.view.data = data;
  packed.view.nbytes = layout.bytes;
  packed_bytes_ += layout.bytes;
  return packed;
}

}  // namespace deepinfer::cpu
