#include "model/llama.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "model/config_loader.h"
#include "model/ops.h"
#include "model/rope.h"
#include "model/token_plan.h"
#include "tensor/dequant.h"

namespace deepinfer {

namespace {

// ---------------------------------------------------------------------------
// Weights. Matrices stay in the file's dtype (views into the mapping); the
// small vectors (norm weights, biases) are dequantized to f32 once at load.

struct LayerWeights {
  std::vector<float> attn_norm;       // f32 [hidden]
  ops::Matrix q, k, v, o;             // [q_dim, hidden], [kv_dim, hidden] x2, [hidden, q_dim]
  std::vector<float> q_bias, k_bias;  // f32 [q_dim], [kv_dim]; empty when absent
  std::vector<float> v_bias, o_bias;  // f32 [kv_dim], [hidden]; empty when absent
  std::vector<float> q_norm, k_norm;  // f32 [head_dim]; empty unless qk_norm
  std::vector<float> ffn_norm;        // f32 [hidden]
  ops::Matrix gate, up, down;         // [inter, hidden] x2, [hidden, inter]
};

struct LlamaWeights {
  TensorView token_embedding;            // [vocab, hidden]
  std::vector<float> output_norm;        // f32 [hidden]
  ops::Matrix output;                    // [vocab, hidden]; the embedding when tied
  std::vector<float> rope_freq_factors;  // f32 [rope_dim / 2]; empty when absent
  std::vector<LayerWeights> layers;
};

// Looks tensors up by role and checks their shapes.
class Binder {
 public:
  explicit Binder(const WeightStore& store) : store_(store) {}

  const TensorView* Find(TensorRole role, int64_t layer = -1) const {
    return store_.Find(WeightName(store_.naming(), role, layer));
  }

  StatusOr<TensorView> Matrix(TensorRole role, int64_t layer, int64_t rows, int64_t cols) const {
    const std::string name = WeightName(store_.naming(), role, layer);
    const TensorView* t = store_.Find(name);
    if (t == nullptr) {
      return NotFound(store_.source() + ": tensor '" + name + "' is missing");
    }
    DI_RETURN_IF_ERROR(CheckShape(*t, {rows, cols}));
    return *t;
  }

  // A 1-D tensor of n elements as f32; empty when absent and !required.
  StatusOr<std::vector<float>> Vector(TensorRole role, int64_t layer, int64_t n, bool required) const {
    const std::string name = WeightName(store_.naming(), role, layer);
    const TensorView* t = store_.Find(name);
    if (t == nullptr) {
      if (required) {
        return NotFound(store_.source() + ": tensor '" + name + "' is missing");
      }
      return std::vector<float>();
    }
    DI_RETURN_IF_ERROR(CheckShape(*t, {n}));
    std::vector<float> out(static_cast<size_t>(n));
    DequantizeRow(t->dtype, t->data, out.data(), n);
    return out;
  }

 private:
  Status CheckShape(const TensorView& t, const std::vector<int64_t>& expected) const {
    // A tensor that contradicts the checkpoint's own config: a damaged or
    // inconsistent file, not a caller error.
    if (t.shape != expected) {
      return DataLoss(store_.source() + ": tensor '" + t.name + "' has shape " + ShapeString(t.shape) +
                      ", expected " + ShapeString(expected));
    }
    const int64_t row_bytes = RowBytes(t.dtype, t.cols());
    const bool numeric =
        t.dtype != DType::kI32 && t.dtype != DType::kI64 && t.dtype != DType::kI8 && t.dtype != DType::kU8;
    if (!numeric || row_bytes <= 0) {
      return DataLoss(store_.source() + ": tensor '" + t.name + "' has dtype " + DTypeName(t.dtype) +
                      ", which cannot hold these weights");
    }
    if (t.data == nullptr || t.nbytes < row_bytes * t.rows()) {
      return DataLoss(store_.source() + ": tensor '" + t.name + "' holds " + std::to_string(t.nbytes) +
                      " bytes, expected " + std::to_string(row_bytes * t.rows()));
    }
    return Status::Ok();
  }

