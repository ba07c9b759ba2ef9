// ops::PagedAttention (the paged driver over KvCache: GQA groups, key splits, threads)
// against a naive per-head softmax in double, on contexts longer than the
// split size and with a sliding window; and bit-identical results for any
// thread count and any batch composition (batch invariance), in every KV
// cache dtype (f32, f16, bf16, q8_0).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "model/model.h"
#include "model/ops.h"
#include "tensor/dequant.h"
#include "tensor/dtype.h"

namespace deepinfer {
namespace {

struct KvFixture {
  ModelConfig config;
  KvCache kv;
  std::vector<std::vector<int32_t>> tables;  // per sequence
};

constexpr DType kKvDTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0};

ModelConfig Config() {
  ModelConfig c;
  c.num_layers = 2;
  c.num_heads = 6;
  c.num_kv_heads = 2;
  c.head_dim = 64;
  return c;
}

// Two sequences of `len` positions each, blocks interleaved and shuffled.
KvFixture MakeSetup(int64_t len, int64_t block_size, std::mt19937& rng, DType dtype = DType::kF32) {
  const ModelConfig c = Config();
  const int64_t per_seq = (len + block_size - 1) / block_size;
  KvFixture s{c, KvCache(c, 2 * per_seq, block_size, dtype), {}};
  std::vector<int32_t> blocks(2 * per_seq);
  std::iota(blocks.begin(), blocks.end(), 0);
  std::shuffle(blocks.begin(), blocks.end(), rng);
  s.tables.emplace_back(blocks.begin(), blocks.begin() + per_seq);
  s.tables.emplace_back(blocks.begin() + per_seq, blocks.end());
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> row(static_cast<size_t>(c.kv_dim()));
  for (int64_t l = 0; l < c.num_layers; ++l) {
    for (int64_t b = 0; b < 2 * per_seq; ++b) {
      for (int64_t slot = 0; slot < block_size; ++slot) {
        for (auto& x : row) x = n(rng);
        s.kv.WriteK(l, b, slot, row.data());
        for (auto& x : row) x = n(rng);
        s.kv.WriteV(l, b, slot, row.data());
      }
    }
  }
  return s;
}

std::vector<double> Reference(const KvFixture& s, const std::vector<int32_t>& table, const float* q,
                              int64_t head, int64_t pos, const ops::AttentionParams& p) {
  const int64_t hd = p.head_dim, kvh = head / (p.num_heads / p.num_kv_heads), bs = s.kv.block_size();
  const int64_t lo = p.window > 0 ? std::max<int64_t>(0, pos - p.window + 1) : 0;
  // What the cache holds, decoded (the kernels' input, whatever the dtype).
  std::vector<float> row(static_cast<size_t>(s.kv.kv_dim()));
  const auto k_of = [&](int64_t j) {
    s.kv.ReadK(p.layer, table[j / bs], j % bs, row.data());
    return row.data() + kvh * hd;
  };
  const auto v_of = [&](int64_t j) {
    s.kv.ReadV(p.layer, table[j / bs], j % bs, row.data());
    return row.data() + kvh * hd;
  };
  std::vector<double> w;
  for (int64_t j = lo; j <= pos; ++j) {
    const float* k = k_of(j);
    double dot = 0;
    for (int64_t d = 0; d < hd; ++d) dot += static_cast<double>(q[d]) * k[d];
    w.push_back(dot * p.scale);
  }
  const double m = *std::max_element(w.begin(), w.end());
  double sum = 0;
  for (double& x : w) sum += (x = std::exp(x - m));
  std::vector<double> out(hd, 0.0);
  for (int64_t j = lo; j <= pos; ++j) {
    const float* v = v_of(j);
    for (int64_t d = 0; d < hd; ++d) out[d] += w[j - lo] / sum * v[d];
  }
  return out;
}

// WriteK/WriteV scatter a row head by head; KRow/VRow(layer, block, slot,
// head) find each piece again; a block of one layer is one contiguous run
// (block copies rely on it) with each head's rows contiguous inside it (a
// dim-major K head's elements: KDimStride() apart).
// Values that every dtype stores exactly (small integers) read back as written.
TEST(KvCacheLayout, HeadsAreContiguousInsideContiguousBlocks) {
  for (DType dtype : kKvDTypes) {
    const int64_t layers = 2, blocks = 3, bs = 4, heads = 2, width = 32;
    KvCache kv(layers, blocks, bs, heads * width, heads * width, heads, dtype);
    const int64_t row_bytes = RowBytes(dtype, width);
    ASSERT_EQ(kv.BytesPerToken(), layers * 2 * heads * row_bytes);
    // f32 / f16 / bf16 K is dim-major: element d of a head block's slots side by side.
    const bool dim_major = dtype != DType::kQ8_0;
    ASSERT_EQ(kv.k_dim_major(), dim_major) << DTypeName(dtype);
    const int64_t k_slot = dim_major ? BlockBytes(dtype) : row_bytes;
    EXPECT_EQ(kv.KStrides().slot, k_slot);
    EXPECT_EQ(kv.KDimStride(), dim_major ? bs * BlockBytes(dtype) : 0);
    std::vector<float> row(static_cast<size_t>(heads * width)), back(row.size());
    const auto value = [](int64_t l, int64_t b, int64_t slot, int64_t i) {
      return float((((l * 3 + b) * 4 + slot) * 64 + i) % 120 - 60);  // |x| <= 60: exact in every dtype
    };
    for (int64_t l = 0; l < layers; ++l) {
      for (int64_t b = 0; b < blocks; ++b) {
        for (int64_t slot = 0; slot < bs; ++slot) {
          for (int64_t i = 0; i < heads * width; ++i) row[static_cast<size_t>(i)] = value(l, b, slot, i);
          // q8_0 stores q * amax / 127: make amax 127 so every integer is exact.
          if (dtype == DType::kQ8_0) row[0] = row[width] = 127.0f;
          kv.WriteK(l, b, slot, row.data());
          for (float& x : row) x = -x;
          kv.WriteV(l, b, slot, row.data());
          kv.ReadK(l, b, slot, back.data());
          for (size_t i = 0; i < row.size(); ++i)
            ASSERT_EQ(back[i], -row[i]) << DTypeName(dtype) << " K " << i;
          kv.ReadV(l, b, slot, back.data());
          for (size_t i = 0; i < row.size(); ++i)
            ASSERT_EQ(back[i], row[i]) << DTypeName(dtype) << " V " << i;
        }
      }
    }
    for (int64_t l = 0; l < layers; ++l) {
      for (int64_t b = 0; b < blocks; ++b) {
        EXPECT_EQ(kv.KRow(l, b, 0, 0), kv.KRow(0, 0, 0, 0) + (l * blocks + b) * bs * heads * row_bytes);
        for (int64_t h = 0; h < heads; ++h) {
          for (int64_t slot = 0; slot < bs; ++slot) {
            EXPECT_EQ(kv.KRow(l, b, slot, h), kv.KRow(l, b, 0, 0) + h * bs * row_bytes + slot * k_slot);
            EXPECT_EQ(kv.VRow(l, b, slot, h), kv.VRow(l, b, 0, 0) + (h * bs + slot) * row_bytes);
            if (!dim_major) continue;
            // Element i of the head's K row, KDimStride() bytes after element i - 1.
            for (int64_t i = 0; i < width; ++i) {
              float x = 0;
              DequantizeRow(dtype, kv.KRow(l, b, slot, h) + i * kv.KDimStride(), &x, 1);
              EXPECT_EQ(x, value(l, b, slot, h * width + i)) << DTypeName(dtype) << " element " << i;
            }
          }
        }
      }
    }
    // CopyBlock moves every layer's K and V of one block and nothing else.
    kv.CopyBlock(0, 2);
    for (int64_t l = 0; l < layers; ++l) {
      for (int64_t slot = 0; slot < bs; ++slot) {
        std::vector<float> src(row.size()), dst(row.size());
        kv.ReadV(l, 0, slot, src.data());
        kv.ReadV(l, 2, slot, dst.data());
        EXPECT_EQ(src, dst) << DTypeName(dtype);
      }
    }
    kv.ReadK(1, 1, 3, back.data());
    EXPECT_EQ(back[1], value(1, 1, 3, 1)) << "block 1 untouched";
  }
}

// MLA's latent cache (one head, no V) keeps K as rows in every dtype: its
// attention reads whole latent rows.
TEST(KvCacheLayout, LatentCachesKeepRows) {
  for (DType dtype : kKvDTypes) {
    KvCache kv(1, 2, 16, 96, 0, 1, dtype);
    EXPECT_FALSE(kv.k_dim_major()) << DTypeName(dtype);
    EXPECT_EQ(kv.KStrides().slot, RowBytes(dtype, 96));
  }
}

// CheckDType: q8_0 needs whole 32-element blocks per head row.
TEST(KvCacheLayout, CheckDTypeRejectsRowsThatAreNotWholeBlocks) {
  ModelConfig c = Config();
  for (DType dtype : kKvDTypes) EXPECT_TRUE(KvCache::CheckDType(c, dtype).ok()) << DTypeName(dtype);
  c.head_dim = 8;
  EXPECT_TRUE(KvCache::CheckDType(c, DType::kF16).ok());
  const Status st = KvCache::CheckDType(c, DType::kQ8_0);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("8 wide"), std::string::npos) << st.message();
  EXPECT_FALSE(KvCache::CheckDType(c, DType::kQ4_0).ok());
}

