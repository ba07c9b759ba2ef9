// Mixture-of-experts members of the Llama family (model/moe_model.h):
// Mixtral, Qwen2-MoE (q/k/v bias, gated shared expert), Qwen3-MoE (q/k norm).
// Their MoE keys, with the transformers config classes' defaults, and
// Mixtral's HF tensor names. llama.cpp writes Mixtral as GGUF `llama` with
// experts, Qwen-MoE as `qwen2moe` / `qwen3moe`.
#include "io/gguf.h"
#include "model/archs/archs.h"
#include "model/config_hf.h"
#include "model/moe_model.h"

namespace deepinfer::archs {

namespace {

using hf::GetBoolOr;
using hf::GetIntOr;
using hf::Json;
using hf::Present;

Status ReadMixtralHf(const Json& j, ModelConfig& c) {
  MoeConfig& m = c.moe;
  DI_ASSIGN_OR_RETURN(m.num_experts, GetIntOr(j, "num_local_experts", 8));
  DI_ASSIGN_OR_RETURN(m.experts_per_token, GetIntOr(j, "num_experts_per_tok", 2));
  m.expert_ffn = c.intermediate_size;
  m.norm_topk_prob = true;  // Mixtral always renormalizes the top-k weights
  m.sparse_layers.assign(static_cast<size_t>(c.num_layers), true);
  return Status::Ok();
}

bool IsGgufLlamaWithExperts(const GgufFile& gguf) {
  if (gguf.Find("llama.expert_count") == nullptr) return false;
  const StatusOr<int64_t> n = gguf.GetInt("llama.expert_count");
  return n.ok() && *n > 0;
}

StatusOr<std::unique_ptr<Model>> CreateMixtral(const ModelConfig& c,
                                               std::shared_ptr<const WeightStore> weights, int num_threads) {
  HfMoeNames names;
  names.block = "block_sparse_moe.";
  names.gate = "w1";
  names.up = "w3";
  names.down = "w2";
  return CreateMoeModel(c, std::move(weights), num_threads, names);
}

// The Qwen2MoeConfig / Qwen3MoeConfig defaults of the keys that differ.
struct QwenMoeDefaults {
  int64_t num_experts, experts_per_token, expert_ffn;
  int64_t shared_ffn;  // 0: the config class has no shared expert
};

Status ReadQwenMoeHf(const Json& j, const QwenMoeDefaults& d, ModelConfig& c) {
  MoeConfig& m = c.moe;
  DI_ASSIGN_OR_RETURN(m.num_experts, GetIntOr(j, "num_experts", d.num_experts));
  DI_ASSIGN_OR_RETURN(m.experts_per_token, GetIntOr(j, "num_experts_per_tok", d.experts_per_token));
  DI_ASSIGN_OR_RETURN(m.expert_ffn, GetIntOr(j, "moe_intermediate_size", d.expert_ffn));
  DI_ASSIGN_OR_RETURN(m.norm_topk_prob, GetBoolOr(j, "norm_topk_prob", false));
  if (d.shared_ffn > 0) {
    DI_ASSIGN_OR_RETURN(m.shared_ffn, GetIntOr(j, "shared_expert_intermediate_size", d.shared_ffn));
    m.shared_expert_gate = m.shared_ffn > 0;
  }
  DI_ASSIGN_OR_RETURN(int64_t step, GetIntOr(j, "decoder_sparse_step", 1));
  if (step <= 0) {
    return InvalidArgument("config.json: 'decoder_sparse_step' must be positive");
  }
  m.sparse_layers.assign(static_cast<size_t>(c.num_layers), false);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    m.sparse_layers[static_cast<size_t>(l)] = m.num_experts > 0 && (l + 1) % step == 0;
  }
  if (Present(j, "mlp_only_layers")) {
    const Json& only = j.at("mlp_only_layers");
    if (!only.is_array()) {
      return InvalidArgument("config.json: 'mlp_only_layers' must be a list of layer indices");
    }
    for (const Json& v : only) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= c.num_layers) {
        return InvalidArgument("config.json: 'mlp_only_layers' has an entry that is not a layer index");
      }
      m.sparse_layers[static_cast<size_t>(v.get<int64_t>())] = false;
    }
  }
  return Status::Ok();
}

Status ReadQwen2MoeHf(const Json& j, ModelConfig& c) { return ReadQwenMoeHf(j, {60, 4, 1408, 5632}, c); }
Status ReadQwen3MoeHf(const Json& j, ModelConfig& c) { return ReadQwenMoeHf(j, {128, 8, 768, 0}, c); }

StatusOr<std::unique_ptr<Model>> CreateQwenMoe(const ModelConfig& c,
                                               std::shared_ptr<const WeightStore> weights, int num_threads) {
  return CreateMoeModel(c, std::move(weights), num_threads, HfMoeNames());
}

}  // namespace

// MixtralConfig: `sliding_window` on every layer, default none.
const ArchitectureSpec kMixtral = {
    .name = "mixtral",
    .hf_class = "MixtralForCausalLM",
    .gguf_name = "llama",
    .claims_gguf = IsGgufLlamaWithExperts,
    .gguf_rope = RopeStyle::kInterleaved,
    .hf_windows = HfWindowRule::kEveryLayer,
    .hf_default_window = 0,
    .read_hf = ReadMixtralHf,
    .gguf_moe = {.norm_topk_prob = true, .gated_shared_expert = false},
    .factory = CreateMixtral,
};

const ArchitectureSpec kQwen2Moe = {
    .name = "qwen2_moe",
    .hf_class = "Qwen2MoeForCausalLM",
    .gguf_name = "qwen2moe",
    .gguf_rope = RopeStyle::kNeox,
    .qkv_bias = true,
    .hf_windows = HfWindowRule::kLayerTypesOrMaxWindowLayers,
    .read_hf = ReadQwen2MoeHf,
    .gguf_moe = {.norm_topk_prob = false, .gated_shared_expert = true},
    .factory = CreateQwenMoe,
};

const ArchitectureSpec kQwen3Moe = {
    .name = "qwen3_moe",
    .hf_class = "Qwen3MoeForCausalLM",
    .gguf_name = "qwen3moe",
    .gguf_rope = RopeStyle::kNeox,
    .qk_norm = true,
    .hf_windows = HfWindowRule::kLayerTypesOrMaxWindowLayers,
    .read_hf = ReadQwen3MoeHf,
    .gguf_moe = {.norm_topk_prob = true, .gated_shared_expert = false},
    .factory = CreateQwenMoe,
};

}  // namespace deepinfer::archs
