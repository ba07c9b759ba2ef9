#include "model/gemma.h"

#include "model/config_loader.h"
#include "model/decoder_stack.h"
#include "model/ops.h"
#include "model/rope.h"

namespace deepinfer {

namespace {

class GemmaDecoderLayer : public DecoderLayer {
 public:
  GemmaDecoderLayer(const ModelConfig& c, std::shared_ptr<const Rope> rope, int64_t window)
      : config_(c), rope_(std::move(rope)), window_(window) {}

  void Forward(const ForwardBatch& batch, const TokenPlan& plan, KvCache& kv, int64_t kv_layer,
               ThreadPool& pool, LayerScratch& s, float* x) override {
    Run(batch, plan, kv, kv_layer, pool, s, x, nullptr);
  }
  void ForwardKeeping(const ForwardBatch& batch, const TokenPlan& plan, KvCache& kv, int64_t kv_layer,
                      ThreadPool& pool, LayerScratch& s, float* x,
                      const std::vector<int64_t>& keep) override {
    Run(batch, plan, kv, kv_layer, pool, s, x, &keep);
  }
  void VisitMatrices(const MatrixVisitor& visit) override {
    for (ops::Matrix* t : {&attn.q, &attn.k, &attn.v, &attn.o}) visit(*t);
    VisitSwiglu(mlp, visit);
  }

  std::vector<float> input_norm, post_attn_norm, pre_ffn_norm, post_ffn_norm;  // f32 [hidden], 1 + w
  GqaAttentionWeights attn;
  SwigluWeights mlp;

 private:
  // Forward, or with `keep` ForwardKeeping.
  void Run(const ForwardBatch& batch, const TokenPlan& plan, KvCache& kv, int64_t kv_layer, ThreadPool& pool,
           LayerScratch& s, float* x, const std::vector<int64_t>* keep) {
    int64_t n = plan.num_tokens();
    const int64_t h = config_.hidden_size;
    const double eps = config_.rms_norm_eps;
    s.xn.resize(static_cast<size_t>(n * h));
    s.proj.resize(static_cast<size_t>(n * h));
    float* xn = s.xn.data();
    float* proj = s.proj.data();
    for (int64_t t = 0; t < n; ++t) ops::RmsNorm(x + t * h, input_norm.data(), h, eps, xn + t * h);
    GqaAttentionForward(config_, attn, *rope_, kv_layer, window_, batch, plan, xn, kv, pool, s.attention,
                        proj, keep);
    if (keep != nullptr) {
      CompactRows(x, h, *keep);
      n = static_cast<int64_t>(keep->size());
    }
    for (int64_t t = 0; t < n; ++t) ops::RmsNorm(proj + t * h, post_attn_norm.data(), h, eps, proj + t * h);
    for (int64_t i = 0; i < n * h; ++i) x[i] += proj[i];
    for (int64_t t = 0; t < n; ++t) ops::RmsNorm(x + t * h, pre_ffn_norm.data(), h, eps, xn + t * h);
    SwigluForward(mlp, xn, n, pool, s.ffn, proj);
    for (int64_t t = 0; t < n; ++t) ops::RmsNorm(proj + t * h, post_ffn_norm.data(), h, eps, proj + t * h);
    for (int64_t i = 0; i < n * h; ++i) x[i] += proj[i];
  }

  const ModelConfig config_;
  std::shared_ptr<const Rope> rope_;
  int64_t window_;
};

StatusOr<std::vector<float>> BindNorm(const WeightBinder& b, const ModelConfig& c, TensorRole role,
                                      int64_t layer) {
  DI_ASSIGN_OR_RETURN(std::vector<float> w,
                      b.Vector(WeightName(b.naming(), role, layer), c.hidden_size, true));
  for (float& v : w) v += c.norm_weight_offset;
  return w;
}

StatusOr<std::unique_ptr<DecoderLayer>> BindLayer(const WeightBinder& b, const ModelConfig& c,
                                                  std::shared_ptr<const Rope> rope, int64_t l) {
  const int64_t window = c.sliding_window[static_cast<size_t>(l)];
  auto out = std::make_unique<GemmaDecoderLayer>(c, std::move(rope), window);
  const WeightNaming n = b.naming();
  DI_ASSIGN_OR_RETURN(out->input_norm, BindNorm(b, c, TensorRole::kAttnNorm, l));
  DI_RETURN_IF_ERROR(BindGqaAttention(b, c, l, out->attn));
  DI_ASSIGN_OR_RETURN(out->post_attn_norm, BindNorm(b, c, TensorRole::kPostAttnNorm, l));
  DI_ASSIGN_OR_RETURN(out->pre_ffn_norm, BindNorm(b, c, TensorRole::kPreFfnNorm, l));
  DI_RETURN_IF_ERROR(BindSwiglu(b, WeightName(n, TensorRole::kGate, l), WeightName(n, TensorRole::kUp, l),
                                WeightName(n, TensorRole::kDown, l), c.hidden_size, c.intermediate_size,
                                out->mlp));
  out->mlp.gelu_tanh = c.ffn_activation == FfnActivation::kGeluTanh;
  DI_ASSIGN_OR_RETURN(out->post_ffn_norm, BindNorm(b, c, TensorRole::kPostFfnNorm, l));
  return std::unique_ptr<DecoderLayer>(std::move(out));
}

}  // namespace

StatusOr<std::unique_ptr<Model>> CreateGemmaModel(const ModelConfig& config,
                                                  std::shared_ptr<const WeightStore> weights,
                                                  int num_threads) {
  DI_RETURN_IF_ERROR(ValidateModelConfig(config));
  const auto build_layers = [](const WeightBinder& b, ModelConfig& c) -> StatusOr<DecoderStackParts> {
    DI_ASSIGN_OR_RETURN(Rope global, Rope::Create(c));
    auto global_rope = std::make_shared<const Rope>(std::move(global));
    std::shared_ptr<const Rope> local_rope = global_rope;
    if (c.rope_local_theta > 0) {  // Gemma-3: local layers rotate with their own base, unscaled
      ModelConfig local = c;
      local.rope_theta = c.rope_local_theta;
      local.rope_scaling = RopeScaling{};
      DI_ASSIGN_OR_RETURN(Rope r, Rope::Create(local));
      local_rope = std::make_shared<const Rope>(std::move(r));
    }
    DecoderStackParts parts;
    for (int64_t l = 0; l < c.num_layers; ++l) {
      const bool sliding = c.sliding_window[static_cast<size_t>(l)] > 0;
      DI_ASSIGN_OR_RETURN(std::unique_ptr<DecoderLayer> layer,
                          BindLayer(b, c, sliding ? local_rope : global_rope, l));
      parts.layers.push_back(std::move(layer));
      parts.moe.push_back(nullptr);
    }
    return parts;
  };
  return CreateDecoderStackModel(config, std::move(weights), build_layers, num_threads);
}

}  // namespace deepinfer
