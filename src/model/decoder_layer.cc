#include "model/decoder_layer.h"

#include <algorithm>

#include "model/ops.h"

namespace deepinfer {

namespace {

class GqaDecoderLayer : public DecoderLayer {
 public:
  GqaDecoderLayer(const ModelConfig& c, std::shared_ptr<const Rope> rope, int64_t window)
      : config_(c), rope_(std::move(rope)), window_(window) {}

  void Forward(const ForwardBatch& batch, const TokenPlan& plan, KvCache& kv, int64_t kv_layer,
               ThreadPool& pool, LayerScratch& s, float* x) override {
    PreNormResidualForward(config_, attn_norm, ffn_norm, *ffn, plan.num_tokens(), pool, s, x,
                           [&](const float* xn, float* proj) {
                             GqaAttentionForward(config_, attn, *rope_, kv_layer, window_, batch, plan, xn,
                                                 kv, pool, s.attention, proj);
                           });
  }
  void ForwardKeeping(const ForwardBatch& batch, const TokenPlan& plan, KvCache& kv, int64_t kv_layer,
                      ThreadPool& pool, LayerScratch& s, float* x,
                      const std::vector<int64_t>& keep) override {
    PreNormResidualForward(
        config_, attn_norm, ffn_norm, *ffn, plan.num_tokens(), pool, s, x,
        [&](const float* xn, float* proj) {
          GqaAttentionForward(config_, attn, *rope_, kv_layer, window_, batch, plan, xn, kv, pool,
                              s.attention, proj, &keep);
        },
        &keep);
  }
  void VisitMatrices(const MatrixVisitor& visit) override {
    for (ops::Matrix* t : {&attn.q, &attn.k, &attn.v, &attn.o}) visit(*t);
    ffn->VisitMatrices(visit);
  }

  std::vector<float> attn_norm, ffn_norm;  // f32 [hidden]
  GqaAttentionWeights attn;
  std::unique_ptr<FeedForward> ffn;

 private:
  const ModelConfig config_;
  std::shared_ptr<const Rope> rope_;
  int64_t window_;
};

}  // namespace

void PreNormResidualForward(const ModelConfig& c, const std::vector<float>& attn_norm,
                            const std::vector<float>& ffn_norm, FeedForward& ffn, int64_t n, ThreadPool& pool,
                            LayerScratch& s, float* x,
                            const std::function<void(const float* xn, float* proj)>& attend,
                            const std::vector<int64_t>* keep) {
  const int64_t h = c.hidden_size;
  s.xn.resize(static_cast<size_t>(n * h));
  s.proj.resize(static_cast<size_t>(n * h));
  float* xn = s.xn.data();
  float* proj = s.proj.data();
  for (int64_t t = 0; t < n; ++t) ops::RmsNorm(x + t * h, attn_norm.data(), h, c.rms_norm_eps, xn + t * h);
  attend(xn, proj);
  if (keep != nullptr) {
    CompactRows(x, h, *keep);
    n = static_cast<int64_t>(keep->size());
  }
  for (int64_t i = 0; i < n * h; ++i) x[i] += proj[i];
  for (int64_t t = 0; t < n; ++t) ops::RmsNorm(x + t * h, ffn_norm.data(), h, c.rms_norm_eps, xn + t * h);
  ffn.Forward(xn, n, pool, s.ffn, proj);
  for (int64_t i = 0; i < n * h; ++i) x[i] += proj[i];
}

void CompactRows(float* x, int64_t width, const std::vector<int64_t>& keep) {
  for (size_t i = 0; i < keep.size(); ++i) {
    const auto to = static_cast<int64_t>(i);
    if (keep[i] != to) std::copy_n(x + keep[i] * width, width, x + to * width);
  }
}

void VisitSwiglu(SwigluWeights& w, const MatrixVisitor& visit) {
  for (ops::Matrix* t : {&w.gate, &w.up, &w.down}) {
    if (t->data != nullptr) visit(*t);
  }
}

StatusOr<std::unique_ptr<FeedForward>> BindDenseFeedForward(const WeightBinder& b, const ModelConfig& c,
                                                            int64_t layer, int64_t ffn) {
  const WeightNaming n = b.naming();
  SwigluWeights w;
  DI_RETURN_IF_ERROR(BindSwiglu(b, WeightName(n, TensorRole::kGate, layer),
                                WeightName(n, TensorRole::kUp, layer),
                                WeightName(n, TensorRole::kDown, layer), c.hidden_size, ffn, w));
  w.gelu_tanh = c.ffn_activation == FfnActivation::kGeluTanh;
  return std::unique_ptr<FeedForward>(new DenseFeedForward(std::move(w)));
}

StatusOr<std::unique_ptr<DecoderLayer>> CreateGqaDecoderLayer(const WeightBinder& b, const ModelConfig& c,
                                                              std::shared_ptr<const Rope> rope, int64_t layer,
                                                              std::unique_ptr<FeedForward> ffn) {
  const int64_t window = layer < static_cast<int64_t>(c.sliding_window.size())
                             ? c.sliding_window[static_cast<size_t>(layer)]
                             : 0;
  auto out = std::make_unique<GqaDecoderLayer>(c, std::move(rope), window);
  const WeightNaming n = b.naming();
  DI_ASSIGN_OR_RETURN(out->attn_norm,
                      b.Vector(WeightName(n, TensorRole::kAttnNorm, layer), c.hidden_size, true));
  DI_RETURN_IF_ERROR(BindGqaAttention(b, c, layer, out->attn));
  DI_ASSIGN_OR_RETURN(out->ffn_norm,
                      b.Vector(WeightName(n, TensorRole::kFfnNorm, layer), c.hidden_size, true));
  out->ffn = std::move(ffn);
  return std::unique_ptr<DecoderLayer>(std::move(out));
}

}  // namespace deepinfer
