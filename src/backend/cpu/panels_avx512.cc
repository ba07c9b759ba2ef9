// BF16, F16 and F32 weights in the packed panel layouts (packed_weights.h)
// on AVX-512: an outer product per K-step.
//
// F16 / F32: panel p's bytes at element i are w[16p + r][i] for r = 0..15
// (f16 widened exactly by vcvtph2ps); token t's x[i] (f32) is broadcast and
// one f32 fma adds w[r][i] * x[i] to lane r: per (row, token) a sequential
// f32 sum over K in order, from zero, then + bias (kernels.h), the same in
// every tile. The f32 activations are not rounded.
//
// BF16 with AVX512_BF16: an outer product per K-pair. Panel p's 64 bytes at pair
// i are (w[2i], w[2i + 1]) of rows 16p..16p+15 - one vdpbf16ps operand.
// With token t's 32-bit pair i broadcast to all lanes, one vdpbf16ps adds
// w[r][2i] x[2i] + w[r][2i + 1] x[2i + 1] to lane r of accumulator (panel,
// token): the 16 lanes ARE 16 rows, so nothing is reduced across lanes and
// a finished accumulator is stored as it is (+ bias; masked in the last,
// zero-padded panel). Activations are bf16, rounded once per call by
// MatMul (args.xb).
//
// Arithmetic (kernels.h): per (row, token) a sequential sum over K-pairs in
// order, from zero, then + bias. It depends neither on the tile a pair
// lands in (GEMV or GEMM, any token count, any row split) nor on K being
// run in parts (accumulators parked in memory in between change no bit):
// batch invariant by construction.
//
// Tiles (P panels x T tokens = P * T accumulators), the same for the three
// types:
//   GEMM: 4 x 6: 24 accumulators + 4 weight vectors + 1 broadcast = 29 zmm;
//         per pair 4 64-byte loads and 6 4-byte broadcasts feed 24
//         vdpbf16ps (the dot formulation, bf16_avx512.cc, needs 10 64-byte
//         loads per 24 and a 16-lane reduction per accumulator). 3 x 8,
//         2 x 12 and 5 x 4 measured no better (docs/kernels.md).
//   GEMV: 4 panels x 1 token with software prefetch; each panel is one
//         long contiguous stream (64 KB at K = 2048). 4 streams measured
//         faster than 8 or 2 on a DRAM-sized matrix.
// Loop order (GEMM): blocks of 4 panels (64 rows); per part of K (see
// Step::kPart) every token tile passes over the block, so the block's
// weights are read from L2, once from memory.

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/aligned_buffer.h"
#include "backend/cpu/amx.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/kernels_amx.h"
#include "backend/cpu/kernels_avx512.h"
#include "backend/cpu/packed_weights.h"
#include "core/check.h"

namespace deepinfer::cpu {
namespace {

inline __m512bh AsBf16(__m512i v) { return reinterpret_cast<__m512bh>(v); }

// One weight type's panel step: how many bytes of a panel one K-step (a
// pair for BF16, one element for F16 / F32) takes, how to load the 16 rows'
// weights of step i, broadcast token t's activations of step i, and add
// their products to an accumulator.
struct Bf16Step {
  using X = uint16_t;  // bf16 activations (args.xb)
  using W = __m512bh;
  using B = __m512bh;
  static constexpr int64_t kBytes = 64;
  // Steps per part of K in the GEMM (see GemmBlock): the block's weights for
  // one part, 4 panels x 1024 x 64 bytes = 256 KB, and the part's
  // activations fit L2 together.
  static constexpr int64_t kPart = 1024;
  static W Load(const uint8_t* panel, int64_t i) { return AsBf16(_mm512_load_si512(panel + 64 * i)); }
  static B Broadcast(const X* x, int64_t i) {  // the pair (x[2i], x[2i + 1]) in all lanes
    int32_t pair;
    std::memcpy(&pair, x + 2 * i, 4);
    return AsBf16(_mm512_set1_epi32(pair));
  }
  static __m512 Madd(__m512 acc, W w, B x) { return _mm512_dpbf16_ps(acc, w, x); }
};

struct F16Step {
  using X = float;
  using W = __m512;
  using B = __m512;
  static constexpr int64_t kBytes = 32;
  static constexpr int64_t kPart = 2048;  // 256 KB of weights per 4-panel block, as for BF16
  static W Load(const uint8_t* panel, int64_t i) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + 32 * i)));
  }
  static B Broadcast(const X* x, int64_t i) { return _mm512_set1_ps(x[i]); }
  static __m512 Madd(__m512 acc, W w, B x) { return _mm512_fmadd_ps(w, x, acc); }
};

