// DeepSeek-V2/V3 (model/deepseek.h): MLA + MoE (+ MTP layers). HF: the MLA,
// YaRN and routing keys with the DeepseekV2Config / DeepseekV3Config
// defaults. GGUF: llama.cpp writes both as `deepseek2` (model/deepseek_gguf.h);
// the routing tells them apart (sigmoid gating or a correction bias: V3).
#include "model/deepseek.h"

#include "model/archs/archs.h"
#include "model/config_hf.h"
#include "model/deepseek_gguf.h"

namespace deepinfer::archs {

namespace {

using hf::GetBoolOr;
using hf::GetFloatOr;
using hf::GetIntOr;
using hf::Json;
using hf::Present;

// MLA dims, YaRN extras, and the MoE keys (DeepseekV2Config /
// DeepseekV3Config defaults).
Status ReadDeepseekHf(const Json& j, bool v3, ModelConfig& c) {
  MlaConfig& a = c.mla;
  // An explicit null means "no q compression" (V2-Lite); absent means the class default.
  if (j.contains("q_lora_rank") && j.at("q_lora_rank").is_null()) {
    a.q_lora_rank = 0;
  } else {
    DI_ASSIGN_OR_RETURN(a.q_lora_rank, GetIntOr(j, "q_lora_rank", 1536));
  }
  DI_ASSIGN_OR_RETURN(a.kv_lora_rank, GetIntOr(j, "kv_lora_rank", 512));
  DI_ASSIGN_OR_RETURN(a.qk_nope_head_dim, GetIntOr(j, "qk_nope_head_dim", 128));
  DI_ASSIGN_OR_RETURN(a.qk_rope_head_dim, GetIntOr(j, "qk_rope_head_dim", 64));
  DI_ASSIGN_OR_RETURN(a.v_head_dim, GetIntOr(j, "v_head_dim", 128));
  if (a.q_lora_rank < 0 || a.kv_lora_rank <= 0 || a.qk_nope_head_dim <= 0 || a.qk_rope_head_dim <= 0 ||
      a.v_head_dim <= 0) {
    return InvalidArgument(
        "config.json: MLA dims (q_lora_rank, kv_lora_rank, qk_*_head_dim, v_head_dim) must be positive");
  }
  // The q/k head is [nope | rope]; MLA shares one latent for all heads.
  c.head_dim = a.qk_nope_head_dim + a.qk_rope_head_dim;
  c.rope_dim = a.qk_rope_head_dim;
  c.num_kv_heads = c.num_heads;
  c.rope_style = RopeStyle::kInterleaved;
  const char* key = Present(j, "rope_scaling") ? "rope_scaling" : "rope_parameters";
  if (c.rope_scaling.type == "yarn" && Present(j, key)) {
    const Json& s = j.at(key);
    DI_ASSIGN_OR_RETURN(c.yarn.beta_fast, GetFloatOr(s, "beta_fast", 32));
    DI_ASSIGN_OR_RETURN(c.yarn.beta_slow, GetFloatOr(s, "beta_slow", 1));
    DI_ASSIGN_OR_RETURN(c.yarn.mscale, GetFloatOr(s, "mscale", 1));
    DI_ASSIGN_OR_RETURN(c.yarn.mscale_all_dim, GetFloatOr(s, "mscale_all_dim", 0));
    DI_ASSIGN_OR_RETURN(c.rope_scaling.original_max_position,
                        GetIntOr(s, "original_max_position_embeddings", 4096));
  }

  MoeConfig& m = c.moe;
  DI_ASSIGN_OR_RETURN(m.num_experts, GetIntOr(j, "n_routed_experts", v3 ? 256 : 0));
  if (m.num_experts <= 0) {
    m.num_experts = 0;
    return Status::Ok();
  }
  DI_ASSIGN_OR_RETURN(m.experts_per_token, GetIntOr(j, "num_experts_per_tok", v3 ? 8 : 0));
  DI_ASSIGN_OR_RETURN(m.expert_ffn, GetIntOr(j, "moe_intermediate_size", v3 ? 2048 : 1407));
  DI_ASSIGN_OR_RETURN(int64_t shared, GetIntOr(j, "n_shared_experts", v3 ? 1 : 0));
  m.shared_ffn = shared * m.expert_ffn;
  DI_ASSIGN_OR_RETURN(bool norm, GetBoolOr(j, "norm_topk_prob", v3));
  DI_ASSIGN_OR_RETURN(double scale, GetFloatOr(j, "routed_scaling_factor", v3 ? 2.5 : 1.0));
  std::string method = v3 ? "noaux_tc" : "greedy";
  if (Present(j, "topk_method") && j.at("topk_method").is_string()) {
    method = j.at("topk_method").get<std::string>();
  }
  std::string scoring = v3 ? "sigmoid" : "softmax";
  if (Present(j, "scoring_func") && j.at("scoring_func").is_string()) {
    scoring = j.at("scoring_func").get<std::string>();
  }
  if (scoring != "softmax" && scoring != "sigmoid") {
    return Unimplemented("config.json: scoring_func '" + scoring + "' is not supported (softmax, sigmoid)");
  }
  m.sigmoid_scoring = scoring == "sigmoid";
  if (method == "noaux_tc") {
    m.score_correction_bias = true;
  } else if (method != "greedy" && method != "group_limited_greedy") {
    return Unimplemented("config.json: topk_method '" + method + "' is not supported");
  }
  if (method != "greedy") {
    DI_ASSIGN_OR_RETURN(m.n_group, GetIntOr(j, "n_group", 1));
    DI_ASSIGN_OR_RETURN(m.topk_group, GetIntOr(j, "topk_group", m.n_group));
  }
  if (v3) {  // V3 always scales; renormalizes iff norm_topk_prob
    m.norm_topk_prob = norm;
    m.routed_scaling_factor = scale;
  } else {  // V2 renormalizes (top_k > 1 and norm_topk_prob) or else scales
    m.norm_topk_prob = norm && m.experts_per_token > 1;
    m.routed_scaling_factor = m.norm_topk_prob ? 1.0 : scale;
  }
  DI_ASSIGN_OR_RETURN(int64_t first_dense, GetIntOr(j, "first_k_dense_replace", v3 ? 3 : 0));
  DI_ASSIGN_OR_RETURN(int64_t freq, GetIntOr(j, "moe_layer_freq", 1));
  if (freq <= 0) {
    return InvalidArgument("config.json: 'moe_layer_freq' must be positive");
  }
  m.sparse_layers.assign(static_cast<size_t>(c.num_layers), false);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    m.sparse_layers[static_cast<size_t>(l)] = l >= first_dense && l % freq == 0;
  }
  return Status::Ok();
}

Status ReadDeepseekV2Hf(const Json& j, ModelConfig& c) { return ReadDeepseekHf(j, /*v3=*/false, c); }
Status ReadDeepseekV3Hf(const Json& j, ModelConfig& c) { return ReadDeepseekHf(j, /*v3=*/true, c); }

Status ReadDeepseek2Gguf(const GgufFile& gguf, ModelConfig& c) {
  DI_RETURN_IF_ERROR(ReadDeepseek2GgufConfig(gguf, c));
  c.arch = c.moe.sigmoid_scoring || c.moe.score_correction_bias ? kDeepseekV3.name : kDeepseekV2.name;
  return Status::Ok();
}

}  // namespace

// Both: `layer_types` (hybrid SWA variants) or no window.
const ArchitectureSpec kDeepseekV2 = {
    .name = "deepseek_v2",
    .hf_class = "DeepseekV2ForCausalLM",
    .gguf_name = "deepseek2",
    .gguf_rope = RopeStyle::kInterleaved,
    .hf_windows = HfWindowRule::kLayerTypes,
    .read_hf = ReadDeepseekV2Hf,
    .read_gguf = ReadDeepseek2Gguf,
    .factory = CreateDeepseekModel,
};

const ArchitectureSpec kDeepseekV3 = {
    .name = "deepseek_v3",
    .hf_class = "DeepseekV3ForCausalLM",
    .gguf_name = "deepseek2",
    .gguf_rope = RopeStyle::kInterleaved,
    .hf_windows = HfWindowRule::kLayerTypes,
    .read_hf = ReadDeepseekV3Hf,
    .read_gguf = ReadDeepseek2Gguf,
    .factory = CreateDeepseekModel,
};

}  // namespace deepinfer::archs