TEST(KvCacheDType, ParsesTheFlagValues) {
  for (const char* name : {"auto", "f32", "f16", "bf16", "q8_0"}) {
    auto t = ParseKvCacheDType(name);
    ASSERT_TRUE(t.ok()) << name;
    EXPECT_STREQ(KvCacheDTypeName(*t), name);
  }
  const auto bad = ParseKvCacheDType("unknown");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("auto, f32, f16, bf16, q8_0"), std::string::npos);
  const DType a = ResolveKvCacheDType(KvCacheDType::kAuto);
  EXPECT_TRUE(a == DType::kF16 || a == DType::kBF16) << DTypeName(a);
  EXPECT_EQ(ResolveKvCacheDType(KvCacheDType::kQ8_0), DType::kQ8_0);
}

// The attention parameters of config c's heads, layer 0 unless told.
ops::AttentionParams ParamsOf(const ModelConfig& c, float scale, int64_t window = 0, int64_t layer = 0) {
  ops::AttentionParams p;
  p.layer = layer;
  p.num_heads = c.num_heads;
  p.num_kv_heads = c.num_kv_heads;
  p.head_dim = c.head_dim;
  p.window = window;
  p.scale = scale;
  return p;
}

class PagedAttentionDType : public ::testing::TestWithParam<DType> {};

