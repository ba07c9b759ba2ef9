// Activation quantization (activations.h): the scalar QuantizeToken against
// a double-precision restatement of its contract, and every SIMD quantizer
// against the scalar one byte for byte (the contract that lets every ISA
// level see the same int8 activations), including ties, NaN, infinities,
// zeros and subnormals.
#include "backend/cpu/activations.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "backend/cpu/isa.h"
#include "backend/cpu/kernels.h"

namespace deepinfer::cpu {
namespace {

// Blocks chosen to hit every branch of the rounding and clamping.
std::vector<float> AwkwardTokens(std::mt19937& rng, int64_t k, int64_t n_tokens) {
  std::vector<float> x(static_cast<size_t>(k * n_tokens));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> kind(0, 7), index(0, 31), small(-126, 126);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t b = 0; b < k * n_tokens / 32; ++b) {
    float* blk = x.data() + b * 32;
    const int which = kind(rng);
    for (int i = 0; i < 32; ++i) blk[i] = normal(rng);
    switch (which) {
      case 0:  // amax 127 makes d = 1 exactly: x + 0.5 are exact ties for round-half-away
        for (int i = 0; i < 32; ++i) blk[i] = static_cast<float>(small(rng)) + (i % 2 ? 0.5f : -0.5f);
        blk[index(rng)] = 127.0f;
        blk[0] = 0.49999997f;
        blk[1] = -0.49999997f;
        blk[2] = -0.0f;
        break;
      case 1:
        blk[index(rng)] = nan;
        break;
      case 2:
        blk[index(rng)] = -inf;
        break;
      case 3:
        for (int i = 0; i < 32; ++i) blk[i] = 0.0f;
        break;
      case 4:
        for (int i = 0; i < 32; ++i) blk[i] *= 1e-41f;
        break;  // subnormal: d underflows
      case 5:
        for (int i = 0; i < 32; ++i) blk[i] *= 3e37f;
        break;  // near the top of the range
      case 6:
        for (int i = 0; i < 32; ++i) blk[i] = nan;
        break;
      default:
        break;
    }
  }
  return x;
}

TEST(Int8ActivationsTest, ScalarFollowsTheContract) {
  std::mt19937 rng(11);
  const int64_t k = 96, n_tokens = 40;
  const std::vector<float> x = AwkwardTokens(rng, k, n_tokens);
  Int8Activations xq;
  ResizeActivations(k, n_tokens, false, &xq);
  for (int64_t t = 0; t < n_tokens; ++t) QuantizeToken(x.data() + t * k, t, &xq);
  for (int64_t t = 0; t < n_tokens; ++t) {
    for (int64_t b = 0; b < xq.blocks; ++b) {
      const float* xb = x.data() + t * k + b * 32;
      double amax = 0.0;
      for (int i = 0; i < 32; ++i) {
        if (!std::isnan(xb[i])) amax = std::max(amax, std::fabs(static_cast<double>(xb[i])));
      }
      const float d = static_cast<float>(amax) / 127.0f;
      ASSERT_EQ(xq.TokenD(t)[b], d);
      int32_t sum = 0;
      for (int i = 0; i < 32; ++i) {
        const int q = xq.TokenQ(t)[b * 32 + i];
        sum += q;
        ASSERT_LE(std::abs(q), 127);
        if (std::isnan(xb[i]) || d == 0.0f) continue;
        const double v = static_cast<double>(xb[i]) * static_cast<double>(1.0f / d);
        if (std::isnan(v)) {  // inf * (1 / inf): an infinite x in a block whose d is infinite
          ASSERT_EQ(q, 0);
          continue;
        }
        if (std::fabs(v) > 127.5) continue;  // clamped
        // Round half away from zero; v here is the exact product, so allow
        // the f32 product's rounding to move a value sitting next to a tie.
        ASSERT_LE(std::fabs(q - v), 0.5 + 1e-5) << "t=" << t << " b=" << b << " i=" << i << " x=" << xb[i];
        if (std::fabs(std::fabs(v - std::trunc(v)) - 0.5) == 0.0) ASSERT_GT(std::fabs(q), std::fabs(v));
      }
      ASSERT_EQ(xq.TokenSum(t)[b], sum);
    }
    // The odd last block's zero partner.
    ASSERT_EQ(xq.TokenD(t)[xq.blocks], 0.0f);
    ASSERT_EQ(xq.TokenSum(t)[xq.blocks], 0);
  }
}

TEST(Int8ActivationsTest, SimdQuantizersMatchScalarBytes) {
  std::vector<const KernelSet*> sets;
  if (CpuSupports(Isa::kAvx2)) sets.push_back(&Avx2Kernels());
  if (CpuSupports(Isa::kAvx512)) sets.push_back(&Avx512Kernels());
  std::mt19937 rng(12);
  for (int64_t k : {32, 96, 256, 2048}) {
    const int64_t n_tokens = 64;
    const std::vector<float> x = AwkwardTokens(rng, k, n_tokens);
    Int8Activations ref, got;
    ResizeActivations(k, n_tokens, false, &ref);
    ResizeActivations(k, n_tokens, false, &got);
    for (int64_t t = 0; t < n_tokens; ++t) QuantizeToken(x.data() + t * k, t, &ref);
    for (const KernelSet* set : sets) {
      for (int64_t t = 0; t < n_tokens; ++t) set->quantize_token(x.data() + t * k, t, &got);
      ASSERT_EQ(0, std::memcmp(ref.q.data(), got.q.data(), ref.q.size())) << "k=" << k;
      ASSERT_EQ(0, std::memcmp(ref.d.data(), got.d.data(), ref.d.size() * 4)) << "k=" << k;
      ASSERT_EQ(0, std::memcmp(ref.sum.data(), got.sum.data(), ref.sum.size() * 4)) << "k=" << k;
    }
  }
}

}  // namespace
}  // namespace deepinfer::cpu