  const WeightStore& store_;
};

Status BindLayer(const Binder& b, ModelConfig& c, int64_t l, LayerWeights& w) {
  const int64_t h = c.hidden_size, q = c.q_dim(), kv = c.kv_dim(), ff = c.intermediate_size;
  DI_ASSIGN_OR_RETURN(w.attn_norm, b.Vector(TensorRole::kAttnNorm, l, h, true));
  DI_ASSIGN_OR_RETURN(w.q, b.Matrix(TensorRole::kQ, l, q, h));
  DI_ASSIGN_OR_RETURN(w.k, b.Matrix(TensorRole::kK, l, kv, h));
  DI_ASSIGN_OR_RETURN(w.v, b.Matrix(TensorRole::kV, l, kv, h));
  DI_ASSIGN_OR_RETURN(w.o, b.Matrix(TensorRole::kO, l, h, q));
  // q/k/v biases are required when the config says so (Qwen2 always) and
  // used when present otherwise; the o bias (Llama attention_bias) is optional.
  DI_ASSIGN_OR_RETURN(w.q_bias, b.Vector(TensorRole::kQBias, l, q, c.attention_bias));
  DI_ASSIGN_OR_RETURN(w.k_bias, b.Vector(TensorRole::kKBias, l, kv, c.attention_bias));
  DI_ASSIGN_OR_RETURN(w.v_bias, b.Vector(TensorRole::kVBias, l, kv, c.attention_bias));
  DI_ASSIGN_OR_RETURN(w.o_bias, b.Vector(TensorRole::kOBias, l, h, false));
  if (c.qk_norm) {
    DI_ASSIGN_OR_RETURN(w.q_norm, b.Vector(TensorRole::kQNorm, l, c.head_dim, true));
    DI_ASSIGN_OR_RETURN(w.k_norm, b.Vector(TensorRole::kKNorm, l, c.head_dim, true));
  }
  DI_ASSIGN_OR_RETURN(w.ffn_norm, b.Vector(TensorRole::kFfnNorm, l, h, true));
  DI_ASSIGN_OR_RETURN(w.gate, b.Matrix(TensorRole::kGate, l, ff, h));
  DI_ASSIGN_OR_RETURN(w.up, b.Matrix(TensorRole::kUp, l, ff, h));
  DI_ASSIGN_OR_RETURN(w.down, b.Matrix(TensorRole::kDown, l, h, ff));
  if (!w.q_bias.empty() && !w.k_bias.empty() && !w.v_bias.empty()) {
    c.attention_bias = true;
  }
  return Status::Ok();
}

// Fills `w` and completes `c` (attention_bias when biases are present).
Status BindWeights(const WeightStore& store, ModelConfig& c, LlamaWeights& w) {
  Binder b(store);
  DI_ASSIGN_OR_RETURN(w.token_embedding,
                      b.Matrix(TensorRole::kTokenEmbedding, -1, c.vocab_size, c.hidden_size));
  DI_ASSIGN_OR_RETURN(w.output_norm, b.Vector(TensorRole::kOutputNorm, -1, c.hidden_size, true));
  if (c.tie_word_embeddings) {
    w.output = w.token_embedding;
  } else if (b.Find(TensorRole::kOutput) == nullptr) {
    return NotFound(store.source() + ": tensor '" + WeightName(store.naming(), TensorRole::kOutput) +
                    "' is missing and the embeddings are not tied");
  } else {
    DI_ASSIGN_OR_RETURN(w.output, b.Matrix(TensorRole::kOutput, -1, c.vocab_size, c.hidden_size));
  }
  DI_ASSIGN_OR_RETURN(w.rope_freq_factors, b.Vector(TensorRole::kRopeFreqs, -1, c.rope_dim / 2, false));
  w.layers.resize(static_cast<size_t>(c.num_layers));
  for (int64_t l = 0; l < c.num_layers; ++l) {
    DI_RETURN_IF_ERROR(BindLayer(b, c, l, w.layers[static_cast<size_t>(l)]));
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// The model.

class LlamaModel : public Model {
 public:
  LlamaModel(ModelConfig config, std::shared_ptr<const WeightStore> store, LlamaWeights weights, Rope rope,
             int num_threads)
      : config_(std::move(config)),
        store_(std::move(store)),
        w_(std::move(weights)),
        rope_(std::move(rope)),
        pool_(num_threads) {
    // Repack the quantized projections once into the kernels' layout (a no-op
    // where the ISA has none; docs/kernels.md). The embedding is read row-wise
    // and is never packed, hence neither is a tied output matrix.
    for (LayerWeights& l : w_.layers) {
      for (ops::Matrix* t : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) backend_weights_.Prepare(*t);
    }
    if (w_.output.data != w_.token_embedding.data) backend_weights_.Prepare(w_.output);
  }

  const ModelConfig& config() const override { return config_; }
  Status Forward(const ForwardBatch& batch, KvCache& kv, float* logits_out) override {
    return ForwardWithHidden(batch, kv, logits_out, nullptr);
  }
  Status ForwardWithHidden(const ForwardBatch& batch, KvCache& kv, float* logits_out,
                           float* hidden_out) override;

 private:
  Status CheckBatch(const ForwardBatch& batch, const KvCache& kv) const;
  void Embed();
  void AttentionBlock(int64_t layer, const ForwardBatch& batch, KvCache& kv);
  void MlpBlock(int64_t layer);
  void Logits(float* logits_out, float* hidden_out);

  ModelConfig config_;
  std::shared_ptr<const WeightStore> store_;  // keeps the tensors' bytes alive
  LlamaWeights w_;
  Rope rope_;
  ThreadPool pool_;
  ops::BackendWeights backend_weights_;  // owns the packed copies some matrices in w_ use

  // Per-step plan (T = tokens in the batch, R = logit rows).
  TokenPlan plan_;
  // Activations.
  std::vector<float> x_;     // f32 [T, hidden] residual stream
  std::vector<float> xn_;    // f32 [T, hidden] normed input of a sub-block
  std::vector<float> q_;     // f32 [T, q_dim]
  std::vector<float> k_;     // f32 [T, kv_dim]
  std::vector<float> v_;     // f32 [T, kv_dim]
  std::vector<float> attn_;  // f32 [T, q_dim] attention output
  std::vector<float> gate_;  // f32 [T, intermediate]
  std::vector<float> up_;    // f32 [T, intermediate]
  std::vector<float> proj_;  // f32 [T, hidden] sub-block output before the residual add
};

Status LlamaModel::CheckBatch(const ForwardBatch& batch, const KvCache& kv) const {
  if (kv.num_layers() != config_.num_layers || kv.kv_dim() != config_.kv_dim()) {
    return InvalidArgument("KV cache shape (" + std::to_string(kv.num_layers()) + " layers, kv_dim " +
                           std::to_string(kv.kv_dim()) + ") does not match the model");
  }
  // The oldest position any layer reads: 0 unless every layer is windowed.
  int64_t max_window = 0;
  bool all_windowed = true;
  for (int64_t w : config_.sliding_window) {
    all_windowed &= w > 0;
    max_window = std::max(max_window, w);
  }
  return ::deepinfer::CheckBatch(batch, config_.vocab_size, kv, all_windowed ? max_window : 0);
}

void LlamaModel::Embed() {
  const int64_t h = config_.hidden_size;
  const TensorView& e = w_.token_embedding;
  const int64_t row_bytes = RowBytes(e.dtype, h);
  for (size_t t = 0; t < plan_.token_ids.size(); ++t) {
    const auto* row = static_cast<const uint8_t*>(e.data) + plan_.token_ids[t] * row_bytes;
    DequantizeRow(e.dtype, row, x_.data() + t * h, h);
  }
}

void LlamaModel::AttentionBlock(int64_t l, const ForwardBatch& batch, KvCache& kv) {
  const LayerWeights& w = w_.layers[static_cast<size_t>(l)];
  const int64_t n_tokens = static_cast<int64_t>(plan_.token_ids.size());
  const int64_t h = config_.hidden_size, qd = config_.q_dim(), kvd = config_.kv_dim();
  const int64_t hd = config_.head_dim, nh = config_.num_heads, nkv = config_.num_kv_heads;
  const auto bias = [](const std::vector<float>& b) { return b.empty() ? nullptr : b.data(); };

  for (int64_t t = 0; t < n_tokens; ++t) {
    ops::RmsNorm(&x_[t * h], w.attn_norm.data(), h, config_.rms_norm_eps, &xn_[t * h]);
  }
  ops::SharedInputMatMul({{&w.q, bias(w.q_bias), q_.data()},
                          {&w.k, bias(w.k_bias), k_.data()},
                          {&w.v, bias(w.v_bias), v_.data()}},
                         xn_.data(), n_tokens, pool_);

  // q/k norm and RoPE per token, then K/V into the cache: every new token's
  // K/V must be in place before any token of its chunk attends.
  const int64_t bs = kv.block_size();
  ops::ParallelForCost(pool_, n_tokens, n_tokens * (qd + kvd) * 8, [&](int64_t b, int64_t e, int) {
    for (int64_t t = b; t < e; ++t) {
      float* qt = &q_[t * qd];
      float* kt = &k_[t * kvd];
      if (config_.qk_norm) {
        for (int64_t i = 0; i < nh; ++i) {
          ops::RmsNorm(qt + i * hd, w.q_norm.data(), hd, config_.rms_norm_eps, qt + i * hd);
        }
        for (int64_t i = 0; i < nkv; ++i) {
          ops::RmsNorm(kt + i * hd, w.k_norm.data(), hd, config_.rms_norm_eps, kt + i * hd);
        }
      }
      rope_.Apply(qt, nh, hd, plan_.positions[t]);
      rope_.Apply(kt, nkv, hd, plan_.positions[t]);
      const SequenceChunk& seq = batch.seqs[static_cast<size_t>(plan_.seq_of[t])];
      const int64_t pos = plan_.positions[t];
      const int32_t block = seq.block_table[static_cast<size_t>(pos / bs)];
      kv.WriteK(l, block, pos % bs, kt);
      kv.WriteV(l, block, pos % bs, &v_[t * kvd]);
    }
  });

  ops::AttentionParams p;
  p.layer = l;
  p.num_heads = nh;
  p.num_kv_heads = nkv;
  p.head_dim = hd;
  p.window = config_.sliding_window[static_cast<size_t>(l)];
  p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(hd)));
  std::vector<const std::vector<int32_t>*> tables(static_cast<size_t>(n_tokens));
  for (int64_t t = 0; t < n_tokens; ++t) tables[t] = &batch.seqs[static_cast<size_t>(plan_.seq_of[t])].block_table;
  ops::PagedAttention(q_.data(), n_tokens, plan_.positions.data(), tables, kv, p, pool_, attn_.data());

  ops::MatMul(w.o, attn_.data(), n_tokens, bias(w.o_bias), proj_.data(), pool_);
  for (int64_t i = 0; i < n_tokens * h; ++i) {
    x_[i] += proj_[i];
  }
}

void LlamaModel::MlpBlock(int64_t l) {
  const LayerWeights& w = w_.layers[static_cast<size_t>(l)];
  const int64_t n_tokens = static_cast<int64_t>(plan_.token_ids.size());
  const int64_t h = config_.hidden_size, ff = config_.intermediate_size;
  for (int64_t t = 0; t < n_tokens; ++t) {
    ops::RmsNorm(&x_[t * h], w.ffn_norm.data(), h, config_.rms_norm_eps, &xn_[t * h]);
  }
  ops::SharedInputMatMul({{&w.gate, nullptr, gate_.data()}, {&w.up, nullptr, up_.data()}}, xn_.data(), n_tokens,
                         pool_);
  ops::SiluMul(gate_.data(), up_.data(), n_tokens * ff);
  ops::MatMul(w.down, gate_.data(), n_tokens, nullptr, proj_.data(), pool_);
  for (int64_t i = 0; i < n_tokens * h; ++i) {
    x_[i] += proj_[i];
  }
}

void LlamaModel::Logits(float* logits_out, float* hidden_out) {
  const int64_t h = config_.hidden_size;
  const int64_t n_rows = static_cast<int64_t>(plan_.logit_rows.size());
  if (n_rows == 0) {
    return;
  }
  // Only the rows that need logits go through the final norm and LM head.
  for (int64_t r = 0; r < n_rows; ++r) {
    ops::RmsNorm(&x_[plan_.logit_rows[r] * h], w_.output_norm.data(), h, config_.rms_norm_eps, &xn_[r * h]);
  }
  if (hidden_out != nullptr) {  // the MTP draft's h_t: exactly the lm_head input
    std::memcpy(hidden_out, xn_.data(), sizeof(float) * static_cast<size_t>(n_rows * h));
  }
  ops::MatMul(w_.output, xn_.data(), n_rows, nullptr, logits_out, pool_);
}

Status LlamaModel::ForwardWithHidden(const ForwardBatch& batch, KvCache& kv, float* logits_out,
                                     float* hidden_out) {
  DI_RETURN_IF_ERROR(CheckBatch(batch, kv));
  if (logits_out == nullptr && batch.NumLogitRows() > 0) {
    return InvalidArgument("the batch asks for " + std::to_string(batch.NumLogitRows()) +
                           " logit rows but logits_out is null");
  }
  plan_.Build(batch);
  const size_t n_tokens = plan_.token_ids.size();
  if (n_tokens == 0) {
    return Status::Ok();
  }
  const auto n = [n_tokens](int64_t width) { return n_tokens * static_cast<size_t>(width); };
  x_.resize(n(config_.hidden_size));
  xn_.resize(n(config_.hidden_size));
  proj_.resize(n(config_.hidden_size));
  q_.resize(n(config_.q_dim()));
  attn_.resize(n(config_.q_dim()));
  k_.resize(n(config_.kv_dim()));
  v_.resize(n(config_.kv_dim()));
  gate_.resize(n(config_.intermediate_size));
  up_.resize(n(config_.intermediate_size));

  Embed();
  for (int64_t l = 0; l < config_.num_layers; ++l) {
    AttentionBlock(l, batch, kv);
    MlpBlock(l);
  }
  Logits(logits_out, hidden_out);
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<Model>> CreateLlamaModel(const ModelConfig& config,
                                                  std::shared_ptr<const WeightStore> weights,
                                                  int num_threads) {
  ModelConfig c = config;
  DI_RETURN_IF_ERROR(ValidateModelConfig(c));
  LlamaWeights w;
  DI_RETURN_IF_ERROR(BindWeights(*weights, c, w));
  DI_ASSIGN_OR_RETURN(Rope rope, Rope::Create(c, w.rope_freq_factors));
  if (num_threads <= 0) {
    num_threads = ThreadPool::DefaultThreadCount();
  }
  return std::unique_ptr<Model>(
      new LlamaModel(std::move(c), std::move(weights), std::move(w), std::move(rope), num_threads));
}

}  // namespace deepinfer