struct F32Step {
  using X = float;
  using W = __m512;
  using B = __m512;
  static constexpr int64_t kBytes = 64;
  static constexpr int64_t kPart = 1024;
  static W Load(const uint8_t* panel, int64_t i) {
    return _mm512_load_ps(reinterpret_cast<const float*>(panel + 64 * i));
  }
  static B Broadcast(const X* x, int64_t i) { return _mm512_set1_ps(x[i]); }
  static __m512 Madd(__m512 acc, W w, B x) { return _mm512_fmadd_ps(w, x, acc); }
};

// The geometry of one call: where panel p starts, where token t's steps are.
template <class Step>
struct Panels {
  const uint8_t* w;
  int64_t panel_bytes;  // 16 * row_stride
  int64_t steps;        // BF16: K / 2 rounded up; F16 / F32: K
  const typename Step::X* x;
  int64_t x_stride;  // activation elements per token
  const uint8_t* Panel(int64_t p) const { return w + p * panel_bytes; }
  const typename Step::X* Token(int64_t t) const { return x + t * x_stride; }
};

// Software prefetch distance for the GEMV panel streams, in bytes ahead:
// 0.5-2 KB measured alike (+10-30% over none on a DRAM-sized matrix, noisy
// machine). Prefetches never fault, so running past a panel's end is harmless.
constexpr int64_t kPrefetchBytes = 2048;

// y (+ bias) of panel p, token t from its finished accumulator; lanes past
// n_rows (the last panel's zero rows) are not stored.
inline void StoreRows(const MatMulArgs& a, int64_t p, int64_t t, __m512 acc) {
  const int64_t r = p * 16;
  const __mmask16 m = static_cast<__mmask16>((1u << std::min<int64_t>(16, a.n_rows - r)) - 1);
  if (a.bias) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(m, a.bias + r));
  _mm512_mask_storeu_ps(a.y + t * a.n_rows + r, m, acc);
}

// Pairs [ib, ie) of the P x T tile at panel p0, token t0, continuing the
// accumulators at acc: (panel p0 + p, token t0 + t) is acc[t * stride + p].
// With `last`, the results go to y instead of back to acc.
template <class Step, int P, int T>
void TilePart(const Panels<Step>& g, int64_t p0, int64_t t0, int64_t ib, int64_t ie, __m512* acc_mem,
              int64_t stride, const MatMulArgs* last) {
  const uint8_t* w[P];
  for (int p = 0; p < P; ++p) w[p] = g.Panel(p0 + p);
  const typename Step::X* x[T];
  for (int t = 0; t < T; ++t) x[t] = g.Token(t0 + t);
  __m512 acc[P][T];
  for (int p = 0; p < P; ++p) {
    for (int t = 0; t < T; ++t) acc[p][t] = acc_mem[t * stride + p];
  }
  for (int64_t i = ib; i < ie; ++i) {
    typename Step::W wv[P];
    for (int p = 0; p < P; ++p) wv[p] = Step::Load(w[p], i);
    if constexpr (T == 1) {  // GEMV streams the panels from DRAM
      for (int p = 0; p < P; ++p) {
        _mm_prefetch(reinterpret_cast<const char*>(w[p] + Step::kBytes * i + kPrefetchBytes), _MM_HINT_T0);
      }
    }
    for (int t = 0; t < T; ++t) {
      const typename Step::B xv = Step::Broadcast(x[t], i);
      for (int p = 0; p < P; ++p) acc[p][t] = Step::Madd(acc[p][t], wv[p], xv);
    }
  }
  if (last != nullptr) {
    for (int p = 0; p < P; ++p) {
      for (int t = 0; t < T; ++t) StoreRows(*last, p0 + p, t0 + t, acc[p][t]);
    }
    return;
  }
  for (int p = 0; p < P; ++p) {
    for (int t = 0; t < T; ++t) acc_mem[t * stride + p] = acc[p][t];
  }
}

// Pairs [ib, ie) of panels [b0, b1) x tokens [t0, t0 + T): P-panel tiles,
// then the leftover panels in halving tiles. acc as in TilePart, for b0, t0.
template <class Step, int P, int T>
void PanelsPart(const Panels<Step>& g, int64_t b0, int64_t b1, int64_t t0, int64_t ib, int64_t ie,
                __m512* acc, int64_t stride, const MatMulArgs* last) {
  int64_t p = b0;
  for (; p + P <= b1; p += P) TilePart<Step, P, T>(g, p, t0, ib, ie, acc + (p - b0), stride, last);
  if constexpr (P > 1) {
    if (p < b1) PanelsPart<Step, P / 2, T>(g, p, b1, t0, ib, ie, acc + (p - b0), stride, last);
  }
}

