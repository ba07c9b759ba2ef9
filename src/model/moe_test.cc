// MoE routing against hand-computed cases (softmax / sigmoid + bias, group
// limits, renormalization, scaling) and the MoE block against a naive
// per-token double-precision evaluation, including batch invariance.
#include "model/moe.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace deepinfer {
namespace {

MoeConfig Softmax(int64_t experts, int64_t k) {
  MoeConfig m;
  m.num_experts = experts;
  m.experts_per_token = k;
  m.expert_ffn = 4;
  return m;
}

TEST(MoeRoutingTest, SoftmaxTopKWithoutRenormalization) {
  const MoeConfig m = Softmax(4, 2);
  const float logits[4] = {0.0f, 2.0f, 1.0f, -1.0f};
  int32_t ids[2];
  float w[2];
  std::vector<float> scratch;
  RouteToken(logits, nullptr, m, ids, w, scratch);
  const double z = 1 + std::exp(2.0) + std::exp(1.0) + std::exp(-1.0);
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(ids[1], 2);
  EXPECT_NEAR(w[0], std::exp(2.0) / z, 1e-6);
  EXPECT_NEAR(w[1], std::exp(1.0) / z, 1e-6);
}

TEST(MoeRoutingTest, RenormalizedAndScaled) {
  MoeConfig m = Softmax(4, 2);
  m.norm_topk_prob = true;
  m.routed_scaling_factor = 2.5;
  const float logits[4] = {0.0f, 2.0f, 1.0f, -1.0f};
  int32_t ids[2];
  float w[2];
  std::vector<float> scratch;
  RouteToken(logits, nullptr, m, ids, w, scratch);
  const double a = std::exp(2.0), b = std::exp(1.0);
  EXPECT_NEAR(w[0], 2.5 * a / (a + b), 1e-6);
  EXPECT_NEAR(w[1], 2.5 * b / (a + b), 1e-6);
}

TEST(MoeRoutingTest, TiesGoToTheLowerExpertId) {
  const MoeConfig m = Softmax(4, 2);
  const float logits[4] = {1.0f, 3.0f, 1.0f, 3.0f};
  int32_t ids[2];
  float w[2];
  std::vector<float> scratch;
  RouteToken(logits, nullptr, m, ids, w, scratch);
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(ids[1], 3);
}

// DeepSeek-V3 style: sigmoid scores, a bias that changes the choice but not
// the weights, groups ranked by the sum of their two best biased scores.
TEST(MoeRoutingTest, SigmoidBiasAndGroupLimit) {
  MoeConfig m = Softmax(8, 2);
  m.sigmoid_scoring = true;
  m.n_group = 4;  // groups {0,1} {2,3} {4,5} {6,7}
  m.topk_group = 2;
  m.norm_topk_prob = true;
  m.routed_scaling_factor = 1.5;
  m.score_correction_bias = true;
  // Scores s = sigmoid(logit). Expert 0 alone is best, but its group {0,1}
  // sums lower than groups {2,3} and {4,5}.
  const float logits[8] = {3.0f, -4.0f, 1.0f, 1.0f, 0.5f, 1.2f, -3.0f, -3.0f};
  const float bias[8] = {0, 0, 0, 0, 0.4f, 0, 0, 0};
  int32_t ids[2];
  float w[2];
  std::vector<float> scratch;
  RouteToken(logits, bias, m, ids, w, scratch);
  auto sig = [](double x) { return 1 / (1 + std::exp(-x)); };
  // Group sums: {0,1} .953+.018=.971, {2,3} .731*2=1.462, {4,5} (.622+.4)+.769=1.791, {6,7} tiny.
  // Allowed: {2,3,4,5}; choice values: 2:.731 3:.731 4:1.022 5:.769 -> experts 4, 5.
  EXPECT_EQ(ids[0], 4);
  EXPECT_EQ(ids[1], 5);
  const double a = sig(0.5), b = sig(1.2);  // weights use the unbiased scores
  EXPECT_NEAR(w[0], 1.5 * a / (a + b), 1e-6);
  EXPECT_NEAR(w[1], 1.5 * b / (a + b), 1e-6);
}

// DeepSeek-V2 style: softmax, groups ranked by their best score.
TEST(MoeRoutingTest, GroupLimitedGreedyByGroupMax) {
  MoeConfig m = Softmax(6, 2);
  m.n_group = 3;  // {0,1} {2,3} {4,5}
  m.topk_group = 1;
  const float logits[6] = {2.0f, 1.9f, 2.1f, -5.0f, 0.0f, 0.0f};
  int32_t ids[2];
  float w[2];
  std::vector<float> scratch;
  RouteToken(logits, nullptr, m, ids, w, scratch);
  // Best group by max: {2,3} (2.1). Its members are the only candidates.
  EXPECT_EQ(ids[0], 2);
  EXPECT_EQ(ids[1], 3);
}

// The block against a per-token double evaluation; and batch invariance.
TEST(MoeFeedForwardTest, MatchesNaiveEvaluationAndIsBatchInvariant) {
  const int64_t h = 16, ff = 8, ne = 6, k = 2, sff = 12;
  ModelConfig c;
  c.hidden_size = h;
  c.moe = Softmax(ne, k);
  c.moe.expert_ffn = ff;
  c.moe.norm_topk_prob = true;
  c.moe.shared_ffn = sff;
  c.moe.shared_expert_gate = true;
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 0.4f);
  InMemoryWeightStore store(WeightNaming::kHf);
  auto rand = [&](int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = nd(rng);
    return v;
  };
  store.AddF32("router", {ne, h}, rand(ne * h));
  for (int64_t e = 0; e < ne; ++e) {
    const std::string p = "e" + std::to_string(e);
    store.AddF32(p + "g", {ff, h}, rand(ff * h));
    store.AddF32(p + "u", {ff, h}, rand(ff * h));
    store.AddF32(p + "d", {h, ff}, rand(h * ff));
  }
  store.AddF32("sg", {sff, h}, rand(sff * h));
  store.AddF32("su", {sff, h}, rand(sff * h));
  store.AddF32("sd", {h, sff}, rand(h * sff));
  store.AddF32("gate", {1, h}, rand(h));
  const WeightBinder b(store);
  MoeWeights w;
  w.router = *store.Find("router");
  w.experts.resize(ne);
  for (int64_t e = 0; e < ne; ++e) {
    const std::string p = "e" + std::to_string(e);
    ASSERT_TRUE(BindSwiglu(b, p + "g", p + "u", p + "d", h, ff, w.experts[e]).ok());
  }
  ASSERT_TRUE(BindSwiglu(b, "sg", "su", "sd", h, sff, w.shared).ok());
  w.shared_gate = *store.Find("gate");

