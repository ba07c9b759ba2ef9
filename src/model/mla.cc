#include "model/mla.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/ops.h"
#include "tensor/dequant.h"

namespace deepinfer {

namespace {

double YarnMscale(double scale, double mscale) {
  return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

// The dimension pair index whose wavelength makes `rotations` turns over `max_pos`.
double YarnCorrectionDim(double rotations, double dim, double base, double max_pos) {
  return dim * std::log(max_pos / (rotations * 2 * M_PI)) / (2 * std::log(base));
}

}  // namespace

StatusOr<MlaRope> MlaRope::Create(const ModelConfig& c) {
  const int64_t d = c.mla.qk_rope_head_dim;
  if (d <= 0 || d % 2 != 0) {
    return InvalidArgument("model config: qk_rope_head_dim (" + std::to_string(d) +
                           ") must be positive and even");
  }
  MlaRope r;
  r.inv_freq_.resize(static_cast<size_t>(d / 2));
  for (int64_t i = 0; i < d / 2; ++i) {
    r.inv_freq_[static_cast<size_t>(i)] =
        std::pow(c.rope_theta, -2.0 * static_cast<double>(i) / static_cast<double>(d));
  }
  r.softmax_scale_ = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.mla.qk_nope_head_dim + d)));
  const RopeScaling& s = c.rope_scaling;
  if (s.type == "yarn") {
    const double f = s.factor;
    double low = std::floor(YarnCorrectionDim(c.yarn.beta_fast, static_cast<double>(d), c.rope_theta,
                                              static_cast<double>(s.original_max_position)));
    double high = std::ceil(YarnCorrectionDim(c.yarn.beta_slow, static_cast<double>(d), c.rope_theta,
                                              static_cast<double>(s.original_max_position)));
    low = std::max(low, 0.0);
    high = std::min(high, static_cast<double>(d - 1));
    if (low == high) high += 0.001;  // avoid a zero-width ramp
    for (int64_t i = 0; i < d / 2; ++i) {
      const double ramp = std::clamp((static_cast<double>(i) - low) / (high - low), 0.0, 1.0);
      const double extrapolation = 1.0 - ramp;  // high-frequency pairs keep their frequency
      double& inv = r.inv_freq_[static_cast<size_t>(i)];
      inv = (inv / f) * (1.0 - extrapolation) + inv * extrapolation;
    }
    r.cos_sin_scale_ = YarnMscale(f, c.yarn.mscale) / YarnMscale(f, c.yarn.mscale_all_dim);
    if (c.yarn.mscale_all_dim != 0) {
      const double m = YarnMscale(f, c.yarn.mscale_all_dim);
      r.softmax_scale_ = static_cast<float>(r.softmax_scale_ * m * m);
    }
  } else if (!s.type.empty()) {
    return Unimplemented("MLA: rope scaling type '" + s.type + "' is not supported (none or yarn)");
  }
  return r;
}

void MlaRope::Apply(float* x, int64_t n_heads, int64_t stride, int64_t pos) const {
  const int64_t half = static_cast<int64_t>(inv_freq_.size());
  for (int64_t i = 0; i < half; ++i) {
    const double angle = static_cast<double>(pos) * inv_freq_[static_cast<size_t>(i)];
    const float cs = static_cast<float>(std::cos(angle) * cos_sin_scale_);
    const float sn = static_cast<float>(std::sin(angle) * cos_sin_scale_);
    for (int64_t h = 0; h < n_heads; ++h) {
      float* p = x + h * stride + 2 * i;
      const float a = p[0], b = p[1];
      p[0] = a * cs - b * sn;
      p[1] = b * cs + a * sn;
    }
  }
}

