// Dot and AddScaled: every ISA level gives the scalar bits (the order is the
// contract), and the scalar Dot is a dot product (double reference).
#include "backend/cpu/dot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/isa.h"

namespace deepinfer::cpu {
namespace {

TEST(Dot, Avx512GivesTheScalarBitsOnOddLengths) {
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
    std::vector<float> y_scalar = y, y_simd = y;
    AddScaledScalar(y_scalar.data(), 0.37f, a.data(), len);
    for (int64_t i = 0; i < len; ++i) {
      EXPECT_EQ(y_scalar[static_cast<size_t>(i)],
                y[static_cast<size_t>(i)] + 0.37f * a[static_cast<size_t>(i)]);
    }
    if (!CpuSupports(Isa::kAvx512)) continue;
    const float simd = DotAvx512(a.data(), b.data(), len);
    EXPECT_EQ(0, std::memcmp(&simd, &scalar, sizeof(float))) << len;
    AddScaledAvx512(y_simd.data(), 0.37f, a.data(), len);
    if (len > 0) {  // memcmp of an empty vector's null data() is undefined
      EXPECT_EQ(0, std::memcmp(y_simd.data(), y_scalar.data(), y_simd.size() * sizeof(float))) << len;
    }
  }
}

// DotRows / AddScaledRows: each row's bits as one Dot / AddScaled call, for
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
      std::vector<float> got(static_cast<size_t>(count));
      DotRows(a.data(), ptrs.data(), count, len, got.data());
      std::vector<float> y_rows = y, y_one = y;
      AddScaledRows(y_rows.data(), p.data(), ptrs.data(), count, len);
      for (int64_t j = 0; j < count; ++j) {
        const float want = DotScalar(a.data(), ptrs[static_cast<size_t>(j)], len);
        EXPECT_EQ(0, std::memcmp(&got[static_cast<size_t>(j)], &want, sizeof(float))) << count << " " << len;
        AddScaledScalar(y_one.data(), p[static_cast<size_t>(j)], ptrs[static_cast<size_t>(j)], len);
      }
      EXPECT_EQ(0, std::memcmp(y_rows.data(), y_one.data(), y_one.size() * sizeof(float)))
          << count << " " << len;
    }
  }
}

// DotRowsBlock / AddScaledRowsBlock (both the dispatched ISA and the scalar
// one): each (vector, row) result the bits of one scalar Dot / AddScaled
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
        for (const bool scalar : {false, true}) {
          std::vector<float> got(static_cast<size_t>(num * stride), -7.0f);
          std::vector<std::vector<float>> y_block = y;
          std::vector<float*> y_ptrs;
          for (auto& v : y_block) y_ptrs.push_back(v.data());
          if (scalar) {
            DotRowsBlockScalar(a_ptrs.data(), num, row_ptrs.data(), count, len, got.data(), stride);
            AddScaledRowsBlockScalar(y_ptrs.data(), p.data(), count + 2, num, row_ptrs.data(), count, len);
          } else {
            DotRowsBlock(a_ptrs.data(), num, row_ptrs.data(), count, len, got.data(), stride);
            AddScaledRowsBlock(y_ptrs.data(), p.data(), count + 2, num, row_ptrs.data(), count, len);
          }
          for (int64_t h = 0; h < num; ++h) {
            std::vector<float> y_one = y[static_cast<size_t>(h)];
            for (int64_t j = 0; j < count; ++j) {
              const float want =
                  DotScalar(a_ptrs[static_cast<size_t>(h)], row_ptrs[static_cast<size_t>(j)], len);
              EXPECT_EQ(0, std::memcmp(&got[static_cast<size_t>(h * stride + j)], &want, sizeof(float)))
                  << scalar << " " << num << " " << count << " " << len << " at " << h << "," << j;
              AddScaledScalar(y_one.data(), p[static_cast<size_t>(h * (count + 2) + j)],
                              row_ptrs[static_cast<size_t>(j)], len);
            }
            EXPECT_EQ(got[static_cast<size_t>(h * stride + count)], -7.0f);  // the stride's gap untouched
            EXPECT_EQ(0, std::memcmp(y_block[static_cast<size_t>(h)].data(), y_one.data(),
                                     y_one.size() * sizeof(float)))
                << scalar << " " << num << " " << count << " " << len << " at " << h;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace deepinfer::cpu
