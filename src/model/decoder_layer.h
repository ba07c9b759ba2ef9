// Building blocks of every decoder: a feed-forward interface (dense SwiGLU,
// mixture of experts) and a pre-norm decoder layer
// x += Attn(RMSNorm(x)); x += FFN(RMSNorm(x)) with Llama-style GQA attention.
// The dense Llama family (Llama, Mistral, Qwen2/3), the MoE architectures
// (Mixtral, Qwen2/3-MoE) and the MTP draft's block are stacks of these;
// DeepSeek swaps the attention for MLA (model/mla.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "model/forward_batch.h"
#include "model/gqa_attention.h"
#include "model/model.h"
#include "model/ops.h"
#include "model/rope.h"
#include "model/swiglu_mlp.h"
#include "model/token_plan.h"
#include "model/weight_binder.h"

namespace deepinfer {

// Visits the weight matrices a part reads only through ops::MatMul, so the
// caller may hand each to the backend (ops::BackendWeights::Prepare).
using MatrixVisitor = std::function<void(ops::Matrix&)>;

// gate, up, down (a view with null data, an absent part, is skipped).
void VisitSwiglu(SwigluWeights& w, const MatrixVisitor& visit);

// Activations of one layer's Forward, contents meaningless between calls. The
// layers of a stack run one after another, so the stack hands all of them one
// LayerScratch: the footprint of one layer's activations, not num_layers'.
struct LayerScratch {
  std::vector<float> xn, proj;  // f32 [T, hidden]: normed input, sub-block output
  GqaScratch attention;
  SwigluScratch ffn;
};

// A token-wise feed-forward: out f32 [n, hidden] from the normed input xn f32
// [n, hidden], using `scratch` for its SwiGLU activations. A token's output
// never depends on the other tokens. Not re-entrant (may hold scratch).
class FeedForward {
 public:
  virtual ~FeedForward() = default;
  virtual void Forward(const float* xn, int64_t n, ThreadPool& pool, SwigluScratch& scratch, float* out) = 0;
  virtual void VisitMatrices(const MatrixVisitor& visit) = 0;
};

class DenseFeedForward : public FeedForward {
 public:
  explicit DenseFeedForward(SwigluWeights w) : w_(std::move(w)) {}
  void Forward(const float* xn, int64_t n, ThreadPool& pool, SwigluScratch& scratch, float* out) override {
    SwigluForward(w_, xn, n, pool, scratch, out);
  }
  void VisitMatrices(const MatrixVisitor& visit) override { VisitSwiglu(w_, visit); }

 private:
  SwigluWeights w_;
};

// The dense MLP of decoder layer `layer` under the standard role names.
StatusOr<std::unique_ptr<FeedForward>> BindDenseFeedForward(const WeightBinder& b, const ModelConfig& c,
                                                            int64_t layer, int64_t ffn);

// One decoder layer over the residual stream x f32 [T, hidden] (updated in
// place), writing its K/V to cache layer `kv_layer`. Not re-entrant.
class DecoderLayer {
 public:
  virtual ~DecoderLayer() = default;
  virtual void Forward(const ForwardBatch& batch, const TokenPlan& plan, KvCache& kv, int64_t kv_layer,
                       ThreadPool& pool, LayerScratch& scratch, float* x) = 0;
  // Forward for a last layer whose output is read at the tokens `keep`
  // only (indices, increasing: the logit rows): every token's K/V is
  // written as Forward writes it, and x becomes the kept tokens' rows,
  // compacted (f32 [keep.size(), hidden]), each bit for bit its row of
  // Forward's x. A prompt chunk keeps one token of many, an MTP catch-up
  // one of a few: the others' attention and feed-forward are skipped (a
  // layer may also run Forward and CompactRows).
  virtual void ForwardKeeping(const ForwardBatch& batch, const TokenPlan& plan, KvCache& kv, int64_t kv_layer,
                              ThreadPool& pool, LayerScratch& scratch, float* x,
                              const std::vector<int64_t>& keep) = 0;
  // The attention's and the feed-forward's matrices (see MatrixVisitor).
  virtual void VisitMatrices(const MatrixVisitor& visit) = 0;
};

// x f32 [n, width] -> its rows keep[0], keep[1], ... (increasing) moved to
// rows 0, 1, ... in place.
void CompactRows(float* x, int64_t width, const std::vector<int64_t>& keep);

// The pre-norm residual block every decoder layer runs over x f32 [n, hidden]:
// x += Attn(RMSNorm(x)); x += FFN(RMSNorm(x)). `attend(xn, proj)` writes the
// attention output f32 [n, hidden] of the normed input xn f32 [n, hidden].
// With `keep` (DecoderLayer::ForwardKeeping), attend writes the kept rows'
// output only (f32 [keep.size(), hidden]) and x ends compacted to them.
void PreNormResidualForward(const ModelConfig& c, const std::vector<float>& attn_norm,
                            const std::vector<float>& ffn_norm, FeedForward& ffn, int64_t n, ThreadPool& pool,
                            LayerScratch& s, float* x,
                            const std::function<void(const float* xn, float* proj)>& attend,
                            const std::vector<int64_t>* keep = nullptr);

// Llama-style layer: attention tensors and norms of decoder layer `layer`
// (standard role names; q/k/v biases required iff config.attention_bias, the
// o bias optional, q/k norms iff config.qk_norm), the given feed-forward,
// window from config.sliding_window (0 when `layer` is beyond it, e.g. an
// MTP layer). Binds in the order attention norm, attention, MLP norm.
StatusOr<std::unique_ptr<DecoderLayer>> CreateGqaDecoderLayer(const WeightBinder& b, const ModelConfig& c,
                                                              std::shared_ptr<const Rope> rope, int64_t layer,
                                                              std::unique_ptr<FeedForward> ffn);

}  // namespace deepinfer