namespace {

// Rows of `t` (any numeric dtype) as f32.
std::vector<float> DequantizeAll(const TensorView& t) {
  const int64_t cols = t.cols(), rows = t.rows(), row_bytes = RowBytes(t.dtype, cols);
  std::vector<float> out(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    DequantizeRow(t.dtype, static_cast<const uint8_t*>(t.data) + r * row_bytes,
                  &out[static_cast<size_t>(r * cols)], cols);
  }
  return out;
}

// A view of f32 `values` (owned elsewhere) as [rows, cols].
TensorView F32View(const std::string& name, const float* values, int64_t rows, int64_t cols) {
  TensorView v;
  v.name = name;
  v.dtype = DType::kF32;
  v.shape = {rows, cols};
  v.data = values;
  v.nbytes = rows * cols * static_cast<int64_t>(sizeof(float));
  return v;
}

// True for the types the absorbed attention reads without a copy.
bool ReadInPlace(DType t) { return t == DType::kF32 || t == DType::kQ8_0 || t == DType::kQ4_0; }

// W_uk^T [heads * lora, nope] and W_uv [heads * v, lora] (MlaWeights): the
// GGUF attn_k_b / attn_v_b as they are, or f32 copies from kv_b_proj (HF,
// legacy GGUF; per head nope rows of W_uk then v rows of W_uv) or from split
// tensors of another type.
Status BindKvUpProjection(const WeightBinder& b, const ModelConfig& c, const std::string& p, bool hf,
                          MlaWeights& w) {
  const MlaConfig& m = c.mla;
  const int64_t nh = c.num_heads, nope = m.qk_nope_head_dim, vd = m.v_head_dim, lora = m.kv_lora_rank;
  const std::string kv_b = p + (hf ? "kv_b_proj" : "attn_kv_b") + ".weight";
  auto owned = std::make_shared<std::vector<float>>();
  if (hf || b.Find(kv_b) != nullptr) {
    DI_ASSIGN_OR_RETURN(TensorView t, b.Matrix(kv_b, nh * (nope + vd), lora));
    const std::vector<float> kv = DequantizeAll(t);
    owned->assign(static_cast<size_t>(nh * (nope + vd) * lora), 0.0f);
    float* uk_t = owned->data();
    float* uv = owned->data() + nh * lora * nope;
    for (int64_t h = 0; h < nh; ++h) {
      const float* head = &kv[static_cast<size_t>(h * (nope + vd) * lora)];
      for (int64_t d = 0; d < nope; ++d) {
        for (int64_t r = 0; r < lora; ++r) uk_t[(h * lora + r) * nope + d] = head[d * lora + r];
      }
      std::copy(head + nope * lora, head + (nope + vd) * lora, uv + h * vd * lora);
    }
    w.w_uk_t = F32View(kv_b + " (W_uk^T)", uk_t, nh * lora, nope);
    w.w_uv = F32View(kv_b + " (W_uv)", uv, nh * vd, lora);
    w.owned = std::move(owned);
    return Status::Ok();
  }
  DI_ASSIGN_OR_RETURN(TensorView kb, b.Tensor(p + "attn_k_b.weight", {nh, lora, nope}));
  DI_ASSIGN_OR_RETURN(TensorView vb, b.Tensor(p + "attn_v_b.weight", {nh, vd, lora}));
  kb.shape = {nh * lora, nope};
  vb.shape = {nh * vd, lora};
  if (ReadInPlace(kb.dtype) && ReadInPlace(vb.dtype)) {
    w.w_uk_t = kb;
    w.w_uv = vb;
    return Status::Ok();
  }
  const std::vector<float> k = DequantizeAll(kb), v = DequantizeAll(vb);
  owned->insert(owned->end(), k.begin(), k.end());
  owned->insert(owned->end(), v.begin(), v.end());
  w.w_uk_t = F32View(kb.name, owned->data(), nh * lora, nope);
  w.w_uv = F32View(vb.name, owned->data() + k.size(), nh * vd, lora);
  w.owned = std::move(owned);
  return Status::Ok();
}

// Rows [h * rows, (h + 1) * rows) of w for each of nh heads, as matrices.
std::vector<ops::Matrix> HeadMatrices(const TensorView& w, int64_t nh, int64_t rows) {
  std::vector<ops::Matrix> heads;
  for (int64_t h = 0; h < nh; ++h) {
    TensorView v = RowsOf(w, h * rows, rows);
    v.name = w.name + " (head " + std::to_string(h) + ")";
    heads.emplace_back(std::move(v));
  }
  return heads;
}

}  // namespace

