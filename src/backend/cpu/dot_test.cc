// Dot and AddScaled: every ISA level gives the scalar bits (the order and
// the fused multiply-adds are the contract), and the scalar Dot is a dot
// product (double reference).
#include "backend/cpu/dot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/isa.h"

namespace deepinfer::cpu {
namespace {

// The SIMD levels this CPU runs, each with its entry points.
struct Level {
  const char* name;
  float (*dot)(const float*, const float*, int64_t);
  void (*add_scaled)(float*, float, const float*, int64_t);
  void (*dot_rows)(const float*, const float* const*, int64_t, int64_t, float*);
  void (*add_scaled_rows)(float*, const float*, const float* const*, int64_t, int64_t);
  void (*dot_rows_block)(const float* const*, int64_t, const float* const*, int64_t, int64_t, float*,
                         int64_t);
  void (*add_scaled_rows_block)(float* const*, const float*, int64_t, int64_t, const float* const*, int64_t,
                                int64_t);
};

std::vector<Level> SimdLevels() {
  std::vector<Level> levels;
  if (CpuSupports(Isa::kAvx2)) {
    levels.push_back({"avx2", DotAvx2, AddScaledAvx2, DotRowsAvx2, AddScaledRowsAvx2, DotRowsBlockAvx2,
                      AddScaledRowsBlockAvx2});
  }
  if (CpuSupports(Isa::kAvx512)) {
    levels.push_back({"avx512", DotAvx512, AddScaledAvx512, DotRowsAvx512, AddScaledRowsAvx512,
                      DotRowsBlockAvx512, AddScaledRowsBlockAvx512});
  }
  return levels;
}

TEST(Dot, SimdLevelsGiveTheScalarBitsOnOddLengths) {
  std::mt19937 rng(9);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (int64_t len : {0, 1, 7, 15, 16, 17, 33, 64, 100, 576}) {
    std::vector<float> a(static_cast<size_t>(len)), b(static_cast<size_t>(len)), y(static_cast<size_t>(len));
    for (auto& v : a) v = n(rng);
    for (auto& v : b) v = n(rng);
    for (auto& v : y) v = n(rng);
    const float scalar = DotScalar(a.data(), b.data(), len);
    double want = 0;
    for (int64_t i = 0; i < len; ++i) want += double(a[static_cast<size_t>(i)]) * b[static_cast<size_t>(i)];
    EXPECT_NEAR(scalar, want, 1e-5 * (1 + std::sqrt(double(len)))) << len;
    std::vector<float> y_scalar = y;
    AddScaledScalar(y_scalar.data(), 0.37f, a.data(), len);
    for (int64_t i = 0; i < len; ++i) {
      EXPECT_EQ(y_scalar[static_cast<size_t>(i)],
                std::fma(0.37f, a[static_cast<size_t>(i)], y[static_cast<size_t>(i)]));
    }
    for (const Level& level : SimdLevels()) {
      const float simd = level.dot(a.data(), b.data(), len);
      EXPECT_EQ(0, std::memcmp(&simd, &scalar, sizeof(float))) << level.name << " " << len;
      std::vector<float> y_simd = y;
      level.add_scaled(y_simd.data(), 0.37f, a.data(), len);
      if (len > 0) {  // memcmp of an empty vector's null data() is undefined
        EXPECT_EQ(0, std::memcmp(y_simd.data(), y_scalar.data(), y_simd.size() * sizeof(float)))
            << level.name << " " << len;
      }
    }
  }
}

// The products are fused into the sums (one rounding), by hand: lane 0
// adds -1 * 1, then (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24; fused, the sum is
// 2^-11 + 2^-24 exactly, while a rounded product (1 + 2^-11: 2^-24 is half
// an ulp at 1, a tie to even) would leave 2^-11. AddScaled the same way.
TEST(Dot, ProductsAreFusedIntoTheSums) {
  const float e = 1.0f + std::ldexp(1.0f, -12);
  const float want = std::ldexp(1.0f, -11) + std::ldexp(1.0f, -24);
  std::vector<float> a(32, 0.0f), b(32, 0.0f);
  a[0] = -1.0f, b[0] = 1.0f, a[16] = e, b[16] = e;
  EXPECT_EQ(DotScalar(a.data(), b.data(), 32), want);
  float y = -1.0f;
  AddScaledScalar(&y, e, &e, 1);
  EXPECT_EQ(y, want);
  for (const Level& level : SimdLevels()) {
    EXPECT_EQ(level.dot(a.data(), b.data(), 32), want) << level.name;
    float ys = -1.0f;
    level.add_scaled(&ys, e, &e, 1);
    EXPECT_EQ(ys, want) << level.name;
  }
}

// DotRows / AddScaledRows (every SIMD level and the dispatched one): each
// row's bits as one scalar Dot / AddScaled call, for
// row counts around the 4-row tile and lengths around the 64-float chunk.
TEST(Dot, RowsGiveTheBitsOfOneCallPerRow) {
  std::mt19937 rng(21);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (int64_t count : {1, 3, 4, 9}) {
    for (int64_t len : {5, 16, 64, 70, 576}) {
      std::vector<float> a(static_cast<size_t>(len)), y(static_cast<size_t>(len)),
          p(static_cast<size_t>(count));
      std::vector<std::vector<float>> rows(static_cast<size_t>(count),
                                           std::vector<float>(static_cast<size_t>(len)));
      std::vector<const float*> ptrs;
      for (auto& v : a) v = n(rng);
      for (auto& v : y) v = n(rng);
      for (auto& v : p) v = n(rng);
      for (auto& r : rows) {
        for (auto& v : r) v = n(rng);
        ptrs.push_back(r.data());
      }
      std::vector<float> y_one = y;
      for (int64_t j = 0; j < count; ++j) {
        AddScaledScalar(y_one.data(), p[static_cast<size_t>(j)], ptrs[static_cast<size_t>(j)], len);
      }
      std::vector<Level> levels = SimdLevels();
      levels.push_back({"active", Dot, AddScaled, DotRows, AddScaledRows, DotRowsBlock, AddScaledRowsBlock});
      for (const Level& level : levels) {
        std::vector<float> got(static_cast<size_t>(count));
        level.dot_rows(a.data(), ptrs.data(), count, len, got.data());
        std::vector<float> y_rows = y;
        level.add_scaled_rows(y_rows.data(), p.data(), ptrs.data(), count, len);
        for (int64_t j = 0; j < count; ++j) {
          const float want = DotScalar(a.data(), ptrs[static_cast<size_t>(j)], len);
          EXPECT_EQ(0, std::memcmp(&got[static_cast<size_t>(j)], &want, sizeof(float)))
              << level.name << " " << count << " " << len;
        }
        EXPECT_EQ(0, std::memcmp(y_rows.data(), y_one.data(), y_one.size() * sizeof(float)))
            << level.name << " " << count << " " << len;
      }
    }
  }
}

// DotRowsBlock / AddScaledRowsBlock (every SIMD level, the dispatched one
// and the scalar one): each (vector, row) result the bits of one scalar Dot / AddScaled
// sequence, for vector counts around the 4-vector block (leftover vectors),
// row counts around the 4-row tile (leftover rows) and lengths around the
// 16- and 64-float chunks (tails).
TEST(Dot, BlocksGiveTheBitsOfOneCallPerVectorAndRow) {
  std::mt19937 rng(33);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (int64_t num : {1, 3, 4, 5, 16, 17}) {
    for (int64_t count : {0, 1, 3, 4, 9, 130}) {
      for (int64_t len : {5, 16, 63, 64, 70, 512, 576}) {
        const auto fill = [&](std::vector<float>& v, int64_t size) {
          v.resize(static_cast<size_t>(size));
          for (auto& x : v) x = n(rng);
        };
        std::vector<std::vector<float>> a(static_cast<size_t>(num)), y(static_cast<size_t>(num)),
            rows(static_cast<size_t>(count));
        std::vector<float> p;
        fill(p, num * (count + 2));  // p_stride count + 2: the stride is honoured
        std::vector<const float*> a_ptrs, row_ptrs;
        for (auto& v : a) fill(v, len), a_ptrs.push_back(v.data());
        for (auto& v : y) fill(v, len);
        for (auto& v : rows) fill(v, len), row_ptrs.push_back(v.data());
        const int64_t stride = count + 1;
        std::vector<Level> levels = SimdLevels();
        levels.push_back(
            {"active", Dot, AddScaled, DotRows, AddScaledRows, DotRowsBlock, AddScaledRowsBlock});
        levels.push_back({"scalar", DotScalar, AddScaledScalar, nullptr, nullptr, DotRowsBlockScalar,
                          AddScaledRowsBlockScalar});
        for (const Level& level : levels) {
          std::vector<float> got(static_cast<size_t>(num * stride), -7.0f);
          std::vector<std::vector<float>> y_block = y;
          std::vector<float*> y_ptrs;
          for (auto& v : y_block) y_ptrs.push_back(v.data());
          level.dot_rows_block(a_ptrs.data(), num, row_ptrs.data(), count, len, got.data(), stride);
          level.add_scaled_rows_block(y_ptrs.data(), p.data(), count + 2, num, row_ptrs.data(), count, len);
          for (int64_t h = 0; h < num; ++h) {
            std::vector<float> y_one = y[static_cast<size_t>(h)];
            for (int64_t j = 0; j < count; ++j) {
              const float want =
                  DotScalar(a_ptrs[static_cast<size_t>(h)], row_ptrs[static_cast<size_t>(j)], len);
              EXPECT_EQ(0, std::memcmp(&got[static_cast<size_t>(h * stride + j)], &want, sizeof(float)))
                  << level.name << " " << num << " " << count << " " << len << " at " << h << "," << j;
              AddScaledScalar(y_one.data(), p[static_cast<size_t>(h * (count + 2) + j)],
                              row_ptrs[static_cast<size_t>(j)], len);
            }
            EXPECT_EQ(got[static_cast<size_t>(h * stride + count)], -7.0f);  // the stride's gap untouched
            EXPECT_EQ(0, std::memcmp(y_block[static_cast<size_t>(h)].data(), y_one.data(),
                                     y_one.size() * sizeof(float)))
                << level.name << " " << num << " " << count << " " << len << " at " << h;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace deepinfer::cpu
