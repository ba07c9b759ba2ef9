// MatMulShared must be bit-for-bit the same as one MatMul per target: the
// per-(row, token) arithmetic is the kernels' and only the work split and
// the activation preparation are shared. Checked for every ISA level the CPU
// has, packed and file-layout weights, GEMV and GEMM, odd row counts (task
// boundaries fall inside a target) and the fallback for mixed weight types.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/isa.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/packed_weights.h"
#include "tensor/dequant.h"

namespace deepinfer::cpu {
namespace {

struct Weights {
  std::vector<uint8_t> bytes;
  TensorView view;
};

Weights RandomWeights(std::mt19937& rng, DType t, int64_t rows, int64_t k) {
  Weights w;
  const int64_t row_bytes = RowBytes(t, k);
  w.bytes.resize(static_cast<size_t>(row_bytes * rows));
  std::normal_distribution<float> dist(0.0f, 0.5f);
  std::vector<float> row(static_cast<size_t>(k));
  for (int64_t r = 0; r < rows; ++r) {
    for (float& f : row) f = dist(rng);
    EXPECT_TRUE(QuantizeRow(t, row.data(), w.bytes.data() + r * row_bytes, k));
  }
  w.view.dtype = t;
  w.view.shape = {rows, k};
  w.view.data = w.bytes.data();
  w.view.nbytes = static_cast<int64_t>(w.bytes.size());
  return w;
}

std::vector<Isa> SupportedIsas() {
  std::vector<Isa> isas = {Isa::kScalar};
  if (CpuSupports(Isa::kAvx2)) isas.push_back(Isa::kAvx2);
  if (CpuSupports(Isa::kAvx512)) isas.push_back(Isa::kAvx512);
  return isas;
}

// Runs the targets through MatMulShared and through separate MatMul calls
// and requires identical bytes.
void ExpectSharedEqualsSeparate(Isa isa, const std::vector<PackedMatrix>& ws, int64_t n_tokens,
                                ThreadPool& pool, std::mt19937& rng) {
  const int64_t k = ws[0].view.cols();
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n_tokens * k));
  for (float& f : x) f = dist(rng);
  std::vector<std::vector<float>> bias(ws.size()), shared(ws.size()), separate(ws.size());
  std::vector<MatMulTarget> targets;
  for (size_t i = 0; i < ws.size(); ++i) {
    bias[i].resize(static_cast<size_t>(ws[i].view.rows()));
    for (float& f : bias[i]) f = dist(rng);
    shared[i].assign(static_cast<size_t>(n_tokens * ws[i].view.rows()), -1.0f);
    separate[i].assign(static_cast<size_t>(n_tokens * ws[i].view.rows()), -2.0f);
    // Every other target has a bias, so both paths of the kernels run.
    targets.push_back({&ws[i].view, ws[i].layout, i % 2 == 0 ? bias[i].data() : nullptr, shared[i].data()});
  }
  MatMulSharedWithIsa(isa, targets, x.data(), n_tokens, pool);
  for (size_t i = 0; i < ws.size(); ++i) {
    MatMulWithIsa(isa, ws[i].view, ws[i].layout, x.data(), n_tokens, targets[i].bias, separate[i].data(),
                  pool);
    ASSERT_EQ(0, std::memcmp(shared[i].data(), separate[i].data(), shared[i].size() * sizeof(float)))
        << "isa " << IsaName(isa) << " type " << DTypeName(ws[i].view.dtype) << " target " << i << " tokens "
        << n_tokens;
  }
}

TEST(MatMulSharedTest, EqualsOneMatMulPerTarget) {
  std::mt19937 rng(7);
  ThreadPool pool(3);  // odd thread count: chunks straddle target boundaries
  for (Isa isa : SupportedIsas()) {
    for (DType t : {DType::kF32, DType::kBF16, DType::kQ8_0, DType::kQ4_0}) {
      // q / k / v-like: a large target, two small ones; rows not multiples of
      // the 16-row task so a task boundary falls inside a target.
      std::vector<Weights> owned;
      for (int64_t rows : {200, 37, 37}) owned.push_back(RandomWeights(rng, t, rows, 352));
      PackedWeights packer;  // packs only where `isa` would (the active level)
      for (bool packed : {false, true}) {
        if (packed && (isa != ActiveIsa() || !PacksType(isa, t))) continue;
        std::vector<PackedMatrix> ws;
        for (const Weights& w : owned) ws.push_back(packed ? packer.Pack(w.view) : PackedMatrix{w.view});
        for (int64_t n_tokens : {1, 5, 40}) ExpectSharedEqualsSeparate(isa, ws, n_tokens, pool, rng);
      }
    }
  }
}

