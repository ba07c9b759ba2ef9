#include "model/moe_model.h"

#include "model/config_loader.h"
#include "model/decoder_stack.h"
#include "model/moe.h"
#include "model/rope.h"

namespace deepinfer {

StatusOr<std::unique_ptr<Model>> CreateMoeModel(const ModelConfig& config,
                                                std::shared_ptr<const WeightStore> weights, int num_threads,
                                                const HfMoeNames& names) {
  ModelConfig c = config;
  DI_RETURN_IF_ERROR(ValidateModelConfig(c));
  if (c.moe.num_experts <= 0) {
    return InvalidArgument("architecture '" + c.arch + "' needs num_experts > 0");
  }
  DI_ASSIGN_OR_RETURN(Rope rope, Rope::Create(c));
  auto shared_rope = std::make_shared<const Rope>(std::move(rope));
  const auto build_layers = [&names, &shared_rope](const WeightBinder& b,
                                                   ModelConfig& c) -> StatusOr<DecoderStackParts> {
    DecoderStackParts parts;
    for (int64_t l = 0; l < c.num_layers; ++l) {
      std::unique_ptr<FeedForward> ffn;
      MoeFeedForward* moe = nullptr;
      if (c.moe.sparse_layers[static_cast<size_t>(l)]) {
        MoeWeights w;
        DI_RETURN_IF_ERROR(BindMoeWeights(b, c, l, names, w));
        auto m = std::make_unique<MoeFeedForward>(c, std::move(w));
        moe = m.get();
        ffn = std::move(m);
      } else {
        DI_ASSIGN_OR_RETURN(ffn, BindDenseFeedForward(b, c, l, c.intermediate_size));
      }
      DI_ASSIGN_OR_RETURN(std::unique_ptr<DecoderLayer> layer,
                          CreateGqaDecoderLayer(b, c, shared_rope, l, std::move(ffn)));
      parts.layers.push_back(std::move(layer));
      parts.moe.push_back(moe);
    }
    return parts;
  };
  return CreateDecoderStackModel(c, std::move(weights), build_layers, num_threads);
}

}  // namespace deepinfer
