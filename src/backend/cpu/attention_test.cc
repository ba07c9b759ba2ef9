// The flash-style attention kernels against a naive two-pass softmax in
// double precision, on random paged layouts with odd block sizes, head sizes
// and key ranges, for every cache dtype (f32, f16, bf16, q8_0); plus the
// properties the model relies on: split + merge equals one pass, a head's
// result does not depend on its GQA group, and a 16-/8-bit cache gives
// exactly the bits of an f32 cache holding its decoded values; each in both
// K layouts (rows, and dim-major: PagedKvView::k_dim_stride).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/attention_kernel.h"
#include "backend/cpu/isa.h"
#include "tensor/dequant.h"

namespace deepinfer::cpu {
namespace {

// Rows of `dtype` laid out [block][slot][kv_head][row], with a random block
// table; `kd` / `vd` keep each row decoded to f32 (what the kernels must see).
// AsDimMajor() stores the same K dim-major instead, [block][kv_head][dim][slot].
struct Layout {
  int64_t block_size, num_blocks, kv_heads, head_dim;
  DType dtype = DType::kF32;
  std::vector<uint8_t> k, v;   // [block][slot][kv_head][RowBytes(dtype, head_dim)]
  std::vector<float> kd, vd;   // the same rows decoded, [block][slot][kv_head][head_dim]
  std::vector<int32_t> table;  // a random permutation of the blocks
  bool dim_major = false;      // K as [block][kv_head][dim][slot] elements
  int64_t RowBytesOf() const { return RowBytes(dtype, head_dim); }
  PagedKvView View(int64_t kv_head) const {
    PagedKvView view;
    view.dtype = dtype;
    view.k = k.data() + kv_head * RowBytesOf();
    view.v = v.data() + kv_head * RowBytesOf();
    view.block_table = table.data();
    view.block_size = block_size;
    view.slot_stride = kv_heads * RowBytesOf();
    view.block_stride = block_size * kv_heads * RowBytesOf();
    view.v_slot_stride = view.slot_stride;
    view.v_block_stride = view.block_stride;
    if (dim_major) {
      const int64_t elem = BlockBytes(dtype);
      view.k = k.data() + kv_head * head_dim * block_size * elem;
      view.slot_stride = elem;
      view.k_dim_stride = block_size * elem;
    }
    return view;
  }
  // The same cache with K dim-major (f32 / f16 / bf16: elements are bytes apart).
  Layout AsDimMajor() const {
    Layout l = *this;
    l.dim_major = true;
    const int64_t elem = BlockBytes(dtype);
    for (int64_t b = 0; b < num_blocks; ++b) {
      for (int64_t slot = 0; slot < block_size; ++slot) {
        for (int64_t h = 0; h < kv_heads; ++h) {
          for (int64_t d = 0; d < head_dim; ++d) {
            const int64_t from = ((b * block_size + slot) * kv_heads + h) * RowBytesOf() + d * elem;
            const int64_t to = (((b * kv_heads + h) * head_dim + d) * block_size + slot) * elem;
            std::memcpy(l.k.data() + to, k.data() + from, static_cast<size_t>(elem));
          }
        }
      }
    }
    return l;
  }
  const float* K(int64_t kv_head, int64_t pos) const { return kd.data() + Offset(kv_head, pos); }
  const float* V(int64_t kv_head, int64_t pos) const { return vd.data() + Offset(kv_head, pos); }
  int64_t Offset(int64_t kv_head, int64_t pos) const {
    return ((table[pos / block_size] * block_size + pos % block_size) * kv_heads + kv_head) * head_dim;
  }
  // The same cache stored as f32 (the decoded values), in the same K layout.
  Layout AsF32() const {
    Layout l = *this;
    l.dtype = DType::kF32;
    l.dim_major = false;
    l.k.resize(kd.size() * sizeof(float));
    l.v.resize(vd.size() * sizeof(float));
    std::memcpy(l.k.data(), kd.data(), l.k.size());
    std::memcpy(l.v.data(), vd.data(), l.v.size());
    return dim_major ? l.AsDimMajor() : l;
  }
};

Layout MakeLayout(std::mt19937& rng, int64_t block_size, int64_t positions, int64_t kv_heads,
                  int64_t head_dim, float spread, DType dtype = DType::kF32) {
  Layout l{
      block_size, (positions + block_size - 1) / block_size + 3, kv_heads, head_dim, dtype, {}, {}, {}, {},
      {}};
  std::normal_distribution<float> n(0.0f, spread);
  const int64_t rows = l.num_blocks * block_size * kv_heads;
  l.k.resize(static_cast<size_t>(rows * l.RowBytesOf()));
  l.v.resize(l.k.size());
  l.kd.resize(static_cast<size_t>(rows * head_dim));
  l.vd.resize(l.kd.size());
  std::vector<float> row(static_cast<size_t>(head_dim));
  for (int64_t r = 0; r < rows; ++r) {
    for (auto [bytes, decoded] : {std::pair{&l.k, &l.kd}, std::pair{&l.v, &l.vd}}) {
      for (auto& x : row) x = n(rng);
      EXPECT_TRUE(QuantizeRow(dtype, row.data(), bytes->data() + r * l.RowBytesOf(), head_dim));
      DequantizeRow(dtype, bytes->data() + r * l.RowBytesOf(), decoded->data() + r * head_dim, head_dim);
    }
  }
  l.table.resize(l.num_blocks);
  std::iota(l.table.begin(), l.table.end(), 0);
  std::shuffle(l.table.begin(), l.table.end(), rng);
  return l;
}

// Both K layouts of the cache dtypes that have them (q8_0: rows only).
std::vector<bool> KLayouts(DType dtype) {
  return dtype == DType::kQ8_0 ? std::vector<bool>{false} : std::vector<bool>{false, true};
}
Layout InKLayout(Layout l, bool dim_major) { return dim_major ? l.AsDimMajor() : l; }

// softmax(scale q.k_j) . v_j over j in [begin, end), in double.
// With softcap > 0 the scores are capped first: softcap * tanh(score / softcap).
std::vector<double> Reference(const Layout& l, int64_t kv_head, const float* q, float scale, int64_t begin,
                              int64_t end, double softcap = 0) {
  const int64_t hd = l.head_dim;
  std::vector<double> s;
  for (int64_t j = begin; j < end; ++j) {
    double dot = 0;
    for (int64_t d = 0; d < hd; ++d) dot += static_cast<double>(q[d]) * l.K(kv_head, j)[d];
    s.push_back(softcap > 0 ? softcap * std::tanh(dot * scale / softcap) : dot * scale);
  }
  const double m = *std::max_element(s.begin(), s.end());
  double sum = 0;
  for (double& x : s) sum += (x = std::exp(x - m));
  std::vector<double> out(hd, 0.0);
  for (int64_t j = begin; j < end; ++j) {
    for (int64_t d = 0; d < hd; ++d) out[d] += s[j - begin] / sum * l.V(kv_head, j)[d];
  }
  return out;
}

using Kernel = void (*)(const AttentionQuery&, const PagedKvView&, int64_t, int64_t, AttentionState);

// Runs `kernel` over [begin, end), cut at `cuts` (merged in order); returns f32 [n_q, hd].
std::vector<float> RunKernel(Kernel kernel, const Layout& l, int64_t kv_head, const float* q, int64_t n_q,
                             float scale, std::vector<int64_t> bounds, float softcap = 0.0f) {
  const int64_t hd = l.head_dim;
  std::vector<float> acc(n_q * hd), mx(n_q), sum(n_q), acc2(n_q * hd), mx2(n_q), sum2(n_q), out(n_q * hd);
  AttentionState a{mx.data(), sum.data(), acc.data()}, b{mx2.data(), sum2.data(), acc2.data()};
  ResetAttentionState(n_q, hd, a);
  const AttentionQuery query{q, n_q, hd, scale, softcap};
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    if (i == 0) {
      kernel(query, l.View(kv_head), bounds[0], bounds[1], a);
    } else {
      ResetAttentionState(n_q, hd, b);
      kernel(query, l.View(kv_head), bounds[i], bounds[i + 1], b);
      MergeAttentionState(n_q, hd, a, b);
    }
  }
  FinishAttention(n_q, hd, a, out.data());
  return out;
}

std::vector<Kernel> Kernels() {
  std::vector<Kernel> k = {&AttendKeysScalar};
  if (CpuSupports(Isa::kAvx512)) k.push_back(&AttendKeysAvx512);
  return k;
}

// Gemma-2's attention soft-capping, with peaked scores (spread 3) that the
// cap actually bends, split into pieces and merged.
TEST(AttentionKernel, SoftCapMatchesReference) {
  std::mt19937 rng(21);
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t hd = trial % 2 == 0 ? 32 : 40, positions = 70 + trial * 13;
    const Layout l =
        InKLayout(MakeLayout(rng, trial % 3 == 0 ? 16 : 5, positions, 2, hd, 3.0f), trial % 2 == 1);
    std::vector<float> q(2 * hd);
    std::normal_distribution<float> n(0.0f, 3.0f);
    for (auto& x : q) x = n(rng);
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd)), cap = 2.0f;
    for (Kernel kernel : Kernels()) {
      const std::vector<float> got = RunKernel(kernel, l, 1, q.data(), 2, scale, {0, 33, positions}, cap);
      for (int64_t i = 0; i < 2; ++i) {
        const std::vector<double> ref = Reference(l, 1, q.data() + i * hd, scale, 0, positions, cap);
        const std::vector<double> uncapped = Reference(l, 1, q.data() + i * hd, scale, 0, positions);
        double diff = 0;
        for (int64_t d = 0; d < hd; ++d) {
          ASSERT_NEAR(got[i * hd + d], ref[d], 2e-5 * (1 + std::abs(ref[d]))) << trial << " d " << d;
          diff = std::max(diff, std::abs(ref[d] - uncapped[d]));
        }
        EXPECT_GT(diff, 1e-3) << "the cap must change the result here";
      }
    }
  }
}