// The n < T leftover tokens of a GEMM as one tile of exactly n tokens, so a
// batch of e.g. 4 does not fall back to GEMV tiles.
template <class Step, int P, int T>
void LeftoverTokens(const Panels<Step>& g, int64_t b0, int64_t b1, int64_t t0, int64_t n, int64_t ib,
                    int64_t ie, __m512* acc, int64_t stride, const MatMulArgs* last) {
  if constexpr (T > 1) {
    if (n == T - 1) return PanelsPart<Step, P, T - 1>(g, b0, b1, t0, ib, ie, acc, stride, last);
    LeftoverTokens<Step, P, T - 1>(g, b0, b1, t0, n, ib, ie, acc, stride, last);
  }
}

constexpr int kGemmPanels = 4, kGemmTokens = 6, kGemvPanels = 4;

// K is cut into equal parts of at most Step::kPart steps (GEMM): a block's
// weights for one part and the part's activations fit L2 together; the down
// projection's whole K would not (720 KB of BF16 per block plus 11 KB per
// token). Measured within noise of no parts for BF16 (docs/kernels.md), kept
// because it bounds the working set for any K at no cost in bits.
// GEMM over panels [b0, b1) (at most kGemmPanels), all tokens: for each
// part of K every token tile passes over the block, its accumulators
// parked in `acc` (n_tokens x (b1 - b0) vectors) between parts; the last
// part stores y.
template <class Step>
void GemmBlock(const MatMulArgs& a, const Panels<Step>& g, int64_t b0, int64_t b1, __m512* acc) {
  const int64_t nb = b1 - b0;
  for (int64_t j = 0; j < a.n_tokens * nb; ++j) acc[j] = _mm512_setzero_ps();
  const int64_t parts = (g.steps + Step::kPart - 1) / Step::kPart;
  const int64_t part = (g.steps + parts - 1) / parts;
  for (int64_t ib = 0; ib < g.steps; ib += part) {
    const int64_t ie = std::min(g.steps, ib + part);
    const MatMulArgs* last = ie == g.steps ? &a : nullptr;
    int64_t t = 0;
    for (; t + kGemmTokens <= a.n_tokens; t += kGemmTokens) {
      PanelsPart<Step, kGemmPanels, kGemmTokens>(g, b0, b1, t, ib, ie, acc + t * nb, nb, last);
    }
    if (t < a.n_tokens) {
      LeftoverTokens<Step, kGemmPanels, kGemmTokens>(g, b0, b1, t, a.n_tokens - t, ib, ie, acc + t * nb, nb,
                                                     last);
    }
  }
}

template <class Step>
void PanelRows(const MatMulArgs& a, const Panels<Step>& g, int64_t row_begin, int64_t row_end) {
  // MatMul hands out row ranges that start on a 16-row task, i.e. a panel.
  DI_CHECK(row_begin % 16 == 0);
  const int64_t p_begin = row_begin / 16, p_end = (row_end + 15) / 16;
  if (a.n_tokens == 1) {
    for (int64_t b0 = p_begin; b0 < p_end; b0 += kGemvPanels) {
      const int64_t b1 = std::min(p_end, b0 + kGemvPanels);
      __m512 acc[kGemvPanels];
      for (__m512& v : acc) v = _mm512_setzero_ps();
      PanelsPart<Step, kGemvPanels, 1>(g, b0, b1, 0, 0, g.steps, acc, b1 - b0, &a);
    }
    return;
  }
  // Accumulators of one block, all tokens: the calling thread's scratch
  // (kernels run concurrently on pool threads), reused across calls.
  // (__m512 may alias floats.)
  thread_local AlignedBuffer<float> scratch;
  scratch.Resize(static_cast<size_t>(a.n_tokens * kGemmPanels * 16));
  __m512* acc = reinterpret_cast<__m512*>(scratch.data());
  for (int64_t b0 = p_begin; b0 < p_end; b0 += kGemmPanels) {
    GemmBlock(a, g, b0, std::min(p_end, b0 + kGemmPanels), acc);
  }
}

}  // namespace

void Bf16PanelsAvx512(const MatMulArgs& a, int64_t row_begin, int64_t row_end) {
  // With AMX-BF16, every call (GEMV included: batch invariance) runs the
  // tile kernel (bf16_panels_amx.cc).
  if (AmxBf16Enabled()) {
    Bf16PanelsAmx(a, row_begin, row_end);
    return;
  }
  PanelRows(a, Panels<Bf16Step>{a.w, 16 * a.row_bytes, (a.k + 1) / 2, a.xb, a.xb_stride}, row_begin, row_end);
}

void F16PanelsAvx512(const MatMulArgs& a, int64_t row_begin, int64_t row_end) {
  PanelRows(a, Panels<F16Step>{a.w, 16 * a.row_bytes, a.k, a.x, a.k}, row_begin, row_end);
}

void F32PanelsAvx512(const MatMulArgs& a, int64_t row_begin, int64_t row_end) {
  PanelRows(a, Panels<F32Step>{a.w, 16 * a.row_bytes, a.k, a.x, a.k}, row_begin, row_end);
}

}  // namespace deepinfer::cpu
