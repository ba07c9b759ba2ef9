#include "model/dense_model.h"

#include "model/config_loader.h"
#include "model/decoder_stack.h"
#include "model/rope.h"

namespace deepinfer {

namespace {

// A checkpoint that carries all three q/k/v biases uses them, whatever its
// config said; the model's config then says so too.
bool HasQkvBias(const WeightBinder& b, int64_t layer) {
  const WeightNaming n = b.naming();
  return b.Find(WeightName(n, TensorRole::kQBias, layer)) != nullptr &&
         b.Find(WeightName(n, TensorRole::kKBias, layer)) != nullptr &&
         b.Find(WeightName(n, TensorRole::kVBias, layer)) != nullptr;
}

}  // namespace

StatusOr<std::unique_ptr<Model>> CreateDenseModel(const ModelConfig& config,
                                                  std::shared_ptr<const WeightStore> weights,
                                                  int num_threads) {
  DI_RETURN_IF_ERROR(ValidateModelConfig(config));
  const auto build_layers = [](const WeightBinder& b, ModelConfig& c) -> StatusOr<DecoderStackParts> {
    // GGUF llama3 frequency factors (optional).
    DI_ASSIGN_OR_RETURN(std::vector<float> freq_factors,
                        b.Vector(WeightName(b.naming(), TensorRole::kRopeFreqs), c.rope_dim / 2, false));
    DI_ASSIGN_OR_RETURN(Rope rope, Rope::Create(c, std::move(freq_factors)));
    auto shared_rope = std::make_shared<const Rope>(std::move(rope));
    DecoderStackParts parts;
    for (int64_t l = 0; l < c.num_layers; ++l) {
      DI_ASSIGN_OR_RETURN(std::unique_ptr<FeedForward> ffn,
                          BindDenseFeedForward(b, c, l, c.intermediate_size));
      DI_ASSIGN_OR_RETURN(std::unique_ptr<DecoderLayer> layer,
                          CreateGqaDecoderLayer(b, c, shared_rope, l, std::move(ffn)));
      parts.layers.push_back(std::move(layer));
      parts.moe.push_back(nullptr);
      if (HasQkvBias(b, l)) c.attention_bias = true;  // later layers must carry them too
    }
    return parts;
  };
  return CreateDecoderStackModel(config, std::move(weights), build_layers, num_threads);
}

}  // namespace deepinfer