constexpr DType kKvDTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0};

TEST(AttentionKernel, MatchesTwoPassReferenceOnRandomShapes) {
  for (DType dtype : kKvDTypes) {
    for (bool dim_major : KLayouts(dtype)) {
      std::mt19937 rng(7);
      // q8_0 rows are whole blocks of 32.
      const std::vector<int64_t> head_dims = dtype == DType::kQ8_0
                                                 ? std::vector<int64_t>{32, 64, 96, 128, 160}
                                                 : std::vector<int64_t>{8, 24, 40, 64, 72, 128, 33};
      for (int trial = 0; trial < 40; ++trial) {
        const int64_t hd = head_dims[trial % head_dims.size()];
        // Dim-major K is read in place for blocks of >= 16 slots (16, 32, 48
        // here on every third trial) and gathered otherwise.
        const int64_t bs = dim_major && trial % 3 == 0 ? 16 * (1 + trial % 3 + (trial / 3) % 3)
                                                       : std::uniform_int_distribution<int64_t>(1, 19)(rng);
        const int64_t positions = std::uniform_int_distribution<int64_t>(1, 300)(rng);
        const int64_t kv_heads = 1 + trial % 3, n_q = 1 + trial % 4 + (trial % 7 == 0 ? 9 : 0);
        const float spread = trial % 5 == 0 ? 3.0f : 1.0f;  // some runs with large, peaked scores
        const Layout l = InKLayout(MakeLayout(rng, bs, positions, kv_heads, hd, spread, dtype), dim_major);
        std::vector<float> q(n_q * hd);
        std::normal_distribution<float> n(0.0f, spread);
        for (auto& x : q) x = n(rng);
        int64_t begin = std::uniform_int_distribution<int64_t>(0, positions - 1)(rng);
        if (dim_major && trial % 2 == 0) begin -= begin % 16;  // tiles of whole blocks: K read in place
        const int64_t end = std::uniform_int_distribution<int64_t>(begin + 1, positions)(rng);
        const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
        const int64_t head = trial % kv_heads;
        for (Kernel kernel : Kernels()) {
          const std::vector<float> got = RunKernel(kernel, l, head, q.data(), n_q, scale, {begin, end});
          for (int64_t i = 0; i < n_q; ++i) {
            // Against the decoded values: decoding is exact, so the f32 bound holds.
            const std::vector<double> ref = Reference(l, head, q.data() + i * hd, scale, begin, end);
            for (int64_t d = 0; d < hd; ++d) {
              ASSERT_NEAR(got[i * hd + d], ref[d], 2e-5 * (1 + std::abs(ref[d])))
                  << DTypeName(dtype) << " trial " << trial << " head_dim " << hd << " block " << bs
                  << " range [" << begin << ", " << end << ") q " << i << " d " << d
                  << (kernel == &AttendKeysScalar ? " scalar" : " avx512") << (dim_major ? " dim-major" : "");
            }
          }
        }
      }
    }
  }
}