Status BindMlaWeights(const WeightBinder& b, const ModelConfig& c, int64_t layer, MlaWeights& w) {
  const MlaConfig& m = c.mla;
  const int64_t h = c.hidden_size, nh = c.num_heads;
  const int64_t qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
  const bool hf = b.naming() == WeightNaming::kHf;
  const std::string p =
      hf ? "model.layers." + std::to_string(layer) + ".self_attn." : "blk." + std::to_string(layer) + ".";
  auto name = [&](const char* hf_name, const char* gguf_name) {
    return p + (hf ? hf_name : gguf_name) + ".weight";
  };
  if (m.q_lora_rank > 0) {
    DI_ASSIGN_OR_RETURN(w.q_a, b.Matrix(name("q_a_proj", "attn_q_a"), m.q_lora_rank, h));
    DI_ASSIGN_OR_RETURN(w.q_a_norm, b.Vector(name("q_a_layernorm", "attn_q_a_norm"), m.q_lora_rank, true));
    DI_ASSIGN_OR_RETURN(w.q_b, b.Matrix(name("q_b_proj", "attn_q_b"), nh * qk, m.q_lora_rank));
  } else {
    DI_ASSIGN_OR_RETURN(w.q, b.Matrix(name("q_proj", "attn_q"), nh * qk, h));
  }
  DI_ASSIGN_OR_RETURN(
      w.kv_a, b.Matrix(name("kv_a_proj_with_mqa", "attn_kv_a_mqa"), m.kv_lora_rank + m.qk_rope_head_dim, h));
  DI_ASSIGN_OR_RETURN(w.kv_a_norm, b.Vector(name("kv_a_layernorm", "attn_kv_a_norm"), m.kv_lora_rank, true));
  DI_RETURN_IF_ERROR(BindKvUpProjection(b, c, p, hf, w));
  w.uk_heads = HeadMatrices(w.w_uk_t, nh, m.kv_lora_rank);
  w.uv_heads = HeadMatrices(w.w_uv, nh, m.v_head_dim);
  DI_ASSIGN_OR_RETURN(w.o, b.Matrix(name("o_proj", "attn_output"), h, nh * m.v_head_dim));
  return Status::Ok();
}

void MlaAttention::Forward(const ForwardBatch& batch, const TokenPlan& plan, const float* xn, KvCache& kv,
                           int64_t kv_layer, ThreadPool& pool, float* out) {
  const MlaConfig& m = c_.mla;
  const int64_t n = plan.num_tokens(), nh = c_.num_heads;
  const int64_t nope = m.qk_nope_head_dim, rd = m.qk_rope_head_dim, vd = m.v_head_dim, lora = m.kv_lora_rank;
  const int64_t qk = nope + rd, kvw = lora + rd;
  q_.resize(static_cast<size_t>(n * nh * qk));
  kva_.resize(static_cast<size_t>(n * kvw));
  // The query's first projection and kv_a both read xn: one shared call.
  if (m.q_lora_rank > 0) {
    qa_.resize(static_cast<size_t>(n * m.q_lora_rank));
    ops::SharedInputMatMul({{&w_.q_a, nullptr, qa_.data()}, {&w_.kv_a, nullptr, kva_.data()}}, xn, n, pool);
    for (int64_t t = 0; t < n; ++t) {
      float* r = &qa_[static_cast<size_t>(t * m.q_lora_rank)];
      ops::RmsNorm(r, w_.q_a_norm.data(), m.q_lora_rank, c_.rms_norm_eps, r);
    }
    ops::MatMul(w_.q_b, qa_.data(), n, nullptr, q_.data(), pool);
  } else {
    ops::SharedInputMatMul({{&w_.q, nullptr, q_.data()}, {&w_.kv_a, nullptr, kva_.data()}}, xn, n, pool);
  }
  const int64_t bs = kv.block_size();
  const int64_t cache_layer = CacheLayerOf(batch, kv_layer);
  for (int64_t t = 0; t < n; ++t) {
    float* r = &kva_[static_cast<size_t>(t * kvw)];
    const int64_t pos = plan.positions[static_cast<size_t>(t)];
    ops::RmsNorm(r, w_.kv_a_norm.data(), lora, c_.rms_norm_eps, r);
    rope_->Apply(r + lora, 1, rd, pos);
    rope_->Apply(&q_[static_cast<size_t>(t * nh * qk + nope)], nh, qk, pos);
    const int32_t block = BlockTableOf(batch, plan, t, kv_layer)[static_cast<size_t>(pos / bs)];
    kv.WriteK(cache_layer, block, pos % bs, r);
  }
  attn_.resize(static_cast<size_t>(n * nh * vd));
  const ops::MlaAttentionParams p{.layer = cache_layer,
                                  .num_heads = nh,
                                  .nope = nope,
                                  .rope = rd,
                                  .v_dim = vd,
                                  .lora = lora,
                                  .window = window_,
                                  .scale = rope_->softmax_scale(),
                                  .absorb = absorb_};
  std::vector<const std::vector<int32_t>*> tables(static_cast<size_t>(n));
  for (int64_t t = 0; t < n; ++t) tables[static_cast<size_t>(t)] = &BlockTableOf(batch, plan, t, kv_layer);
  ops::MlaAttention(q_.data(), n, plan.positions.data(), tables, kv, w_.w_uk_t, w_.w_uv, w_.uk_heads,
                    w_.uv_heads, p, pool, attn_.data());
  ops::MatMul(w_.o, attn_.data(), n, nullptr, out, pool);
}

}  // namespace deepinfer
