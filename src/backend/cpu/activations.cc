#include "backend/cpu/activations.h"

#include "backend/cpu/amx.h"

#include <cmath>
#include <cstring>

#include "core/check.h"

namespace deepinfer::cpu {
namespace {

// One block of 32: scalar on purpose, so every ISA sees the same int8 values
// (a vectorized rounding would have to match std::round bit for bit).
void QuantizeBlock(const float* x, int8_t* q, float* d_out, int32_t* sum_out) {
  float amax = 0.0f;
  for (int i = 0; i < 32; ++i) amax = std::fmax(amax, std::fabs(x[i]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  int32_t sum = 0;
  for (int i = 0; i < 32; ++i) {
    float v = std::round(x[i] * id);
    if (!(v >= -127.0f)) v = v != v ? 0.0f : -127.0f;  // NaN -> 0; keeps the cast defined
    if (v > 127.0f) v = 127.0f;
    q[i] = static_cast<int8_t>(v);
    sum += q[i];
  }
  *d_out = d;
  *sum_out = sum;
}

}  // namespace

void ResizeActivations(int64_t k, int64_t n_tokens, bool with_lanes, Int8Activations* out) {
  DI_CHECK(k > 0 && k % kActivationBlock == 0 && n_tokens >= 0);
  out->k = k;
  out->n_tokens = n_tokens;
  out->blocks = k / kActivationBlock;
  out->pairs = (out->blocks + 1) / 2;
  const auto per_pair = static_cast<size_t>(n_tokens * out->pairs);
  out->q.Resize(per_pair * 64);
  out->d.Resize(per_pair * 2);
  out->sum.Resize(per_pair * 2);
  if (with_lanes) {
    out->lanes_d.Resize(per_pair * 16);
    out->lanes_bias.Resize(per_pair * 16);
    out->lanes_dsum.Resize(per_pair * 16);
    out->groups = GroupsFor(out->blocks);
    out->group_q.Resize(static_cast<size_t>(n_tokens * out->GroupQStride()));
    out->group_d.Resize(static_cast<size_t>(n_tokens * out->GroupLaneStride()));
    out->group_bias.Resize(static_cast<size_t>(n_tokens * out->GroupLaneStride()));
    out->group_bias_lo.Resize(static_cast<size_t>(n_tokens * out->GroupLaneStride()));
  }
  // A last partial tile of kAmxPaddedTileMin or more tokens joins the AMX
  // tiles, padded with zero tokens: from there on the padded tile costs less
  // than the AVX-512 tiles that would run those tokens (kernels.md, "AMX
  // GEMM, padded last tile").
  constexpr int64_t kAmxPaddedTileMin = 9;
  int64_t tile_tokens = n_tokens / 16 * 16;
  if (tile_tokens > 0 && n_tokens - tile_tokens >= kAmxPaddedTileMin) tile_tokens += 16;
  out->tile_tokens = with_lanes && AmxInt8Enabled() ? tile_tokens : 0;
  if (out->tile_tokens > 0) {
    out->tile_q.Resize(static_cast<size_t>(out->tile_tokens * out->blocks * 32));
    out->tile_d.Resize(static_cast<size_t>(out->tile_tokens * out->blocks));
    for (int64_t t = n_tokens; t < out->tile_tokens; ++t) {  // padding: q = 0, d = 0
      for (int64_t b = 0; b < out->blocks; ++b) {
        std::memset(out->tile_q.data() + (t / 16) * out->blocks * 512 + b * 512 + (t % 16) * 32, 0, 32);
        out->tile_d.data()[(t / 16) * out->blocks * 16 + b * 16 + t % 16] = 0.0f;
      }
    }
  }
}

void QuantizeToken(const float* x_t, int64_t t, Int8Activations* out) {
  QuantizeTokenBlocks(x_t, t, out, QuantizeBlock);
}

}  // namespace deepinfer::cpu