// The kernels decode a 16-/8-bit tile and then run the f32 arithmetic: the
// result is bit-identical to the f32 kernel over the decoded values, so
// every f32 invariance (batch, threads, GQA group) carries over.
TEST(AttentionKernel, NarrowCacheEqualsF32CacheOfItsDecodedValues) {
  for (DType dtype : {DType::kF16, DType::kBF16, DType::kQ8_0}) {
    for (bool dim_major : KLayouts(dtype)) {
      std::mt19937 rng(13);
      for (int64_t hd : {32, 64, 128}) {
        for (int64_t n_q : {1, 3, 8}) {
          const Layout narrow = InKLayout(MakeLayout(rng, 16, 333, 2, hd, 1.0f, dtype), dim_major);
          const Layout wide = narrow.AsF32();
          std::vector<float> q(n_q * hd);
          for (auto& x : q) x = std::normal_distribution<float>(0, 1)(rng);
          for (Kernel kernel : Kernels()) {
            const std::vector<float> a = RunKernel(kernel, narrow, 1, q.data(), n_q, 0.125f, {5, 300, 333});
            const std::vector<float> b = RunKernel(kernel, wide, 1, q.data(), n_q, 0.125f, {5, 300, 333});
            EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)))
                << DTypeName(dtype) << " hd " << hd << " n_q " << n_q
                << (kernel == &AttendKeysScalar ? " scalar" : " avx512") << (dim_major ? " dim-major" : "");
          }
        }
      }
    }
  }
}

