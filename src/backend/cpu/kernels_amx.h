// The AMX kernels (packed_int8_amx.cc, bf16_panels_amx.cc). Compiled with
// AVX-512 and AMX flags: call only when AmxInt8Enabled() / AmxBf16Enabled()
// (amx.h).
#pragma once

#include <cstdint>

#include "backend/cpu/kernels.h"

namespace deepinfer::cpu {

// Packed Q8_0 / Q4_0 / Q2_K..Q6_K (args.dtype; interleaved layouts, packed_weights.h):
// y for rows [row_begin, row_end) (a multiple of 16 rows) and tokens
// [0, min(args.xq->tile_tokens, args.n_tokens)) (tile_tokens a multiple of 16, the last tile
// possibly padded), bit-identical to the
// AVX-512 kernels.
void PackedInt8PanelsAmx(const MatMulArgs& args, int64_t row_begin, int64_t row_end);

// The split every packed int8 row-range kernel makes: with AMX (Prepare
// filled a.xq's tiles: tile_tokens > 0) and at least min_tokens tokens,
// whole 16-row panels x the tiled tokens go to PackedInt8PanelsAmx, which
// gives the AVX-512 kernels' bits; tiles(row_begin, row_end, t_begin) runs
// the AVX-512 tiles on the rest - the tokens past tile_tokens of those
// panels and every token of the last partial panel - or on everything.
template <class Tiles>
void PackedRowsWithAmx(const MatMulArgs& a, int64_t row_begin, int64_t row_end, int64_t min_tokens,
                       Tiles tiles) {
  constexpr int64_t kAmxPanel = 16;
  const int64_t amx_tokens = a.n_tokens >= min_tokens ? a.xq->tile_tokens : 0;
  const int64_t amx_rows_end = row_begin + (row_end - row_begin) / kAmxPanel * kAmxPanel;
  if (amx_tokens == 0 || amx_rows_end == row_begin) {
    tiles(row_begin, row_end, int64_t{0});
    return;
  }
  PackedInt8PanelsAmx(a, row_begin, amx_rows_end);
  if (amx_tokens < a.n_tokens) tiles(row_begin, amx_rows_end, amx_tokens);
  if (amx_rows_end < row_end) tiles(amx_rows_end, row_end, int64_t{0});
}

// How many times PackedInt8PanelsAmx has run in this process. The AMX and
// AVX-512 kernels give the same bits by design, so this count is how a test
// knows its AMX side really took the AMX kernel.
uint64_t PackedInt8PanelsAmxCalls();

// Copies token t's q and d into xq's tile_q / tile_d (activations.h);
// t < xq->tile_tokens. Called concurrently for different tokens. No tile
// instruction: AVX-512 only.
void PrepareAmxTileToken(Int8Activations* xq, int64_t t);

// Packed BF16 panels (packed_weights.h): y for rows [row_begin, row_end)
// (row_begin a multiple of 16) and every token, with TDPBF16PS.
void Bf16PanelsAmx(const MatMulArgs& args, int64_t row_begin, int64_t row_end);

}  // namespace deepinfer::cpu
