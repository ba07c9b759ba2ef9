// MlaAttention over a 16- or 8-bit latent cache: the kernel decodes each row
// to f32 and runs the f32 arithmetic, so its output is bit-identical to the
// same kernel over an f32 cache holding the decoded rows (absorbed and naive
// forms), and close to the f32 cache of the undecoded values.
#include "backend/cpu/mla_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "core/thread_pool.h"
#include "tensor/dequant.h"

namespace deepinfer::cpu {
namespace {

constexpr int64_t kHeads = 3, kNope = 16, kRope = 32, kVDim = 16, kLora = 64, kRow = kLora + kRope;
constexpr int64_t kBlock = 5, kBlocks = 40;

// A latent cache [block][slot][kRow] of `dtype` rows.
struct LatentCache {
  DType dtype;
  std::vector<uint8_t> bytes;
  PagedKvLayer Layer() const {
    PagedKvLayer l;
    l.head0.dtype = dtype;
    l.head0.k = bytes.data();
    l.head0.block_size = kBlock;
    l.head0.slot_stride = RowBytes(dtype, kRow);
    l.head0.block_stride = kBlock * RowBytes(dtype, kRow);
    return l;
  }
};

LatentCache Store(DType dtype, const std::vector<float>& rows) {
  LatentCache c{dtype, std::vector<uint8_t>(static_cast<size_t>(kBlocks * kBlock * RowBytes(dtype, kRow)))};
  for (int64_t r = 0; r < kBlocks * kBlock; ++r) {
    EXPECT_TRUE(QuantizeRow(dtype, rows.data() + r * kRow, c.bytes.data() + r * RowBytes(dtype, kRow), kRow));
  }
  return c;
}

std::vector<float> Decoded(const LatentCache& c) {
  std::vector<float> rows(static_cast<size_t>(kBlocks * kBlock * kRow));
  for (int64_t r = 0; r < kBlocks * kBlock; ++r) {
    DequantizeRow(c.dtype, c.bytes.data() + r * RowBytes(c.dtype, kRow), rows.data() + r * kRow, kRow);
  }
  return rows;
}

TEST(MlaAttention, NarrowLatentCacheEqualsF32CacheOfItsDecodedRows) {
  std::mt19937 rng(17);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> rows(static_cast<size_t>(kBlocks * kBlock * kRow)),
      w_ukv(kHeads * (kNope + kVDim) * kLora);
  for (auto& x : rows) x = n(rng);
  for (auto& x : w_ukv) x = 0.2f * n(rng);
  std::vector<int32_t> table(kBlocks);
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), rng);
  const std::vector<int64_t> positions = {0, 7, 63, 150, 199};
  const std::vector<const std::vector<int32_t>*> tables(positions.size(), &table);
  std::vector<float> q(positions.size() * kHeads * (kNope + kRope));
  for (auto& x : q) x = n(rng);
  ThreadPool pool(2);
  const auto run = [&](const LatentCache& c, bool absorb) {
    MlaShape s{kHeads, kNope, kRope, kVDim, kLora, /*window=*/0, /*scale=*/0.1f, absorb};
    std::vector<float> out(positions.size() * kHeads * kVDim);
    MlaAttention(q.data(), static_cast<int64_t>(positions.size()), positions.data(), tables, c.Layer(),
                 w_ukv.data(), s, pool, out.data());
    return out;
  };
  const LatentCache exact = Store(DType::kF32, rows);
  for (DType dtype : {DType::kF16, DType::kBF16, DType::kQ8_0}) {
    const LatentCache narrow = Store(dtype, rows);
    const LatentCache wide = Store(DType::kF32, Decoded(narrow));
    for (bool absorb : {true, false}) {
      const std::vector<float> a = run(narrow, absorb), b = run(wide, absorb), ref = run(exact, absorb);
      EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)))
          << DTypeName(dtype) << " " << absorb;
      double worst = 0;
      for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(double(a[i]) - ref[i]));
      EXPECT_GT(worst, 0.0) << DTypeName(dtype) << ": the rows were rounded, the output must move";
      EXPECT_LT(worst, 5e-2) << DTypeName(dtype);
    }
  }
}

}  // namespace
}  // namespace deepinfer::cpu