TEST(AttentionKernel, SplitAndMergeEqualsOnePass) {
  std::mt19937 rng(11);
  const Layout l = MakeLayout(rng, 7, 500, 2, 40, 1.0f);
  std::vector<float> q(3 * 40);
  for (auto& x : q) x = std::normal_distribution<float>(0, 1)(rng);
  for (Kernel kernel : Kernels()) {
    const std::vector<float> whole = RunKernel(kernel, l, 1, q.data(), 3, 0.2f, {3, 497});
    const std::vector<float> parts = RunKernel(kernel, l, 1, q.data(), 3, 0.2f, {3, 40, 41, 256, 300, 497});
    for (size_t i = 0; i < whole.size(); ++i) ASSERT_NEAR(whole[i], parts[i], 1e-5) << i;
  }
}

// Groups of 4 and of 15 query heads (blocks of 8, 4, 2 and 1 inside the
// kernels), against each head alone: block and range start in a tile edge
// or inside a block (a sliding window's first keys).
TEST(AttentionKernel, HeadResultDoesNotDependOnItsGroup) {
  for (DType dtype : kKvDTypes) {
    for (bool dim_major : KLayouts(dtype)) {
      for (int64_t n_q : {4, 15}) {
        for (int64_t begin : {0, 5}) {
          std::mt19937 rng(3);
          const Layout l = InKLayout(MakeLayout(rng, 16, 130, 1, 64, 1.0f, dtype), dim_major);
          std::vector<float> q(n_q * 64);
          for (auto& x : q) x = std::normal_distribution<float>(0, 1)(rng);
          for (Kernel kernel : Kernels()) {
            const std::vector<float> group = RunKernel(kernel, l, 0, q.data(), n_q, 0.125f, {begin, 130});
            for (int64_t i = 0; i < n_q; ++i) {
              const std::vector<float> alone =
                  RunKernel(kernel, l, 0, q.data() + i * 64, 1, 0.125f, {begin, 130});
              EXPECT_EQ(0, std::memcmp(alone.data(), group.data() + i * 64, 64 * sizeof(float)))
                  << DTypeName(dtype) << " head " << i << " of " << n_q << " begin " << begin
                  << (dim_major ? " dim-major" : "");
            }
          }
        }
      }
    }
  }
}

