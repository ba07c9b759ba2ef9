#include "model/decoder_stack.h"

#include <algorithm>
#include <cstring>

#include "model/moe.h"
#include "model/ops.h"
#include "model/token_plan.h"
#include "tensor/dequant.h"

namespace deepinfer {

namespace {

class DecoderStackModel : public Model {
 public:
  DecoderStackModel(ModelConfig c, std::shared_ptr<const WeightStore> store, DecoderStackParts parts,
                    int num_threads)
      : config_(std::move(c)), store_(std::move(store)), parts_(std::move(parts)), pool_(num_threads) {}

  const ModelConfig& config() const override { return config_; }
  Status Forward(const ForwardBatch& batch, KvCache& kv, float* logits_out) override {
    return ForwardWithHidden(batch, kv, logits_out, nullptr);
  }
  Status ForwardWithHidden(const ForwardBatch& batch, KvCache& kv, float* logits_out,
                           float* hidden_out) override;
  std::vector<std::vector<int64_t>> ExpertLoad() const override {
    std::vector<std::vector<int64_t>> out;
    for (const MoeFeedForward* m : parts_.moe) {
      out.push_back(m != nullptr ? m->expert_load() : std::vector<int64_t>());
    }
    return out;
  }

  TensorView embedding;            // [vocab, hidden]
  ops::Matrix output;              // [vocab, hidden]
  std::vector<float> output_norm;  // f32 [hidden]
  DecoderStackParts& parts() { return parts_; }

  // Repacks every layer's matrices and an untied LM head once into the
  // kernels' layout (a no-op where the ISA has none; docs/kernels.md). The
  // embedding is read row-wise and never packed; a tied head gets a packed
  // copy of it only where its file layout is much slower (PrepareTiedHead:
  // the Q6_K embedding llama-quantize's K-quant mixes write for tied
  // models, and a tiny model's short rows; docs/model.md).
  void PackWeights() {
    const MatrixVisitor pack = [this](ops::Matrix& m) { backend_weights_.Prepare(m); };
    for (auto& layer : parts_.layers) layer->VisitMatrices(pack);
    if (output.data != embedding.data) {
      backend_weights_.Prepare(output);
    } else {
      backend_weights_.PrepareTiedHead(output);
    }
  }

 private:
  ModelConfig config_;
  std::shared_ptr<const WeightStore> store_;  // keeps the tensors' bytes alive
  DecoderStackParts parts_;
  Status CheckShapes(const ForwardBatch& batch, const KvCache& kv) const;