  auto dense = [&](const std::string& g, const std::string& u, const std::string& d, int64_t f,
                   const float* x) {
    auto mat = [&](const std::string& n) { return static_cast<const float*>(store.Find(n)->data); };
    std::vector<double> a(static_cast<size_t>(f)), y(static_cast<size_t>(h), 0.0);
    for (int64_t i = 0; i < f; ++i) {
      double gv = 0, uv = 0;
      for (int64_t j = 0; j < h; ++j) {
        gv += double(mat(g)[i * h + j]) * x[j];
        uv += double(mat(u)[i * h + j]) * x[j];
      }
      a[i] = gv / (1 + std::exp(-gv)) * uv;
    }
    for (int64_t r = 0; r < h; ++r) {
      for (int64_t i = 0; i < f; ++i) y[r] += double(mat(d)[r * f + i]) * a[i];
    }
    return y;
  };

  const int64_t n = 9;
  const std::vector<float> x = rand(n * h);
  MoeFeedForward moe(c, w);
  ThreadPool pool(2);
  std::vector<float> out(n * h);
  SwigluScratch scratch;
  moe.Forward(x.data(), n, pool, scratch, out.data());

  int64_t routed = 0;
  for (int64_t t = 0; t < n; ++t) {
    const float* xt = &x[t * h];
    std::vector<double> logit(ne);
    for (int64_t e = 0; e < ne; ++e) {
      for (int64_t j = 0; j < h; ++j) {
        logit[e] += double(static_cast<const float*>(w.router.data)[e * h + j]) * xt[j];
      }
    }
    std::vector<int> idx(ne);
    for (int e = 0; e < ne; ++e) idx[e] = e;
    std::stable_sort(idx.begin(), idx.end(), [&](int a, int bb) { return logit[a] > logit[bb]; });
    const double wa = std::exp(logit[idx[0]]), wb = std::exp(logit[idx[1]]);
    std::vector<double> ref(h, 0.0);
    const auto ya = dense("e" + std::to_string(idx[0]) + "g", "e" + std::to_string(idx[0]) + "u",
                          "e" + std::to_string(idx[0]) + "d", ff, xt);
    const auto yb = dense("e" + std::to_string(idx[1]) + "g", "e" + std::to_string(idx[1]) + "u",
                          "e" + std::to_string(idx[1]) + "d", ff, xt);
    double gl = 0;
    for (int64_t j = 0; j < h; ++j) gl += double(static_cast<const float*>(w.shared_gate.data)[j]) * xt[j];
    const auto ys = dense("sg", "su", "sd", sff, xt);
    for (int64_t d = 0; d < h; ++d) {
      ref[d] = (wa * ya[d] + wb * yb[d]) / (wa + wb) + ys[d] / (1 + std::exp(-gl));
      EXPECT_NEAR(out[t * h + d], ref[d], 1e-4 * (1 + std::abs(ref[d]))) << "token " << t << " dim " << d;
    }
    routed += k;
  }
  int64_t total = 0;
  for (int64_t l : moe.expert_load()) total += l;
  EXPECT_EQ(total, routed);

  // Each token alone gives bit-identical results.
  for (int64_t t = 0; t < n; ++t) {
    std::vector<float> one(h);
    moe.Forward(&x[t * h], 1, pool, scratch, one.data());
    for (int64_t d = 0; d < h; ++d) ASSERT_EQ(one[d], out[t * h + d]) << "token " << t;
  }
}

}  // namespace
}  // namespace deepinfer