TEST_P(PagedAttentionDType, MatchesReferenceAcrossSplitsAndWindows) {
  std::mt19937 rng(21);
  KvFixture s = MakeSetup(700, 7, rng, GetParam());
  const ModelConfig& c = s.config;
  const int64_t qd = c.q_dim();
  // Tokens of both sequences at positions around and past the split size.
  const std::vector<int64_t> positions = {0, 5, 255, 256, 257, 511, 600, 699, 3, 300};
  const std::vector<int> seq = {0, 0, 0, 0, 0, 1, 1, 1, 1, 0};
  std::vector<float> q(positions.size() * qd);
  for (auto& x : q) x = std::normal_distribution<float>(0.0f, 1.0f)(rng);
  std::vector<const std::vector<int32_t>*> tables;
  for (int k : seq) tables.push_back(&s.tables[k]);
  for (int64_t window : {0, 1, 100, 300}) {
    const ops::AttentionParams p = ParamsOf(c, 0.17f, window, /*layer=*/1);
    std::vector<float> out(q.size());
    ThreadPool pool(2);
    ops::PagedAttention(q.data(), static_cast<int64_t>(positions.size()), positions.data(), tables, s.kv, p,
                        pool, out.data());
    for (size_t t = 0; t < positions.size(); ++t) {
      for (int64_t h = 0; h < c.num_heads; ++h) {
        const std::vector<double> ref =
            Reference(s, *tables[t], q.data() + t * qd + h * c.head_dim, h, positions[t], p);
        for (int64_t d = 0; d < c.head_dim; ++d) {
          ASSERT_NEAR(out[t * qd + h * c.head_dim + d], ref[d], 3e-5)
              << "window " << window << " pos " << positions[t] << " head " << h;
        }
      }
    }
  }
}

