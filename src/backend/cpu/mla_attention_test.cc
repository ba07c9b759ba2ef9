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

// The kernel's up-projection views from per head W_uk [nope][lora] then
// W_uv [v][lora] (f32): W_uk^T [heads * lora, nope] and W_uv [heads * v, lora].
struct UpProjection {
  std::vector<float> values;
  TensorView uk_t, uv;
};

TensorView View(DType dtype, const uint8_t* data, int64_t rows, int64_t cols) {
  TensorView v;
  v.dtype = dtype;
  v.shape = {rows, cols};
  v.data = data;
  v.nbytes = rows * RowBytes(dtype, cols);
  return v;
}

UpProjection SplitUp(const std::vector<float>& w_ukv) {
  UpProjection u;
  u.values.resize(w_ukv.size());
  float* uk_t = u.values.data();
  float* uv = uk_t + kHeads * kLora * kNope;
  for (int64_t h = 0; h < kHeads; ++h) {
    const float* head = w_ukv.data() + h * (kNope + kVDim) * kLora;
    for (int64_t d = 0; d < kNope; ++d) {
      for (int64_t r = 0; r < kLora; ++r) uk_t[(h * kLora + r) * kNope + d] = head[d * kLora + r];
    }
    std::copy(head + kNope * kLora, head + (kNope + kVDim) * kLora, uv + h * kVDim * kLora);
  }
  u.uk_t = View(DType::kF32, reinterpret_cast<const uint8_t*>(uk_t), kHeads * kLora, kNope);
  u.uv = View(DType::kF32, reinterpret_cast<const uint8_t*>(uv), kHeads * kVDim, kLora);
  return u;
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
  const UpProjection up = SplitUp(w_ukv);
  const auto run = [&](const LatentCache& c, bool absorb) {
    MlaShape s{kHeads, kNope, kRope, kVDim, kLora, /*window=*/0, /*scale=*/0.1f, absorb};
    std::vector<float> out(positions.size() * kHeads * kVDim);
    MlaAttention(q.data(), static_cast<int64_t>(positions.size()), positions.data(), tables, c.Layer(),
                 up.uk_t, up.uv, {}, {}, s, pool, out.data());
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

namespace deepinfer::cpu {
namespace {

// Rows of f32 `values` [rows][cols] stored as `dtype`.
std::vector<uint8_t> StoreRows(DType dtype, const float* values, int64_t rows, int64_t cols) {
  std::vector<uint8_t> bytes(static_cast<size_t>(rows * RowBytes(dtype, cols)));
  for (int64_t r = 0; r < rows; ++r) {
    EXPECT_TRUE(QuantizeRow(dtype, values + r * cols, bytes.data() + r * RowBytes(dtype, cols), cols));
  }
  return bytes;
}

// Quantized up-projections act as their dequantized values: the output
// equals the f32 up-projections holding those values - to f32 rounding of a
// different summation order in the naive form and for F16 (f32 activations),
// and within the int8 activations of any Q8_0 / Q4_0 MatMul in the absorbed
// form (q_nope and o_lat quantized per 32 values to max / 127: each value
// off by at most 1/254 of its block's largest, twice; 2% of the output's
// scale bounds that here, and a weight read wrong by one step of its scale
// moves the output by more than 10%).
TEST(MlaAttention, QuantizedUpProjectionsActAsTheirDequantizedValues) {
  constexpr int64_t kWideNope = 32, kWideLora = 64, kWideV = 32, kHeadsQ = 3;
  std::mt19937 rng(5);
  std::normal_distribution<float> n(0.0f, 1.0f);
  const int64_t row = kWideLora + kRope;
  std::vector<float> rows(static_cast<size_t>(kBlocks * kBlock * row));
  for (auto& x : rows) x = n(rng);
  std::vector<uint8_t> cache_bytes(rows.size() * sizeof(float));
  std::memcpy(cache_bytes.data(), rows.data(), cache_bytes.size());
  PagedKvLayer layer;
  layer.head0.dtype = DType::kF32;
  layer.head0.k = cache_bytes.data();
  layer.head0.block_size = kBlock;
  layer.head0.slot_stride = row * 4;
  layer.head0.block_stride = kBlock * row * 4;
  std::vector<int32_t> table(kBlocks);
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), rng);
  const std::vector<int64_t> positions = {0, 9, 130, 199};
  const std::vector<const std::vector<int32_t>*> tables(positions.size(), &table);
  std::vector<float> q(positions.size() * kHeadsQ * (kWideNope + kRope));
  for (auto& x : q) x = n(rng);
  std::vector<float> uk_t(kHeadsQ * kWideLora * kWideNope), uv(kHeadsQ * kWideV * kWideLora);
  for (auto& x : uk_t) x = 0.2f * n(rng);
  for (auto& x : uv) x = 0.2f * n(rng);
  ThreadPool pool(2);
  const auto run = [&](const TensorView& a, const TensorView& b, bool absorb) {
    MlaShape s{kHeadsQ, kWideNope, kRope, kWideV, kWideLora, /*window=*/0, /*scale=*/0.1f, absorb};
    std::vector<float> out(positions.size() * kHeadsQ * kWideV);
    MlaAttention(q.data(), static_cast<int64_t>(positions.size()), positions.data(), tables, layer, a, b, {},
                 {}, s, pool, out.data());
    return out;
  };
  for (DType dtype : {DType::kQ8_0, DType::kQ4_0, DType::kF16}) {
    const std::vector<uint8_t> kq = StoreRows(dtype, uk_t.data(), kHeadsQ * kWideLora, kWideNope);
    const std::vector<uint8_t> vq = StoreRows(dtype, uv.data(), kHeadsQ * kWideV, kWideLora);
    std::vector<float> kd(uk_t.size()), vdq(uv.size());
    for (int64_t r = 0; r < kHeadsQ * kWideLora; ++r) {
      DequantizeRow(dtype, kq.data() + r * RowBytes(dtype, kWideNope), kd.data() + r * kWideNope, kWideNope);
    }
    for (int64_t r = 0; r < kHeadsQ * kWideV; ++r) {
      DequantizeRow(dtype, vq.data() + r * RowBytes(dtype, kWideLora), vdq.data() + r * kWideLora, kWideLora);
    }
    const TensorView qa = View(dtype, kq.data(), kHeadsQ * kWideLora, kWideNope);
    const TensorView qb = View(dtype, vq.data(), kHeadsQ * kWideV, kWideLora);
    const TensorView fa =
        View(DType::kF32, reinterpret_cast<const uint8_t*>(kd.data()), kHeadsQ * kWideLora, kWideNope);
    const TensorView fb =
        View(DType::kF32, reinterpret_cast<const uint8_t*>(vdq.data()), kHeadsQ * kWideV, kWideLora);
    for (bool absorb : {true, false}) {
      const std::vector<float> got = run(qa, qb, absorb), want = run(fa, fb, absorb);
      double worst = 0, scale = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        worst = std::max(worst, std::fabs(double(got[i]) - want[i]));
        scale = std::max(scale, std::fabs(double(want[i])));
      }
      EXPECT_GT(scale, 0.1);
      const bool int8_activations = absorb && dtype != DType::kF16;
      EXPECT_LT(worst, (int8_activations ? 2e-2 : 1e-5) * scale) << DTypeName(dtype) << " absorb " << absorb;
    }
  }
}

}  // namespace
}  // namespace deepinfer::cpu
