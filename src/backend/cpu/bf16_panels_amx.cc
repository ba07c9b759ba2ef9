// AMX BF16 (TDPBF16PS) over the packed BF16 panels (packed_weights.h).
//
// Why no transpose: a panel stores 16 rows as [K/2 pairs][16 rows][2 bf16],
// which is exactly the B operand of TDPBF16PS (a row of B = one K-pair of 16
// columns), so 16 pairs of a panel are one 1 KiB tile load. A = 16 tokens'
// bf16 activations (32 elements of each, args.xb), C = 16 tokens x 16 rows of
// f32 accumulated over all of K inside the tile register; no per-block
// scale, so unlike int8 there is no epilogue per step, only one store and the
// bias per (panel, token tile).
//
// Arithmetic: per (row, token) the tile unit's own f32 sum over K in chunk
// order (16 pairs per instruction), then + bias. It is not the order of the
// vdpbf16ps panel kernel (last-bit differences between the two, like between
// ISA levels), so when AMX-BF16 is enabled it runs for every token count -
// a GEMV is a tile whose other 15 token rows are zero - and a row's result
// depends only on its own row and token, never on the batch: batch
// invariance holds (matmul_test). A GEMV is memory-bound anyway: a 1 KiB
// tile per 16 cycles is ~100 GB/s per core.
//
// Tiles: C(t, p) = 2t + p for token tiles t and panels p of a 2 x 2 block
// (4 accumulators: TDPBF16PS into one C has ~50 cycles of latency and one
// issues every 16), A(t) = 4 + t, B(p) = 6 + p. Partial token tiles (the
// last n mod 16 tokens, and a GEMV) are copied into a zero-padded 16-row
// scratch; a panel's last partial chunk of pairs (K/2 mod 16) into a
// zero-padded 1 KiB one (the tile would otherwise read the next panel, or
// past the matrix).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/aligned_buffer.h"
#include "backend/cpu/amx_tiles.h"
#include "backend/cpu/kernels_amx.h"
#include "core/check.h"