  ThreadPool pool_;
  TokenPlan plan_;
  LayerScratch scratch_;                 // shared by the layers, which run one after another
  std::vector<float> x_, xn_;            // f32 [T, hidden], [R, hidden]
  ops::BackendWeights backend_weights_;  // owns the packed copies some matrices in parts_ and output use
};

Status DecoderStackModel::CheckShapes(const ForwardBatch& batch, const KvCache& kv) const {
  // With per-layer tables the cache is one layer of pages (CheckBatch).
  if (!batch.PerLayerTables() && kv.num_layers() != config_.num_layers) {
    return InvalidArgument("KV cache has " + std::to_string(kv.num_layers()) + " layers; the model has " +
                           std::to_string(config_.num_layers));
  }
  if (kv.kv_dim() != config_.cache_k_dim() || kv.v_dim() != config_.cache_v_dim()) {
    return InvalidArgument("KV cache widths (K " + std::to_string(kv.kv_dim()) + ", V " +
                           std::to_string(kv.v_dim()) + ") do not match the model (K " +
                           std::to_string(config_.cache_k_dim()) + ", V " +
                           std::to_string(config_.cache_v_dim()) + ")");
  }
  // The oldest position any layer reads: 0 unless every layer is windowed.
  int64_t max_window = 0;
  bool all_windowed = true;
  for (int64_t w : config_.sliding_window) {
    all_windowed &= w > 0;
    max_window = std::max(max_window, w);
  }
  return CheckBatch(batch, config_.vocab_size, kv, all_windowed ? max_window : 0, &config_.sliding_window);
}

Status DecoderStackModel::ForwardWithHidden(const ForwardBatch& batch, KvCache& kv, float* logits_out,
                                            float* hidden_out) {
  DI_RETURN_IF_ERROR(CheckShapes(batch, kv));
  if (logits_out == nullptr && batch.NumLogitRows() > 0) {
    return InvalidArgument("the batch asks for " + std::to_string(batch.NumLogitRows()) +
                           " logit rows but logits_out is null");
  }
  plan_.Build(batch);
  const int64_t n = plan_.num_tokens(), h = config_.hidden_size;
  if (n == 0) return Status::Ok();
  x_.resize(static_cast<size_t>(n * h));
  const int64_t row_bytes = RowBytes(embedding.dtype, h);
  for (int64_t t = 0; t < n; ++t) {
    const auto* row =
        static_cast<const uint8_t*>(embedding.data) + plan_.token_ids[static_cast<size_t>(t)] * row_bytes;
    DequantizeRow(embedding.dtype, row, &x_[static_cast<size_t>(t * h)], h);
  }
  if (config_.embedding_scale != 1.0) {  // Gemma: x * sqrt(hidden), the factor rounded to f32 as HF does
    const auto scale = static_cast<float>(config_.embedding_scale);
    for (float& v : x_) v *= scale;
  }
  // Without hidden_out only the logit rows of the last layer are read: it
  // computes just those (a prompt chunk's last token), writing every K/V.
  const bool keep_logit_rows = hidden_out == nullptr;
  for (int64_t l = 0; l < config_.num_layers; ++l) {
    DecoderLayer& layer = *parts_.layers[static_cast<size_t>(l)];
    if (keep_logit_rows && l + 1 == config_.num_layers) {
      layer.ForwardKeeping(batch, plan_, kv, l, pool_, scratch_, x_.data(), plan_.logit_rows);
    } else {
      layer.Forward(batch, plan_, kv, l, pool_, scratch_, x_.data());
    }
  }
  const int64_t rows = static_cast<int64_t>(plan_.logit_rows.size());
  if (hidden_out != nullptr) {
    for (int64_t t = 0; t < n; ++t) {
      ops::RmsNorm(&x_[static_cast<size_t>(t * h)], output_norm.data(), h, config_.rms_norm_eps,
                   hidden_out + t * h);
    }
  }
  if (rows == 0) return Status::Ok();
  xn_.resize(static_cast<size_t>(rows * h));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t t = plan_.logit_rows[static_cast<size_t>(r)];
    if (hidden_out != nullptr) {
      std::memcpy(&xn_[static_cast<size_t>(r * h)], hidden_out + t * h,
                  sizeof(float) * static_cast<size_t>(h));
    } else {  // x_ holds the logit rows only (ForwardKeeping)
      ops::RmsNorm(&x_[static_cast<size_t>(r * h)], output_norm.data(), h, config_.rms_norm_eps,
                   &xn_[static_cast<size_t>(r * h)]);
    }
  }
  ops::MatMul(output, xn_.data(), rows, nullptr, logits_out, pool_);
  if (config_.final_logit_softcap > 0) {
    ops::SoftCap(logits_out, rows * config_.vocab_size, static_cast<float>(config_.final_logit_softcap));
  }
  return Status::Ok();
}

}  // namespace

DecoderStackParts* DecoderStackPartsOf(Model& model) {
  auto* stack = dynamic_cast<DecoderStackModel*>(&model);
  return stack == nullptr ? nullptr : &stack->parts();
}

StatusOr<std::unique_ptr<Model>> CreateDecoderStackModel(const ModelConfig& config,
                                                         std::shared_ptr<const WeightStore> weights,
                                                         const DecoderLayerBuilder& build_layers,
                                                         int num_threads) {
  if (num_threads <= 0) num_threads = ThreadPool::DefaultThreadCount();
  ModelConfig c = config;
  const WeightBinder b(*weights);
  const WeightNaming n = b.naming();
  TensorView embedding, output;
  DI_ASSIGN_OR_RETURN(embedding,
                      b.Matrix(WeightName(n, TensorRole::kTokenEmbedding), c.vocab_size, c.hidden_size));
  DI_ASSIGN_OR_RETURN(std::vector<float> norm,
                      b.Vector(WeightName(n, TensorRole::kOutputNorm), c.hidden_size, true));
  for (float& v : norm) v += c.norm_weight_offset;
  if (c.tie_word_embeddings) {
    output = embedding;
  } else if (b.Find(WeightName(n, TensorRole::kOutput)) == nullptr) {
    return NotFound(b.store().source() + ": tensor '" + WeightName(n, TensorRole::kOutput) +
                    "' is missing and the embeddings are not tied");
  } else {
    DI_ASSIGN_OR_RETURN(output, b.Matrix(WeightName(n, TensorRole::kOutput), c.vocab_size, c.hidden_size));
  }
  DI_ASSIGN_OR_RETURN(DecoderStackParts parts, build_layers(b, c));
  auto model =
      std::make_unique<DecoderStackModel>(std::move(c), std::move(weights), std::move(parts), num_threads);
  model->embedding = embedding;
  model->output = output;
  model->output_norm = std::move(norm);
  model->PackWeights();
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace deepinfer
