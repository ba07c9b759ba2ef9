// The AMX kernels (packed_int8_amx.cc, bf16_panels_amx.cc). Compiled with
// AVX-512 and AMX flags: call only when AmxInt8Enabled() / AmxBf16Enabled()
// (amx.h).
#pragma once

#include <cstdint>

#include "backend/cpu/kernels.h"

namespace deepinfer::cpu {

// Packed Q8_0 / Q4_0 / Q4_K / Q6_K (args.dtype; interleaved layouts, packed_weights.h):
// y for rows [row_begin, row_end) (a multiple of 16 rows) and tokens
// [0, min(args.xq->tile_tokens, args.n_tokens)) (tile_tokens a multiple of 16, the last tile
// possibly padded), bit-identical to the
// AVX-512 kernels.
void PackedInt8PanelsAmx(const MatMulArgs& args, int64_t row_begin, int64_t row_end);

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