// Several tokens' queries against one KV head in one call: each token's
// result is bitwise what its own call gives, for ranges that end inside a
// tile, at a tile edge, or past it, every cache dtype, with and without the
// soft cap, and a head_dim that is not a multiple of 16.
TEST(AttentionKernel, TokensSharingTilesEqualSeparateCalls) {
  using TokensKernel = void (*)(const AttentionQuery&, const AttentionTokens&, const PagedKvView&, int64_t);
  std::vector<std::pair<Kernel, TokensKernel>> kernels = {{&AttendKeysScalar, &AttendKeysForTokensScalar}};
  if (CpuSupports(Isa::kAvx512)) kernels.emplace_back(&AttendKeysAvx512, &AttendKeysForTokensAvx512);
  for (DType dtype : kKvDTypes) {
    for (bool dim_major : KLayouts(dtype)) {
      for (int64_t bs : {7, 16}) {
        const int64_t hd = dtype == DType::kQ8_0 ? 32 : 24, n_q = 3, begin = bs == 16 ? 0 : 5;
        std::mt19937 rng(17);
        const Layout l = InKLayout(MakeLayout(rng, bs, 120, 2, hd, 1.0f, dtype), dim_major);
        const std::vector<int64_t> ends = {6, 36, 37, 38, 60, 100, 37};
        const int64_t n = static_cast<int64_t>(ends.size());
        std::vector<float> q(n * n_q * hd);
        for (auto& x : q) x = std::normal_distribution<float>(0, 1)(rng);
        for (float softcap : {0.0f, 2.0f}) {
          for (auto [single, tokens_kernel] : kernels) {
            std::vector<float> acc(n * n_q * hd), mx(n * n_q), sum(n * n_q);
            std::vector<AttentionState> states;
            for (int64_t i = 0; i < n; ++i) {
              states.push_back({mx.data() + i * n_q, sum.data() + i * n_q, acc.data() + i * n_q * hd});
              ResetAttentionState(n_q, hd, states.back());
            }
            tokens_kernel(AttentionQuery{q.data(), n_q, hd, 0.3f, softcap},
                          AttentionTokens{n, n_q * hd, ends.data(), states.data()}, l.View(1), begin);
            for (int64_t i = 0; i < n; ++i) {
              std::vector<float> acc1(n_q * hd), mx1(n_q), sum1(n_q);
              const AttentionState one{mx1.data(), sum1.data(), acc1.data()};
              ResetAttentionState(n_q, hd, one);
              single(AttentionQuery{q.data() + i * n_q * hd, n_q, hd, 0.3f, softcap}, l.View(1), begin,
                     ends[i], one);
              EXPECT_EQ(0, std::memcmp(acc1.data(), states[i].acc, acc1.size() * sizeof(float)))
                  << DTypeName(dtype) << " token " << i << " softcap " << softcap << " block " << bs
                  << (dim_major ? " dim-major" : "");
              EXPECT_EQ(0, std::memcmp(mx1.data(), states[i].max, n_q * sizeof(float)));
              EXPECT_EQ(0, std::memcmp(sum1.data(), states[i].sum, n_q * sizeof(float)));
            }
          }
        }
      }
    }
  }
}