TEST(MatMulSharedTest, MixedShapesAndTypesFallBackToSeparateCalls) {
  std::mt19937 rng(11);
  ThreadPool pool(2);
  const Weights a = RandomWeights(rng, DType::kQ8_0, 40, 256);
  const Weights b = RandomWeights(rng, DType::kQ4_0, 24, 256);  // other type
  const Weights c = RandomWeights(rng, DType::kQ8_0, 16, 256);
  for (Isa isa : SupportedIsas()) {
    ExpectSharedEqualsSeparate(isa, {{a.view}, {b.view}, {c.view}}, 3, pool, rng);
    ExpectSharedEqualsSeparate(isa, {{a.view}, {c.view}, {a.view}, {c.view}, {a.view}}, 2, pool,
                               rng);  // > 4 targets
  }
}

// MatMulGrouped: targets with their own x and token counts (0 included),
// several K, mixed weight types, some sharing an x (one preparation), packed
// and file layout - the bytes of one MatMul per target.
TEST(MatMulGroupedTest, EqualsOneMatMulPerTarget) {
  std::mt19937 rng(13);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  ThreadPool pool(3);
  for (Isa isa : SupportedIsas()) {
    std::vector<Weights> owned;
    owned.push_back(RandomWeights(rng, DType::kQ4_0, 45, 352));
    owned.push_back(RandomWeights(rng, DType::kQ4_0, 45, 352));
    owned.push_back(RandomWeights(rng, DType::kQ8_0, 21, 96));
    owned.push_back(RandomWeights(rng, DType::kF32, 33, 352));
    owned.push_back(RandomWeights(rng, DType::kBF16, 17, 64));
    owned.push_back(RandomWeights(rng, DType::kQ4_0, 64, 160));
    PackedWeights packer;
    for (bool packed : {false, true}) {
      if (packed && isa != ActiveIsa()) continue;
      std::vector<PackedMatrix> ws;
      for (const Weights& w : owned) {
        ws.push_back(packed && PacksType(isa, w.view.dtype) ? packer.Pack(w.view) : PackedMatrix{w.view});
      }
      // Inputs: targets 0 and 3 share x0 (the same K), 1 has its own x, 2, 4
      // and 5 their own; token counts 1 (decode), several, 0.
      for (const std::vector<int64_t>& tokens :
           std::vector<std::vector<int64_t>>{{1, 1, 1, 1, 1, 1}, {3, 7, 0, 3, 9, 2}, {20, 1, 5, 20, 0, 17}}) {
        std::vector<std::vector<float>> xs(ws.size()), grouped(ws.size()), separate(ws.size());
        std::vector<MatMulGroupTarget> targets;
        for (size_t i = 0; i < ws.size(); ++i) {
          xs[i].resize(static_cast<size_t>(std::max<int64_t>(tokens[i], 1) * ws[i].view.cols()));
          for (float& f : xs[i]) f = dist(rng);
          grouped[i].assign(static_cast<size_t>(tokens[i] * ws[i].view.rows()), -1.0f);
          separate[i].assign(grouped[i].size(), -2.0f);
          const float* x = i == 3 ? xs[0].data() : xs[i].data();
          targets.push_back({&ws[i].view, ws[i].layout, x, tokens[i], nullptr, grouped[i].data()});
        }
        MatMulGroupedWithIsa(isa, targets, pool);
        for (size_t i = 0; i < ws.size(); ++i) {
          if (tokens[i] > 0) {
            MatMulWithIsa(isa, ws[i].view, ws[i].layout, targets[i].x, tokens[i], nullptr, separate[i].data(),
                          pool);
          }
          if (grouped[i].empty()) continue;  // memcmp of null data() is undefined, even for 0 bytes
          ASSERT_EQ(0, std::memcmp(grouped[i].data(), separate[i].data(), grouped[i].size() * sizeof(float)))
              << "isa " << IsaName(isa) << " packed " << packed << " target " << i << " tokens " << tokens[i];
        }
      }
    }
  }
}

}  // namespace
}  // namespace deepinfer::cpu
