// Mixture-of-experts feed-forward (routing rules in model_config.h's
// MoeConfig). Execution: router logits for every token, top-k routing per
// token, tokens grouped by expert and one SwiGLU pass per active expert over
// its tokens - all experts' gate / up in one grouped MatMul, all downs in
// another - then each token's expert outputs combined in its own top-k rank
// order, plus the shared expert. A token's result therefore never depends on
// the rest of the batch.
//
// Thread-safety: not re-entrant (scratch, load counters).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/decoder_layer.h"
#include "model/model_config.h"
#include "model/ops.h"
#include "model/swiglu_mlp.h"
#include "model/weight_binder.h"

namespace deepinfer {

// Routes one token: ids[k] and weights[k] (k = m.experts_per_token), in
// descending order of the choice value. logits f32 [num_experts]; bias f32
// [num_experts] or null. `scratch` is reused between calls.
void RouteToken(const float* logits, const float* bias, const MoeConfig& m, int32_t* ids, float* weights,
                std::vector<float>& scratch);

struct MoeWeights {
  ops::Matrix router;                  // [num_experts, hidden]
  std::vector<float> bias;             // f32 [num_experts] e_score_correction_bias; empty when absent
  std::vector<SwigluWeights> experts;  // [num_experts]
  SwigluWeights shared;                // empty (ffn() == 0) when the model has none
  ops::Matrix shared_gate;             // [1, hidden] (Qwen2-MoE); data null when absent
};

// HF tensor names of an MoE block under `model.layers.N.`: the block's
// prefix, and each routed expert's matrices `<block>experts.E.<gate>.weight`
// etc. The defaults are Qwen-MoE's and DeepSeek's; Mixtral's are
// `block_sparse_moe.` and w1 / w3 / w2 (model/archs/mixtral_qwen_moe.cc).
struct HfMoeNames {
  const char* block = "mlp.";
  const char* gate = "gate_proj";
  const char* up = "up_proj";
  const char* down = "down_proj";
};

// Binds the MoE tensors of decoder layer `layer`: HF names per `names`, GGUF
// llama.cpp names with stacked experts (`ffn_{gate,up,down}_exps` [E, rows, cols]).
Status BindMoeWeights(const WeightBinder& b, const ModelConfig& c, int64_t layer, const HfMoeNames& names,
                      MoeWeights& w);

class MoeFeedForward : public FeedForward {
 public:
  MoeFeedForward(const ModelConfig& c, MoeWeights w);
  void Forward(const float* xn, int64_t n, ThreadPool& pool, SwigluScratch& swiglu, float* out) override;
  void VisitMatrices(const MatrixVisitor& visit) override;
  // Tokens routed to each expert since construction (or the last reset).
  const std::vector<int64_t>& expert_load() const { return load_; }
  void ResetLoad() { load_.assign(load_.size(), 0); }

 private:
  const MoeConfig moe_;
  const int64_t hidden_;
  MoeWeights w_;
  std::vector<int64_t> load_;
  // Scratch, reused across calls (no allocation per call once warm).
  std::vector<float> logits_, route_scratch_, gathered_, gate_, up_, expert_out_;
  std::vector<float> shared_gate_, shared_up_, shared_out_, gate_logit_;
  std::vector<int32_t> ids_;
  std::vector<float> weights_;
  std::vector<int64_t> count_, fill_, row_of_;
  std::vector<ops::GroupedProjection> projections_;
};

}  // namespace deepinfer
