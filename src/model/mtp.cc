#include "model/mtp.h"

#include <cstring>

#include "model/deepseek.h"
#include "model/ops.h"
#include "model/rope.h"
#include "tensor/dequant.h"

namespace deepinfer {

std::string MtpWeightName(WeightNaming naming, const std::string& part, int64_t layer) {
  if (naming == WeightNaming::kHf) {
    return "model.layers." + std::to_string(layer) + "." + part + ".weight";
  }
  // llama.cpp's NEXTN tensor names.
  std::string gguf_part = part;
  if (part == "shared_head.norm") gguf_part = "shared_head_norm";
  if (part == "shared_head.head") gguf_part = "shared_head_head";
  return "blk." + std::to_string(layer) + ".nextn." + gguf_part + ".weight";
}

MtpDraft::MtpDraft(ModelConfig config, std::shared_ptr<const WeightStore> weights, int num_threads)
    : config_(std::move(config)), store_(std::move(weights)), pool_(num_threads) {}

MtpDraft::~MtpDraft() = default;

StatusOr<std::unique_ptr<MtpDraft>> MtpDraft::Create(const ModelConfig& base,
                                                     std::shared_ptr<const WeightStore> weights,
                                                     int64_t index, int num_threads, MtpMatrices matrices) {
  if (base.num_nextn_predict_layers <= 0) {
    return InvalidArgument("the model has no MTP (next-n) layers");
  }
  if (index < 0 || index >= base.num_nextn_predict_layers) {
    return InvalidArgument("MTP layer index " + std::to_string(index) + " is out of range [0, " +
                           std::to_string(base.num_nextn_predict_layers) + ")");
  }
  if (num_threads <= 0) {
    num_threads = ThreadPool::DefaultThreadCount();
  }
  const int64_t layer = base.num_layers + index;
  ModelConfig c = base;
  c.num_layers = 1;
  c.sliding_window.assign(1, 0);  // the draft block attends over its whole cache
  const WeightBinder b(*weights);
  std::unique_ptr<MtpDraft> d(new MtpDraft(c, std::move(weights), num_threads));
  const WeightNaming n = b.naming();
  const int64_t h = c.hidden_size, vocab = c.vocab_size;

  const std::string own_embed = MtpWeightName(n, "embed_tokens", layer);
  DI_ASSIGN_OR_RETURN(
      d->embedding_,
      b.Matrix(b.Find(own_embed) ? own_embed : WeightName(n, TensorRole::kTokenEmbedding), vocab, h));
  const std::string own_head = MtpWeightName(n, "shared_head.head", layer);
  std::string head = own_head;
  if (b.Find(own_head) == nullptr) {
    head = (base.tie_word_embeddings || b.Find(WeightName(n, TensorRole::kOutput)) == nullptr)
               ? WeightName(n, TensorRole::kTokenEmbedding)
               : WeightName(n, TensorRole::kOutput);
  }
  DI_ASSIGN_OR_RETURN(d->head_, b.Matrix(head, vocab, h));
  DI_ASSIGN_OR_RETURN(d->eh_proj_, b.Matrix(MtpWeightName(n, "eh_proj", layer), h, 2 * h));
  DI_ASSIGN_OR_RETURN(d->enorm_, b.Vector(MtpWeightName(n, "enorm", layer), h, true));
  DI_ASSIGN_OR_RETURN(d->hnorm_, b.Vector(MtpWeightName(n, "hnorm", layer), h, true));
  DI_ASSIGN_OR_RETURN(d->shared_head_norm_, b.Vector(MtpWeightName(n, "shared_head.norm", layer), h, true));

  if (c.mla.kv_lora_rank > 0) {  // DeepSeek-V3: an MLA + MoE block
    DI_ASSIGN_OR_RETURN(MlaRope rope, MlaRope::Create(c));
    MoeFeedForward* moe = nullptr;
    DI_ASSIGN_OR_RETURN(
        d->block_,
        CreateDeepseekLayer(b, base, std::make_shared<const MlaRope>(std::move(rope)), layer, &moe));
    d->PackWeights(matrices);
    return d;
  }
  DI_ASSIGN_OR_RETURN(Rope rope, Rope::Create(c));
  auto shared_rope = std::make_shared<const Rope>(std::move(rope));
  DI_ASSIGN_OR_RETURN(std::unique_ptr<FeedForward> ffn,
                      BindDenseFeedForward(b, c, layer, c.intermediate_size));
  DI_ASSIGN_OR_RETURN(d->block_, CreateGqaDecoderLayer(b, c, shared_rope, layer, std::move(ffn)));
  d->PackWeights(matrices);
  return d;
}

void MtpDraft::PackWeights(MtpMatrices matrices) {
  const auto prepare = [&](ops::Matrix& m) {
    if (matrices == MtpMatrices::kInt8) {
      backend_weights_.PrepareAsQ8_0(m);
    } else {
      backend_weights_.Prepare(m);
    }
  };
  block_->VisitMatrices(prepare);
  prepare(eh_proj_);
  prepare(head_);
}

std::unique_ptr<KvCache> MtpDraft::NewKvCache(int64_t num_blocks, int64_t block_size) const {
  return std::make_unique<KvCache>(config_, num_blocks, block_size);
}

Status MtpDraft::Forward(const ForwardBatch& batch, const float* hidden_in, KvCache& kv, float* logits_out,
                         float* hidden_out) {
  if (kv.num_layers() != 1 || kv.kv_dim() != config_.cache_k_dim() || kv.v_dim() != config_.cache_v_dim()) {
    return InvalidArgument("MTP KV cache shape (" + std::to_string(kv.num_layers()) + " layers, kv_dim " +
                           std::to_string(kv.kv_dim()) + ") does not match the draft (use NewKvCache)");
  }
  DI_RETURN_IF_ERROR(CheckBatch(batch, config_.vocab_size, kv));
  plan_.Build(batch);
  const int64_t n = plan_.num_tokens(), h = config_.hidden_size;
  const int64_t rows = static_cast<int64_t>(plan_.logit_rows.size());
  if (n > 0 && hidden_in == nullptr) {
    return InvalidArgument("MTP forward: hidden_in is null");
  }
  if (rows > 0 && logits_out == nullptr) {
    return InvalidArgument("MTP forward: the batch asks for logit rows but logits_out is null");
  }
  if (n == 0) {
    return Status::Ok();
  }
  concat_.resize(static_cast<size_t>(n * 2 * h));
  x_.resize(static_cast<size_t>(n * h));
  const int64_t row_bytes = RowBytes(embedding_.dtype, h);
  for (int64_t t = 0; t < n; ++t) {
    float* e = &concat_[static_cast<size_t>(t * 2 * h)];
    const auto* row =
        static_cast<const uint8_t*>(embedding_.data) + plan_.token_ids[static_cast<size_t>(t)] * row_bytes;
    DequantizeRow(embedding_.dtype, row, e, h);
    ops::RmsNorm(e, enorm_.data(), h, config_.rms_norm_eps, e);
    ops::RmsNorm(hidden_in + t * h, hnorm_.data(), h, config_.rms_norm_eps, e + h);
  }
  ops::MatMul(eh_proj_, concat_.data(), n, nullptr, x_.data(), pool_);
  // Only the logit rows' outputs are read: the others just write their K/V.
  block_->ForwardKeeping(batch, plan_, kv, /*kv_layer=*/0, pool_, scratch_, x_.data(), plan_.logit_rows);
  if (rows == 0) {
    return Status::Ok();
  }
  g_.resize(static_cast<size_t>(rows * h));
  for (int64_t r = 0; r < rows; ++r) {
    ops::RmsNorm(&x_[static_cast<size_t>(r * h)], shared_head_norm_.data(), h, config_.rms_norm_eps,
                 &g_[static_cast<size_t>(r * h)]);
  }
  if (hidden_out != nullptr) {
    std::memcpy(hidden_out, g_.data(), sizeof(float) * static_cast<size_t>(rows * h));
  }
  ops::MatMul(head_, g_.data(), rows, nullptr, logits_out, pool_);
  return Status::Ok();
}

}  // namespace deepinfer
