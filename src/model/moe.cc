#include "model/moe.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "model/ops.h"

namespace deepinfer {

namespace {

// ops::TopK restricted to the indices with allowed[i] set: the allowed
// scores are gathered in index order, so ties still go to the lower index.
void AllowedTopK(const float* v, int64_t n, int64_t k, const std::vector<char>& allowed, int32_t* out) {
  std::vector<float> values;
  std::vector<int32_t> index;
  for (int64_t i = 0; i < n; ++i) {
    if (!allowed[static_cast<size_t>(i)]) continue;
    values.push_back(v[i]);
    index.push_back(static_cast<int32_t>(i));
  }
  ops::TopK(values.data(), static_cast<int64_t>(values.size()), k, out);
  for (int64_t j = 0; j < k; ++j) out[j] = index[static_cast<size_t>(out[j])];
}

}  // namespace

void RouteToken(const float* logits, const float* bias, const MoeConfig& m, int32_t* ids, float* weights,
                std::vector<float>& scratch) {
  const int64_t e = m.num_experts, k = m.experts_per_token;
  scratch.resize(static_cast<size_t>(2 * e));
  float* scores = scratch.data();
  float* choice = scratch.data() + e;
  if (m.sigmoid_scoring) {
    for (int64_t i = 0; i < e; ++i) scores[i] = 1.0f / (1.0f + std::exp(-logits[i]));
  } else {
    std::copy(logits, logits + e, scores);
    ops::Softmax(scores, e);
  }
  for (int64_t i = 0; i < e; ++i) choice[i] = scores[i] + (bias != nullptr ? bias[i] : 0.0f);

  std::vector<char> allowed;
  if (m.n_group > 1 && m.topk_group < m.n_group) {
    const int64_t per = e / m.n_group;
    std::vector<float> group_score(static_cast<size_t>(m.n_group));
    for (int64_t g = 0; g < m.n_group; ++g) {
      const float* c = choice + g * per;
      if (bias != nullptr) {  // DeepSeek-V3: sum of the group's two best
        int32_t top2[2] = {0, 0};
        ops::TopK(c, per, std::min<int64_t>(2, per), top2);
        group_score[static_cast<size_t>(g)] = c[top2[0]] + (per > 1 ? c[top2[1]] : 0.0f);
      } else {  // DeepSeek-V2: the group's best
        group_score[static_cast<size_t>(g)] = *std::max_element(c, c + per);
      }
    }
    std::vector<int32_t> groups(static_cast<size_t>(m.topk_group));
    ops::TopK(group_score.data(), m.n_group, m.topk_group, groups.data());
    allowed.assign(static_cast<size_t>(e), 0);
    for (int32_t g : groups) std::fill(allowed.begin() + g * per, allowed.begin() + (g + 1) * per, 1);
  }
  if (allowed.empty()) {
    ops::TopK(choice, e, k, ids);
  } else {
    AllowedTopK(choice, e, k, allowed, ids);
  }
  double sum = 0;
  for (int64_t j = 0; j < k; ++j) {
    weights[j] = scores[ids[j]];
    sum += weights[j];
  }
  const double norm = m.norm_topk_prob ? 1.0 / (sum + 1e-20) : 1.0;
  for (int64_t j = 0; j < k; ++j) {
    weights[j] = static_cast<float>(weights[j] * norm * m.routed_scaling_factor);
  }
}

Status BindMoeWeights(const WeightBinder& b, const ModelConfig& c, int64_t layer, const HfMoeNames& names,
                      MoeWeights& w) {
  const MoeConfig& m = c.moe;
  const int64_t h = c.hidden_size, ff = m.expert_ffn, ne = m.num_experts;
  w.experts.resize(static_cast<size_t>(ne));
  if (b.naming() == WeightNaming::kHf) {
    const std::string p = "model.layers." + std::to_string(layer) + "." + names.block;
    DI_ASSIGN_OR_RETURN(w.router, b.Matrix(p + "gate.weight", ne, h));
    if (m.score_correction_bias) {
      DI_ASSIGN_OR_RETURN(w.bias, b.Vector(p + "gate.e_score_correction_bias", ne, true));
    }
    for (int64_t e = 0; e < ne; ++e) {
      const std::string x = p + "experts." + std::to_string(e) + ".";
      DI_RETURN_IF_ERROR(BindSwiglu(b, x + names.gate + ".weight", x + names.up + ".weight",
                                    x + names.down + ".weight", h, ff, w.experts[static_cast<size_t>(e)]));
    }
    if (m.shared_ffn > 0) {
      const std::string s = p + (m.shared_expert_gate ? "shared_expert." : "shared_experts.");
      DI_RETURN_IF_ERROR(BindSwiglu(b, s + "gate_proj.weight", s + "up_proj.weight", s + "down_proj.weight",
                                    h, m.shared_ffn, w.shared));
    }
    if (m.shared_expert_gate) {
      DI_ASSIGN_OR_RETURN(w.shared_gate, b.Matrix(p + "shared_expert_gate.weight", 1, h));
    }
    return Status::Ok();
  }
  // GGUF (llama.cpp): experts stacked along the outermost dimension.
  const std::string p = "blk." + std::to_string(layer) + ".";
  DI_ASSIGN_OR_RETURN(w.router, b.Matrix(p + "ffn_gate_inp.weight", ne, h));
  if (m.score_correction_bias) {
    DI_ASSIGN_OR_RETURN(w.bias, b.Vector(p + "exp_probs_b.bias", ne, true));
  }
  DI_ASSIGN_OR_RETURN(TensorView gate, b.Tensor(p + "ffn_gate_exps.weight", {ne, ff, h}));
  DI_ASSIGN_OR_RETURN(TensorView up, b.Tensor(p + "ffn_up_exps.weight", {ne, ff, h}));
  DI_ASSIGN_OR_RETURN(TensorView down, b.Tensor(p + "ffn_down_exps.weight", {ne, h, ff}));
  for (int64_t e = 0; e < ne; ++e) {
    SwigluWeights& x = w.experts[static_cast<size_t>(e)];
    x.gate = SliceOuter(gate, e);
    x.up = SliceOuter(up, e);
    x.down = SliceOuter(down, e);
  }
  if (m.shared_ffn > 0) {
    DI_RETURN_IF_ERROR(BindSwiglu(b, p + "ffn_gate_shexp.weight", p + "ffn_up_shexp.weight",
                                  p + "ffn_down_shexp.weight", h, m.shared_ffn, w.shared));
  }
  if (m.shared_expert_gate) {
    // llama.cpp stores the [1, hidden] gate as a 1-D [hidden] tensor.
    DI_ASSIGN_OR_RETURN(TensorView g, b.Tensor(p + "ffn_gate_inp_shexp.weight", {h}));
    g.shape = {1, h};
    w.shared_gate = g;
  }
  return Status::Ok();
}

void MoeFeedForward::VisitMatrices(const MatrixVisitor& visit) {
  visit(w_.router);
  for (SwigluWeights& e : w_.experts) VisitSwiglu(e, visit);
  VisitSwiglu(w_.shared, visit);
  if (w_.shared_gate.data != nullptr) visit(w_.shared_gate);
}

MoeFeedForward::MoeFeedForward(const ModelConfig& c, MoeWeights w)
    : moe_(c.moe),
      hidden_(c.hidden_size),
      w_(std::move(w)),
      load_(static_cast<size_t>(c.moe.num_experts), 0) {}

namespace {

void Activate(const SwigluWeights& w, float* gate, const float* up, int64_t n) {
  if (w.gelu_tanh) {
    ops::GeluTanhMul(gate, up, n);
  } else {
    ops::SiluMul(gate, up, n);
  }
}

}  // namespace

// Three pool dispatches per layer, whatever the number of active experts:
// (1) the router with the shared expert's gate / up (all read xn), (2) every
// active expert's gate and up over its tokens, (3) every down projection.
// Each matrix sees the same rows and token count as a MatMul of its own, so
// the results are those of running the experts one by one.
void MoeFeedForward::Forward(const float* xn, int64_t n, ThreadPool& pool, SwigluScratch& swiglu,
                             float* out) {
  const int64_t ne = moe_.num_experts, k = moe_.experts_per_token, h = hidden_;
  const int64_t ff = w_.experts.empty() ? 0 : w_.experts[0].ffn(), sff = w_.shared.ffn();
  const bool gated_shared = w_.shared_gate.data != nullptr;
  logits_.resize(static_cast<size_t>(n * ne));
  shared_gate_.resize(static_cast<size_t>(n * sff));
  shared_up_.resize(static_cast<size_t>(n * sff));
  gate_logit_.resize(static_cast<size_t>(gated_shared ? n : 0));
  projections_.clear();
  projections_.push_back({&w_.router, xn, n, logits_.data()});
  if (sff > 0) {
    projections_.push_back({&w_.shared.gate, xn, n, shared_gate_.data()});
    projections_.push_back({&w_.shared.up, xn, n, shared_up_.data()});
  }
  if (gated_shared) projections_.push_back({&w_.shared_gate, xn, n, gate_logit_.data()});
  ops::GroupedMatMul(projections_, pool);

  ids_.resize(static_cast<size_t>(n * k));
  weights_.resize(static_cast<size_t>(n * k));
  for (int64_t t = 0; t < n; ++t) {
    RouteToken(&logits_[static_cast<size_t>(t * ne)], w_.bias.empty() ? nullptr : w_.bias.data(), moe_,
               &ids_[static_cast<size_t>(t * k)], &weights_[static_cast<size_t>(t * k)], route_scratch_);
  }
  // Group the (token, rank) slots by expert, tokens ascending within an
  // expert: slot s = t * k + j is row row_of_[s] of the expert-ordered buffers.
  count_.assign(static_cast<size_t>(ne) + 1, 0);
  for (int32_t id : ids_) ++count_[static_cast<size_t>(id) + 1];
  for (int64_t e = 0; e < ne; ++e) {
    count_[static_cast<size_t>(e) + 1] += count_[static_cast<size_t>(e)];
    load_[static_cast<size_t>(e)] += count_[static_cast<size_t>(e) + 1] - count_[static_cast<size_t>(e)];
  }
  fill_.assign(count_.begin(), count_.end() - 1);
  row_of_.resize(static_cast<size_t>(n * k));
  gathered_.resize(static_cast<size_t>(n * k * h));
  for (int64_t s = 0; s < n * k; ++s) {
    const int64_t row = fill_[static_cast<size_t>(ids_[static_cast<size_t>(s)])]++;
    row_of_[static_cast<size_t>(s)] = row;
    std::memcpy(&gathered_[static_cast<size_t>(row * h)], xn + (s / k) * h, sizeof(float) * h);
  }

  gate_.resize(static_cast<size_t>(n * k * ff));
  up_.resize(static_cast<size_t>(n * k * ff));
  projections_.clear();
  for (int64_t e = 0; e < ne; ++e) {
    const int64_t begin = count_[static_cast<size_t>(e)], m = count_[static_cast<size_t>(e) + 1] - begin;
    if (m == 0) continue;
    const SwigluWeights& x = w_.experts[static_cast<size_t>(e)];
    const float* in = &gathered_[static_cast<size_t>(begin * h)];
    projections_.push_back({&x.gate, in, m, &gate_[static_cast<size_t>(begin * ff)]});
    projections_.push_back({&x.up, in, m, &up_[static_cast<size_t>(begin * ff)]});
  }
  ops::GroupedMatMul(projections_, pool);

  expert_out_.resize(static_cast<size_t>(n * k * h));
  shared_out_.resize(static_cast<size_t>(n * h));
  projections_.clear();
  for (int64_t e = 0; e < ne; ++e) {
    const int64_t begin = count_[static_cast<size_t>(e)], m = count_[static_cast<size_t>(e) + 1] - begin;
    if (m == 0) continue;
    const SwigluWeights& x = w_.experts[static_cast<size_t>(e)];
    float* g = &gate_[static_cast<size_t>(begin * ff)];
    Activate(x, g, &up_[static_cast<size_t>(begin * ff)], m * ff);
    projections_.push_back({&x.down, g, m, &expert_out_[static_cast<size_t>(begin * h)]});
  }
  if (sff > 0) {
    Activate(w_.shared, shared_gate_.data(), shared_up_.data(), n * sff);
    projections_.push_back({&w_.shared.down, shared_gate_.data(), n, shared_out_.data()});
  }
  ops::GroupedMatMul(projections_, pool);

  // Combine in rank order per token: the sum never depends on the batch.
  for (int64_t t = 0; t < n; ++t) {
    float* o = out + t * h;
    std::fill(o, o + h, 0.0f);
    for (int64_t j = 0; j < k; ++j) {
      const float wgt = weights_[static_cast<size_t>(t * k + j)];
      const float* y = &expert_out_[static_cast<size_t>(row_of_[static_cast<size_t>(t * k + j)] * h)];
      for (int64_t d = 0; d < h; ++d) o[d] += wgt * y[d];
    }
  }
  if (sff > 0) {
    for (int64_t t = 0; t < n; ++t) {
      const float g = gated_shared ? 1.0f / (1.0f + std::exp(-gate_logit_[static_cast<size_t>(t)])) : 1.0f;
      for (int64_t d = 0; d < h; ++d) out[t * h + d] += g * shared_out_[static_cast<size_t>(t * h + d)];
    }
  }
}

}  // namespace deepinfer