namespace deepinfer::cpu {
namespace {

constexpr TileConfig kBf16Config = {1,
                                    0,
                                    {},
                                    {64, 64, 64, 64, 64, 64, 64, 64, 0, 0, 0, 0, 0, 0, 0, 0},
                                    {16, 16, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0}};

constexpr int64_t kChunkPairs = 16;  // K-pairs per tile operand

struct Call {
  const MatMulArgs* a;
  int64_t pairs, chunks, panel_bytes;
};

// Token tile t0: its activations (a 16-row tile at 64-byte row stride over
// the whole K) - args.xb itself when all 16 tokens exist, else the
// zero-padded scratch.
struct TokenRows {
  const uint16_t* x;
  int64_t stride_bytes;
  int64_t count;  // real tokens
};

// A thread's zero-padded copy of a partial token tile; rows past the last
// copy's tokens are known to be zero up to dirty_rows.
struct PadTile {
  AlignedBuffer<uint16_t> x;
  int64_t stride = -1, dirty_rows = 0;
};

TokenRows TokensAt(const Call& c, int64_t t0, PadTile& pad) {
  const MatMulArgs& a = *c.a;
  const int64_t count = std::min<int64_t>(16, a.n_tokens - t0);
  const int64_t stride = a.xb_stride;
  if (count == 16) return {a.xb + t0 * stride, stride * 2, 16};
  if (pad.stride != stride) {
    pad.x.Resize(static_cast<size_t>(16 * stride));
    std::memset(pad.x.data(), 0, static_cast<size_t>(16 * stride * 2));
    pad.stride = stride;
    pad.dirty_rows = 0;
  }
  std::memcpy(pad.x.data(), a.xb + t0 * stride, static_cast<size_t>(count * stride * 2));
  if (pad.dirty_rows > count) {
    std::memset(pad.x.data() + count * stride, 0, static_cast<size_t>((pad.dirty_rows - count) * stride * 2));
  }
  pad.dirty_rows = count;
  return {pad.x.data(), stride * 2, count};
}

// B operand of chunk j of panel p: in place, or the zero-padded copy of a
// last partial chunk.
inline const uint8_t* ChunkB(const Call& c, int64_t p, int64_t j, uint8_t* tail) {
  const uint8_t* base = c.a->w + p * c.panel_bytes + j * kChunkPairs * 64;
  const int64_t real = std::min<int64_t>(kChunkPairs, c.pairs - j * kChunkPairs);
  if (real == kChunkPairs) return base;
  std::memcpy(tail, base, static_cast<size_t>(real * 64));
  std::memset(tail + real * 64, 0, static_cast<size_t>((kChunkPairs - real) * 64));
  return tail;
}

// y for NT token tiles x NP panels starting at token tile `tok[0]` and panel p0.
template <int NT, int NP>
void Block(const Call& c, const TokenRows (&tok)[2], int64_t t0, int64_t p0, float* cbuf, uint8_t* tail) {
  const MatMulArgs& a = *c.a;
  _tile_zero(0);
  if constexpr (NP == 2) _tile_zero(1);
  if constexpr (NT == 2) _tile_zero(2);
  if constexpr (NT == 2 && NP == 2) _tile_zero(3);
  for (int64_t j = 0; j < c.chunks; ++j) {
    // Each panel is one contiguous stream; ask for the chunk two ahead
    // (2 KiB) into L2. DRAM-sized GEMV, 2 threads: 27-28 GB/s without, 32.6-33.8
    // with (the vdpbf16ps GEMV: 33-34); 3 or more chunks ahead gained nothing.
    // Prefetches never fault: running past the panel is harmless.
    for (int p = 0; p < NP; ++p) {
      const char* ahead = reinterpret_cast<const char*>(c.a->w + (p0 + p) * c.panel_bytes + (j + 2) * 1024);
      for (int l = 0; l < 1024; l += 64) _mm_prefetch(ahead + l, _MM_HINT_T1);
    }
    _tile_loadd(4, tok[0].x + j * 32, tok[0].stride_bytes);
    if constexpr (NT == 2) _tile_loadd(5, tok[1].x + j * 32, tok[1].stride_bytes);
    _tile_loadd(6, ChunkB(c, p0, j, tail), 64);
    if constexpr (NP == 2) _tile_loadd(7, ChunkB(c, p0 + 1, j, tail + 1024), 64);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (NP == 2) _tile_dpbf16ps(1, 4, 7);
    if constexpr (NT == 2) _tile_dpbf16ps(2, 5, 6);
    if constexpr (NT == 2 && NP == 2) _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, cbuf, 64);
  if constexpr (NP == 2) _tile_stored(1, cbuf + 256, 64);
  if constexpr (NT == 2) _tile_stored(2, cbuf + 512, 64);
  if constexpr (NT == 2 && NP == 2) _tile_stored(3, cbuf + 768, 64);
  for (int t = 0; t < NT; ++t) {
    for (int p = 0; p < NP; ++p) {
      const int64_t r0 = (p0 + p) * 16;
      const int64_t rows = std::min<int64_t>(16, a.n_rows - r0);
      if (rows <= 0) continue;
      const auto mask = static_cast<__mmask16>((1u << rows) - 1);
      const __m512 bias = a.bias ? _mm512_maskz_loadu_ps(mask, a.bias + r0) : _mm512_setzero_ps();
      const float* ct = cbuf + (2 * t + p) * 256;
      for (int64_t i = 0; i < tok[t].count; ++i) {
        __m512 v = _mm512_load_ps(ct + i * 16);
        if (a.bias) v = _mm512_add_ps(v, bias);
        _mm512_mask_storeu_ps(a.y + (t0 + 16 * t + i) * a.n_rows + r0, mask, v);
      }
    }
  }
}

}  // namespace

void Bf16PanelsAmx(const MatMulArgs& a, int64_t row_begin, int64_t row_end) {
  DI_CHECK(row_begin % 16 == 0);
  UseTileConfig(kBf16Config);
  const int64_t pairs = (a.k + 1) / 2;
  const Call c{&a, pairs, (pairs + kChunkPairs - 1) / kChunkPairs, 64 * pairs};
  struct Scratch {
    PadTile pad[2];
    AlignedBuffer<float> cbuf;
    AlignedBuffer<uint8_t> tail;
  };
  thread_local Scratch s;
  s.cbuf.Resize(1024);
  s.tail.Resize(2048);
  const int64_t p_begin = row_begin / 16, p_end = (row_end + 15) / 16;
  for (int64_t p = p_begin; p < p_end; p += 2) {
    const bool two_panels = p + 1 < p_end;
    for (int64_t t0 = 0; t0 < a.n_tokens; t0 += 32) {
      const TokenRows tok[2] = {TokensAt(c, t0, s.pad[0]), t0 + 16 < a.n_tokens
                                                               ? TokensAt(c, t0 + 16, s.pad[1])
                                                               : TokenRows{nullptr, 0, 0}};
      const bool two_tiles = tok[1].count > 0;
      if (two_tiles && two_panels) {
        Block<2, 2>(c, tok, t0, p, s.cbuf.data(), s.tail.data());
      } else if (two_tiles) {
        Block<2, 1>(c, tok, t0, p, s.cbuf.data(), s.tail.data());
      } else if (two_panels) {
        Block<1, 2>(c, tok, t0, p, s.cbuf.data(), s.tail.data());
      } else {
        Block<1, 1>(c, tok, t0, p, s.cbuf.data(), s.tail.data());
      }
    }
  }
}

}  // namespace deepinfer::cpu