// head_dim 8 has its own AVX-512 path for a dim-major K (chunks of 256
// keys, a two-pass softmax per chunk merged into the running state): its
// contracts, on ranges that cross chunks and end inside, at or just past a
// chunk edge, in blocks of 16 / 32 slots (K read in place) and of 7 (K
// gathered), with peaked scores (spread 4: exp underflows for most keys)
// and with Gemma-2's soft cap: each token's result bitwise equals its own
// call, a head's does not depend on its group, a 16-bit cache gives the bits
// of an f32 cache of its decoded values, and all of it, also folded in two
// calls into one state, agrees with the double-precision reference.
TEST(AttentionKernel, HeadDim8KeepsEveryContractAcrossChunks) {
  if (!CpuSupports(Isa::kAvx512)) GTEST_SKIP() << "no AVX-512";
  constexpr int64_t hd = 8, n_q = 3, positions = 700;
  const std::vector<int64_t> ends = {1, 255, 256, 257, 300, 512, 700};
  const auto n = static_cast<int64_t>(ends.size());
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (bool dim_major : KLayouts(dtype)) {
      for (int64_t bs : {16, 7, 32}) {
        for (float spread : {1.0f, 4.0f}) {
          std::mt19937 rng(23);
          const Layout l = InKLayout(MakeLayout(rng, bs, positions, 2, hd, spread, dtype), dim_major);
          std::vector<float> q(n * n_q * hd);
          for (auto& x : q) x = std::normal_distribution<float>(0, spread)(rng);
          for (auto [begin, softcap] :
               {std::pair{int64_t{0}, 0.0f}, std::pair{int64_t{5}, 0.0f}, std::pair{int64_t{0}, 2.0f}}) {
            const std::string where = std::string(DTypeName(dtype)) + " block " + std::to_string(bs) +
                                      " spread " + std::to_string(spread) + " begin " +
                                      std::to_string(begin) + " softcap " + std::to_string(softcap) +
                                      (dim_major ? " dim-major" : " rows");
            std::vector<float> acc(n * n_q * hd), mx(n * n_q), sum(n * n_q);
            std::vector<AttentionState> states;
            for (int64_t i = 0; i < n; ++i) {
              states.push_back({mx.data() + i * n_q, sum.data() + i * n_q, acc.data() + i * n_q * hd});
              ResetAttentionState(n_q, hd, states.back());
            }
            const std::vector<int64_t> token_ends(ends.begin(), ends.end());
            std::vector<int64_t> live;  // the tokens whose range is not empty
            for (int64_t i = 0; i < n; ++i) {
              if (token_ends[i] > begin) live.push_back(i);
            }
            // Tokens with an empty range take no part (the kernel requires end > begin).
            std::vector<float> q_live;
            std::vector<int64_t> end_live;
            std::vector<AttentionState> state_live;
            for (int64_t i : live) {
              q_live.insert(q_live.end(), q.begin() + i * n_q * hd, q.begin() + (i + 1) * n_q * hd);
              end_live.push_back(token_ends[i]);
              state_live.push_back(states[i]);
            }
            AttendKeysForTokensAvx512(AttentionQuery{q_live.data(), n_q, hd, 0.35f, softcap},
                                      AttentionTokens{static_cast<int64_t>(live.size()), n_q * hd,
                                                      end_live.data(), state_live.data()},
                                      l.View(1), begin);
            for (size_t j = 0; j < live.size(); ++j) {
              const int64_t i = live[j];
              const float* qi = q.data() + i * n_q * hd;
              std::vector<float> acc1(n_q * hd), mx1(n_q), sum1(n_q);
              const AttentionState one{mx1.data(), sum1.data(), acc1.data()};
              ResetAttentionState(n_q, hd, one);
              AttendKeysAvx512(AttentionQuery{qi, n_q, hd, 0.35f, softcap}, l.View(1), begin, token_ends[i],
                               one);
              ASSERT_EQ(0, std::memcmp(acc1.data(), states[i].acc, acc1.size() * sizeof(float)))
                  << where << " token " << i;
              ASSERT_EQ(0, std::memcmp(mx1.data(), states[i].max, n_q * sizeof(float))) << where;
              ASSERT_EQ(0, std::memcmp(sum1.data(), states[i].sum, n_q * sizeof(float))) << where;
              const std::vector<float> group =
                  RunKernel(&AttendKeysAvx512, l, 1, qi, n_q, 0.35f, {begin, token_ends[i]}, softcap);
              const std::vector<float> halves =
                  RunKernel(&AttendKeysAvx512, l, 1, qi, n_q, 0.35f,
                            {begin, (begin + token_ends[i]) / 2 + 1, token_ends[i]}, softcap);
              for (int64_t h = 0; h < n_q; ++h) {
                const std::vector<float> alone = RunKernel(&AttendKeysAvx512, l, 1, qi + h * hd, 1, 0.35f,
                                                           {begin, token_ends[i]}, softcap);
                ASSERT_EQ(0, std::memcmp(alone.data(), group.data() + h * hd, hd * sizeof(float)))
                    << where << " token " << i << " head " << h;
                const std::vector<double> ref =
                    Reference(l, 1, qi + h * hd, 0.35f, begin, token_ends[i], softcap);
                for (int64_t d = 0; d < hd; ++d) {
                  ASSERT_NEAR(group[h * hd + d], ref[d], 2e-5 * (1 + std::abs(ref[d])))
                      << where << " token " << i << " head " << h << " d " << d;
                  if (token_ends[i] - begin > 1) {
                    ASSERT_NEAR(halves[h * hd + d], ref[d], 2e-5 * (1 + std::abs(ref[d])))
                        << where << " token " << i << " head " << h << " d " << d << " in two calls";
                  }
                }
              }
              if (dtype != DType::kF32) {
                const std::vector<float> wide = RunKernel(&AttendKeysAvx512, l.AsF32(), 1, qi, n_q, 0.35f,
                                                          {begin, token_ends[i]}, softcap);
                ASSERT_EQ(0, std::memcmp(wide.data(), group.data(), group.size() * sizeof(float)))
                    << where << " token " << i << ": f32 cache of the decoded values";
              }
            }
          }
        }
      }
    }
  }
}

TEST(AttentionKernel, SingleKeyReturnsItsValue) {
  std::mt19937 rng(5);
  const Layout l = MakeLayout(rng, 3, 10, 1, 24, 1.0f);
  std::vector<float> q(24, 1.0f);
  for (Kernel kernel : Kernels()) {
    const std::vector<float> got = RunKernel(kernel, l, 0, q.data(), 1, 1.0f, {4, 5});
    for (int64_t d = 0; d < 24; ++d) EXPECT_FLOAT_EQ(got[d], l.V(0, 4)[d]);
  }
}

}  // namespace
}  // namespace deepinfer::cpu
