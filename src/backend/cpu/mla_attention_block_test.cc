// MlaAttention's absorbed form runs the heads of a token in blocks over the
// shared latent rows (DotRowsBlock / AddScaledRowsBlock). Contract: every
// (token, head) output has the bits of the per-(token, head) computation
// written out below from Dot / AddScaled and one-token MatMuls - whatever
// the batch, the thread
// split (ranges ending mid-token), the head count (leftover heads past the
// 4-head block), the key count (leftover keys past the 4-key tile), or
// which sequence the neighbouring tokens belong to.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "backend/cpu/dot.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/mla_attention.h"
#include "core/thread_pool.h"
#include "tensor/dequant.h"

namespace deepinfer::cpu {
namespace {

// Odd sizes: 7 heads (a 4-head block and 3 left over), lora 72 and rope 20
// (16-float chunks plus a tail).
constexpr int64_t kHeads = 7, kNope = 16, kRope = 20, kVDim = 16, kLora = 72, kRow = kLora + kRope;
constexpr int64_t kBlock = 5, kBlocks = 40;

TensorView View(const std::vector<float>& v, int64_t rows, int64_t cols) {
  TensorView t;
  t.dtype = DType::kF32;
  t.shape = {rows, cols};
  t.data = v.data();
  t.nbytes = rows * cols * 4;
  return t;
}

// One (token, head) alone, as the kernel is specified: q_lat = W_uk^T q_nope
// (a one-token MatMul of the head's rows), scores by Dot, softmax (double
// sum), o_lat by AddScaled per key in order, out = W_uv o_lat (MatMul). `rows`
// the token's keys lo..pos as f32.
std::vector<float> OneHead(const float* q, const std::vector<const float*>& rows,
                           const std::vector<float>& uk_t, const std::vector<float>& uv, int64_t head,
                           float scale, ThreadPool& pool) {
  std::vector<float> q_lat(kLora), o_lat(kLora, 0.0f), out(kVDim), scores(rows.size());
  TensorView uk_head = View(uk_t, kLora, kNope), uv_head = View(uv, kVDim, kLora);
  uk_head.data = uk_t.data() + head * kLora * kNope;
  uv_head.data = uv.data() + head * kVDim * kLora;
  MatMul(uk_head, nullptr, q, 1, nullptr, q_lat.data(), pool);
  float max_score = -INFINITY;
  for (size_t j = 0; j < rows.size(); ++j) {
    scores[j] = (Dot(q_lat.data(), rows[j], kLora) + Dot(q + kNope, rows[j] + kLora, kRope)) * scale;
    max_score = std::max(max_score, scores[j]);
  }
  double sum = 0;
  for (float& s : scores) {
    s = std::exp(s - max_score);
    sum += s;
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (size_t j = 0; j < rows.size(); ++j) AddScaled(o_lat.data(), scores[j] * inv, rows[j], kLora);
  MatMul(uv_head, nullptr, o_lat.data(), 1, nullptr, out.data(), pool);
  return out;
}

TEST(MlaAttentionBlocks, EveryTokenHeadHasItsOwnBitsWhateverTheBatchAndSplit) {
  std::mt19937 rng(23);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> rows(static_cast<size_t>(kBlocks * kBlock * kRow));
  for (auto& x : rows) x = n(rng);
  std::vector<float> uk_t(kHeads * kLora * kNope), uv(kHeads * kVDim * kLora);
  for (auto& x : uk_t) x = 0.2f * n(rng);
  for (auto& x : uv) x = 0.2f * n(rng);
  // Two sequences over the same blocks in different orders; every third
  // token belongs to the second (the kernel's decoded rows must follow).
  std::vector<int32_t> table(kBlocks), other(kBlocks);
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), rng);
  other = table;
  std::shuffle(other.begin(), other.end(), rng);
  for (DType dtype : {DType::kF32, DType::kF16}) {
    // The cache, and its rows as the kernel reads them (f16 decoded exactly).
    const int64_t row_bytes = RowBytes(dtype, kRow);
    std::vector<uint8_t> cache(static_cast<size_t>(kBlocks * kBlock * row_bytes));
    std::vector<float> decoded(rows.size());
    for (int64_t r = 0; r < kBlocks * kBlock; ++r) {
      ASSERT_TRUE(QuantizeRow(dtype, rows.data() + r * kRow, cache.data() + r * row_bytes, kRow));
      DequantizeRow(dtype, cache.data() + r * row_bytes, decoded.data() + r * kRow, kRow);
    }
    PagedKvLayer layer;
    layer.head0.dtype = dtype;
    layer.head0.k = cache.data();
    layer.head0.block_size = kBlock;
    layer.head0.slot_stride = row_bytes;
    layer.head0.block_stride = kBlock * row_bytes;
    const std::vector<int64_t> positions = {0, 1, 2, 3, 4, 5, 17, 63, 150, 199};
    const auto n_tokens = static_cast<int64_t>(positions.size());
    std::vector<const std::vector<int32_t>*> tables;
    for (size_t t = 0; t < positions.size(); ++t) tables.push_back(t % 3 == 2 ? &other : &table);
    std::vector<float> q(positions.size() * kHeads * (kNope + kRope));
    for (auto& x : q) x = n(rng);
    for (int64_t window : {0, 6}) {
      const MlaShape s{kHeads, kNope, kRope, kVDim, kLora, window, /*scale=*/0.1f, /*absorb=*/true};
      for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        std::vector<float> batch(static_cast<size_t>(n_tokens * kHeads * kVDim));
        MlaAttention(q.data(), n_tokens, positions.data(), tables, layer, View(uk_t, kHeads * kLora, kNope),
                     View(uv, kHeads * kVDim, kLora), {}, {}, s, pool, batch.data());
        for (int64_t t = 0; t < n_tokens; ++t) {
          std::vector<float> alone(static_cast<size_t>(kHeads * kVDim));
          MlaAttention(q.data() + t * kHeads * (kNope + kRope), 1, &positions[static_cast<size_t>(t)],
                       {tables[static_cast<size_t>(t)]}, layer, View(uk_t, kHeads * kLora, kNope),
                       View(uv, kHeads * kVDim, kLora), {}, {}, s, pool, alone.data());
          const int64_t pos = positions[static_cast<size_t>(t)];
          const int64_t lo = window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0;
          std::vector<const float*> keys;
          for (int64_t j = lo; j <= pos; ++j) {
            const std::vector<int32_t>& seq = *tables[static_cast<size_t>(t)];
            keys.push_back(decoded.data() +
                           (seq[static_cast<size_t>(j / kBlock)] * kBlock + j % kBlock) * kRow);
          }
          for (int64_t h = 0; h < kHeads; ++h) {
            const std::vector<float> want =
                OneHead(q.data() + (t * kHeads + h) * (kNope + kRope), keys, uk_t, uv, h, s.scale, pool);
            const float* got = batch.data() + (t * kHeads + h) * kVDim;
            EXPECT_EQ(0, std::memcmp(got, want.data(), kVDim * sizeof(float)))
                << DTypeName(dtype) << " window " << window << " threads " << threads << " token " << t
                << " head " << h;
            EXPECT_EQ(0, std::memcmp(alone.data() + h * kVDim, want.data(), kVDim * sizeof(float)))
                << DTypeName(dtype) << " alone, token " << t << " head " << h;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace deepinfer::cpu