TEST_P(PagedAttentionDType, BitIdenticalForAnyThreadCountAndBatch) {
  std::mt19937 rng(5);
  KvFixture s = MakeSetup(1100, 16, rng, GetParam());
  const ModelConfig& c = s.config;
  const int64_t qd = c.q_dim();
  std::vector<int64_t> positions;
  std::vector<const std::vector<int32_t>*> tables;
  for (int64_t pos = 0; pos < 1100; pos += 37) {
    positions.push_back(pos);
    tables.push_back(&s.tables[pos % 2]);
  }
  const int64_t n = static_cast<int64_t>(positions.size());
  std::vector<float> q(n * qd);
  for (auto& x : q) x = std::normal_distribution<float>(0.0f, 1.0f)(rng);
  const ops::AttentionParams p = ParamsOf(c, 0.15f);

  std::vector<float> batched(q.size());
  ThreadPool one(1);
  ops::PagedAttention(q.data(), n, positions.data(), tables, s.kv, p, one, batched.data());
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    std::vector<float> other(q.size());
    ops::PagedAttention(q.data(), n, positions.data(), tables, s.kv, p, pool, other.data());
    EXPECT_EQ(0, std::memcmp(batched.data(), other.data(), other.size() * sizeof(float)))
        << threads << " threads";
  }
  // Each token alone (and through AttendOneHead) gives the same bits as in the batch.
  ThreadPool pool(2);
  for (int64_t t = 0; t < n; ++t) {
    std::vector<float> alone(qd);
    ops::PagedAttention(q.data() + t * qd, 1, &positions[t], {tables[t]}, s.kv, p, pool, alone.data());
    ASSERT_EQ(0, std::memcmp(alone.data(), batched.data() + t * qd, qd * sizeof(float))) << "token " << t;
    std::vector<float> head(c.head_dim);
    ops::AttendOneHead(q.data() + t * qd + 5 * c.head_dim, 5, positions[t], *tables[t], s.kv, p, head.data());
    ASSERT_EQ(0,
              std::memcmp(head.data(), batched.data() + t * qd + 5 * c.head_dim, c.head_dim * sizeof(float)));
  }
}

// Runs of consecutive positions of one sequence (a prefill chunk, a
// verification's draft rows) share work items and K/V tiles; each row must
// still give the bits it gives alone. The runs cross the key split at 256,
// start at position 0, exceed the item size of 8 rows, and sit beside rows
// of the other sequence and a repeated position; windows shift the first key.
TEST_P(PagedAttentionDType, RunsOfConsecutiveRowsGiveEachRowsBitsAlone) {
  std::mt19937 rng(9);
  KvFixture s = MakeSetup(700, 16, rng, GetParam());
  const ModelConfig& c = s.config;
  const int64_t qd = c.q_dim();
  std::vector<int64_t> positions;
  std::vector<const std::vector<int32_t>*> tables;
  const auto run = [&](int seq, int64_t from, int64_t count) {
    for (int64_t k = 0; k < count; ++k) {
      positions.push_back(from + k);
      tables.push_back(&s.tables[seq]);
    }
  };
  run(0, 250, 13);  // crosses 256
  run(1, 0, 11);    // from the first key, longer than one item
  run(0, 600, 1);
  run(0, 600, 3);  // the same position again: a new run
  run(1, 299, 6);  // a verification-sized run
  const int64_t n = static_cast<int64_t>(positions.size());
  std::vector<float> q(n * qd);
  for (auto& x : q) x = std::normal_distribution<float>(0.0f, 1.0f)(rng);
  for (int64_t window : {0, 5, 100}) {
    const ops::AttentionParams p = ParamsOf(c, 0.2f, window);
    ThreadPool pool(2);
    std::vector<float> batched(q.size());
    ops::PagedAttention(q.data(), n, positions.data(), tables, s.kv, p, pool, batched.data());
    for (int64_t t = 0; t < n; ++t) {
      std::vector<float> alone(qd);
      ops::PagedAttention(q.data() + t * qd, 1, &positions[t], {tables[t]}, s.kv, p, pool, alone.data());
      ASSERT_EQ(0, std::memcmp(alone.data(), batched.data() + t * qd, qd * sizeof(float)))
          << "window " << window << " row " << t << " position " << positions[t];
      for (int64_t h = 0; h < c.num_heads; h += 3) {
        const std::vector<double> ref =
            Reference(s, *tables[t], q.data() + t * qd + h * c.head_dim, h, positions[t], p);
        for (int64_t d = 0; d < c.head_dim; ++d) {
          ASSERT_NEAR(batched[t * qd + h * c.head_dim + d], ref[d], 3e-5)
              << "window " << window << " row " << t;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllKvDTypes, PagedAttentionDType, ::testing::ValuesIn(kKvDTypes),
                         [](const ::testing::TestParamInfo<DType>& info) { return DTypeName(info.param); });

}  // namespace
}  // namespace deepinfer
