#include "model/deepseek.h"

#include "model/config_loader.h"
#include "model/decoder_stack.h"
#include "model/moe.h"
#include "model/ops.h"

namespace deepinfer {

namespace {

class MlaDecoderLayer : public DecoderLayer {
 public:
  MlaDecoderLayer(const ModelConfig& c, MlaWeights w, std::shared_ptr<const MlaRope> rope, int64_t window)
      : config_(c), rope_(std::move(rope)), attn_(c, std::move(w), rope_.get(), window) {}

  void Forward(const ForwardBatch& batch, const TokenPlan& plan, KvCache& kv, int64_t kv_layer,
               ThreadPool& pool, LayerScratch& s, float* x) override {
    PreNormResidualForward(
        config_, attn_norm, ffn_norm, *ffn, plan.num_tokens(), pool, s, x,
        [&](const float* xn, float* proj) { attn_.Forward(batch, plan, xn, kv, kv_layer, pool, proj); });
  }
  // MLA attends for every token (it has no kept-rows form), then keeps the
  // kept rows' outputs; the feed-forward runs for those only.
  void ForwardKeeping(const ForwardBatch& batch, const TokenPlan& plan, KvCache& kv, int64_t kv_layer,
                      ThreadPool& pool, LayerScratch& s, float* x,
                      const std::vector<int64_t>& keep) override {
    PreNormResidualForward(
        config_, attn_norm, ffn_norm, *ffn, plan.num_tokens(), pool, s, x,
        [&](const float* xn, float* proj) {
          attn_.Forward(batch, plan, xn, kv, kv_layer, pool, proj);
          CompactRows(proj, config_.hidden_size, keep);
        },
        &keep);
  }
  void set_absorb(bool absorb) { attn_.set_absorb(absorb); }
  void VisitMatrices(const MatrixVisitor& visit) override {
    attn_.VisitMatrices(visit);
    ffn->VisitMatrices(visit);
  }

  std::vector<float> attn_norm, ffn_norm;  // f32 [hidden]
  std::unique_ptr<FeedForward> ffn;

 private:
  const ModelConfig config_;
  std::shared_ptr<const MlaRope> rope_;
  MlaAttention attn_;
};

}  // namespace

StatusOr<std::unique_ptr<DecoderLayer>> CreateDeepseekLayer(const WeightBinder& b, const ModelConfig& c,
                                                            std::shared_ptr<const MlaRope> rope,
                                                            int64_t layer, MoeFeedForward** moe_out) {
  *moe_out = nullptr;
  const bool in_stack = layer < c.num_layers;
  const bool sparse =
      c.moe.num_experts > 0 && (in_stack ? c.moe.sparse_layers[static_cast<size_t>(layer)] : true);
  std::unique_ptr<FeedForward> ffn;
  if (sparse) {
    MoeWeights w;
    DI_RETURN_IF_ERROR(BindMoeWeights(b, c, layer, HfMoeNames(), w));
    auto m = std::make_unique<MoeFeedForward>(c, std::move(w));
    *moe_out = m.get();
    ffn = std::move(m);
  } else {
    DI_ASSIGN_OR_RETURN(ffn, BindDenseFeedForward(b, c, layer, c.intermediate_size));
  }
  MlaWeights w;
  DI_RETURN_IF_ERROR(BindMlaWeights(b, c, layer, w));
  const int64_t window = in_stack ? c.sliding_window[static_cast<size_t>(layer)] : 0;
  auto out = std::make_unique<MlaDecoderLayer>(c, std::move(w), std::move(rope), window);
  const WeightNaming n = b.naming();
  DI_ASSIGN_OR_RETURN(out->attn_norm,
                      b.Vector(WeightName(n, TensorRole::kAttnNorm, layer), c.hidden_size, true));
  DI_ASSIGN_OR_RETURN(out->ffn_norm,
                      b.Vector(WeightName(n, TensorRole::kFfnNorm, layer), c.hidden_size, true));
  out->ffn = std::move(ffn);
  return std::unique_ptr<DecoderLayer>(std::move(out));
}

StatusOr<std::unique_ptr<Model>> CreateDeepseekModel(const ModelConfig& config,
                                                     std::shared_ptr<const WeightStore> weights,
                                                     int num_threads) {
  ModelConfig c = config;
  DI_RETURN_IF_ERROR(ValidateModelConfig(c));
  if (c.mla.kv_lora_rank <= 0) {
    return InvalidArgument("architecture '" + c.arch + "' needs kv_lora_rank > 0");
  }
  DI_ASSIGN_OR_RETURN(MlaRope rope, MlaRope::Create(c));
  auto shared_rope = std::make_shared<const MlaRope>(std::move(rope));
  const auto build_layers = [&shared_rope](const WeightBinder& b,
                                           ModelConfig& c) -> StatusOr<DecoderStackParts> {
    DecoderStackParts parts;
    for (int64_t l = 0; l < c.num_layers; ++l) {
      MoeFeedForward* moe = nullptr;
      DI_ASSIGN_OR_RETURN(std::unique_ptr<DecoderLayer> layer,
                          CreateDeepseekLayer(b, c, shared_rope, l, &moe));
      parts.layers.push_back(std::move(layer));
      parts.moe.push_back(moe);
    }
    return parts;
  };
  return CreateDecoderStackModel(c, std::move(weights), build_layers, num_threads);
}

Status SetMlaAbsorb(Model& model, bool absorb) {
  DecoderStackParts* parts = DecoderStackPartsOf(model);
  if (parts == nullptr) {
    return InvalidArgument("not a decoder-stack model");
  }
  int found = 0;
  for (auto& layer : parts->layers) {
    if (auto* mla = dynamic_cast<MlaDecoderLayer*>(layer.get())) {
      mla->set_absorb(absorb);
      ++found;
    }
  }
  if (found == 0) {
    return InvalidArgument("the model has no MLA layers");
  }
  return Status::Ok();
}

}  // namespace deepinfer
