// TopK against a full stable sort by (score desc, id asc).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "backend/cpu/topk.h"

namespace deepinfer::cpu {
namespace {

std::vector<int32_t> Expected(const std::vector<float>& s, int64_t k) {
  std::vector<int32_t> ids(s.size());
  std::iota(ids.begin(), ids.end(), 0);
  // Stable sort keeps lower ids first among equal scores; NaN last.
  std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
    if (std::isnan(s[a]) || std::isnan(s[b])) return !std::isnan(s[a]) && std::isnan(s[b]);
    return s[a] > s[b];
  });
  ids.resize(k);
  return ids;
}

TEST(TopK, MatchesSortWithTiesToLowerId) {
  std::mt19937 rng(13);
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t n = std::uniform_int_distribution<int64_t>(1, 300)(rng);
    const int64_t k =
        std::uniform_int_distribution<int64_t>(0, std::min<int64_t>(n, trial % 2 ? 8 : 40))(rng);
    std::vector<float> s(n);
    // Few distinct values: many ties.
    for (auto& v : s) v = static_cast<float>(std::uniform_int_distribution<int>(-3, 3)(rng));
    if (trial % 7 == 0) s[n / 2] = NAN;
    if (trial % 11 == 0) s[0] = -INFINITY;
    std::vector<int32_t> ids(k);
    std::vector<float> vals(k);
    TopK(s.data(), n, k, ids.data(), vals.data());
    ASSERT_EQ(ids, Expected(s, k)) << "trial " << trial;
    for (int64_t j = 0; j < k; ++j) {
      if (!std::isnan(vals[j])) ASSERT_EQ(vals[j], s[ids[j]]);
    }
  }
}

TEST(TopK, AllEqualPicksLowestIds) {
  std::vector<float> s(10, 0.5f);
  int32_t ids[4];
  TopK(s.data(), 10, 4, ids, nullptr);
  EXPECT_EQ(std::vector<int32_t>(ids, ids + 4), (std::vector<int32_t>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace deepinfer::cpu
