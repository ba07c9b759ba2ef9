// The HF copy of a synth model: config.json, model.safetensors (streamed),
// tokenizer.json, tokenizer_config.json, generation_config.json.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "io/safetensors.h"
#include "model/registry.h"
#include "synth/imported_tokenizer.h"
#include "synth/internal.h"
#include "synth/vocab.h"

namespace deepinfer::synth_internal {
namespace {

using json = nlohmann::ordered_json;

const char* TorchDType(DType t) {
  switch (t) {
    case DType::kF16:
      return "float16";
    case DType::kBF16:
      return "bfloat16";
    default:
      return "float32";
  }
}

json ConfigJson(const SynthSpec& s, DType dtype) {
  // The names come from the architecture registry, as the loader reads them.
  const ArchitectureSpec* spec = FindArchitectureByName(s.arch);
  DI_CHECK_MSG(spec != nullptr, "synth: an unregistered architecture reached the HF writer");
  json j;
  j["architectures"] = {spec->hf_class};
  j["model_type"] = spec->name;
  j["hidden_size"] = s.hidden;
  j["intermediate_size"] = s.ffn;
  j["num_hidden_layers"] = s.layers;
  j["num_attention_heads"] = s.heads;
  j["num_key_value_heads"] = s.kv_heads;
  j["head_dim"] = s.head_dim;
  j["vocab_size"] = s.vocab;
  j["max_position_embeddings"] = s.context;
  j["rms_norm_eps"] = s.rms_eps;
  j["rope_theta"] = s.rope_theta;
  if (s.rope_llama3) {
    const auto& r = *s.rope_llama3;
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", r.factor},
                         {"low_freq_factor", r.low_freq_factor},
                         {"high_freq_factor", r.high_freq_factor},
                         {"original_max_position_embeddings", r.original_context}};
  } else {
    j["rope_scaling"] = nullptr;
  }
  j["hidden_act"] = s.gemma ? "gelu_pytorch_tanh" : "silu";
  if (s.gemma) {
    const bool g3 = s.arch == "gemma3";
    j["model_type"] = g3 ? "gemma3_text" : "gemma2";
    j["hidden_activation"] = "gelu_pytorch_tanh";
    j["query_pre_attn_scalar"] = s.query_pre_attn_scalar;
    j["attn_logit_softcapping"] = s.attn_softcap > 0 ? json(s.attn_softcap) : json(nullptr);
    j["final_logit_softcapping"] = s.final_softcap > 0 ? json(s.final_softcap) : json(nullptr);
    j["sliding_window"] = s.sliding_window;
    if (g3) {  // Gemma-3 as its older configs say it: the pattern, not layer_types
      int64_t pattern = 0;
      while (pattern < s.layers && s.sliding_layers[static_cast<size_t>(pattern)]) ++pattern;
      j["sliding_window_pattern"] = pattern + 1;
      j["rope_local_base_freq"] = s.rope_local_theta;
      if (s.rope_linear_factor > 0) {
        j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", s.rope_linear_factor}};
      }
    } else {
      json types = json::array();
      for (bool sl : s.sliding_layers) types.push_back(sl ? "sliding_attention" : "full_attention");
      j["layer_types"] = types;
    }
  }
  if (s.arch != "qwen2" && s.arch != "qwen2_moe") {
    j["attention_bias"] = s.qkv_bias;  // Qwen2 always has q/k/v biases
  }
  if (s.arch == "llama" || s.arch == "mistral") j["mlp_bias"] = false;
  if (s.mtp_layers > 0) j["num_nextn_predict_layers"] = s.mtp_layers;
  if (s.arch == "mistral") {
    j["sliding_window"] = s.sliding_window;
    json types = json::array();
    for (bool sl : s.sliding_layers) types.push_back(sl ? "sliding_attention" : "full_attention");
    j["layer_types"] = types;
  }
  const bool qwen = s.arch == "qwen2" || s.arch == "qwen3" || s.arch == "qwen2_moe" || s.arch == "qwen3_moe";
  if (s.kv_lora > 0) {  // DeepSeek
    j["q_lora_rank"] = s.q_lora > 0 ? json(s.q_lora) : json(nullptr);
    j["kv_lora_rank"] = s.kv_lora;
    j["qk_nope_head_dim"] = s.qk_nope;
    j["qk_rope_head_dim"] = s.qk_rope;
    j["v_head_dim"] = s.v_head;
    j.erase("head_dim");
    j["n_routed_experts"] = s.experts;
    j["num_experts_per_tok"] = s.experts_per_token;
    j["moe_intermediate_size"] = s.expert_ffn;
    j["n_shared_experts"] = s.shared_experts;
    j["first_k_dense_replace"] = s.leading_dense_layers;
    j["moe_layer_freq"] = 1;
    j["n_group"] = s.n_group;
    j["topk_group"] = s.topk_group;
    j["topk_method"] = s.score_bias ? "noaux_tc" : "group_limited_greedy";
    j["scoring_func"] = s.sigmoid_scoring ? "sigmoid" : "softmax";
    j["norm_topk_prob"] = s.norm_topk_prob;
    j["routed_scaling_factor"] = s.routed_scaling;
    j["num_nextn_predict_layers"] = s.mtp_layers;
    if (s.yarn) {
      j["rope_scaling"] = {{"type", "yarn"},
                           {"factor", s.yarn->factor},
                           {"original_max_position_embeddings", s.yarn->original_context},
                           {"beta_fast", 32},
                           {"beta_slow", 1},
                           {"mscale", s.yarn->mscale},
                           {"mscale_all_dim", s.yarn->mscale_all_dim}};
    }
    if (!s.sliding_layers.empty()) {
      j["sliding_window"] = s.sliding_window;
      json types = json::array();
      for (bool sl : s.sliding_layers) types.push_back(sl ? "sliding_attention" : "full_attention");
      j["layer_types"] = types;
    }
  } else if (s.arch == "mixtral") {
    j["sliding_window"] = nullptr;
    j["num_local_experts"] = s.experts;
    j["num_experts_per_tok"] = s.experts_per_token;
  } else if (s.experts > 0) {
    j["num_experts"] = s.experts;
    j["num_experts_per_tok"] = s.experts_per_token;
    j["moe_intermediate_size"] = s.expert_ffn;
    j["norm_topk_prob"] = s.norm_topk_prob;
    j["decoder_sparse_step"] = 1;
    json only = json::array();
    for (int64_t l = 0; l < s.leading_dense_layers; ++l) only.push_back(l);
    j["mlp_only_layers"] = only;
    if (s.arch == "qwen2_moe") j["shared_expert_intermediate_size"] = s.shared_ffn;
  }
  if (qwen && !s.sliding_layers.empty()) {
    j["use_sliding_window"] = true;
    j["sliding_window"] = s.sliding_window;
    j["max_window_layers"] = s.layers;
    json types = json::array();
    for (bool sl : s.sliding_layers) types.push_back(sl ? "sliding_attention" : "full_attention");
    j["layer_types"] = types;
  } else if (qwen) {
    j["use_sliding_window"] = false;
    j["sliding_window"] = nullptr;
    j["max_window_layers"] = s.layers;
  }
  j["tie_word_embeddings"] = s.tie_embeddings;
  j["bos_token_id"] = 1;
  j["eos_token_id"] = 2;
  j["attention_dropout"] = 0.0;
  j["initializer_range"] = 0.02;
  j["use_cache"] = true;
  j["torch_dtype"] = TorchDType(dtype);
  return j;
}

Status WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return Internal(path + ": write failed");
  return Status::Ok();
}

Status WriteSynthTokenizerHf(const SynthSpec& spec, const std::string& out) {
  const SynthVocab v = BuildSynthVocab(spec.vocab);
  DI_RETURN_IF_ERROR(WriteText(out + "/tokenizer.json", SynthTokenizerJson(v)));

  const json tok_config = {{"add_bos_token", true},
                           {"add_eos_token", false},
                           {"bos_token", v.tokens[v.bos_id]},
                           {"eos_token", v.tokens[v.eos_id]},
                           {"unk_token", v.tokens[v.unk_id]},
                           {"clean_up_tokenization_spaces", false},
                           {"model_max_length", spec.context},
                           {"tokenizer_class", "PreTrainedTokenizerFast"}};
  DI_RETURN_IF_ERROR(WriteText(out + "/tokenizer_config.json", tok_config.dump(2) + "\n"));
  const json gen_config = {{"bos_token_id", v.bos_id}, {"eos_token_id", v.eos_id}, {"do_sample", false}};
  DI_RETURN_IF_ERROR(WriteText(out + "/generation_config.json", gen_config.dump(2) + "\n"));

  return Status::Ok();
}

Status WriteSynthWeightsHf(const SynthSpec& spec, const SynthOptions& o) {
  // Every tensor, norms included, in the checkpoint dtype (as HF saves them).
  // Stacked expert tensors are separate tensors per expert in HF.
  std::vector<SynthTensor> tensors;
  for (const SynthTensor& t : SynthTensors(spec)) {
    if (t.gguf_only) continue;
    if (t.hf_parts.empty()) {
      tensors.push_back(t);
    } else {
      for (size_t p = 0; p < t.hf_parts.size(); ++p) tensors.push_back(StackedPart(t, p));
    }
  }
  SafetensorsWriter w;
  w.SetMetadata("format", "pt");
  size_t i = 0;
  for (const SynthTensor& t : tensors) {
    w.AddTensor(t.hf_name, o.dtype, t.shape, [&t, &o, &i, n = tensors.size()]() {
      ReportProgress(o.progress, ++i, n, t.hf_name);
      return EncodeRows(SynthValues(t, o.seed), o.dtype, t.shape);
    });
  }
  return w.Write(o.out + "/model.safetensors");
}

}  // namespace

Status WriteSynthHf(const SynthSpec& spec, const SynthOptions& o, const ImportedTokenizer* imported) {
  std::error_code ec;
  std::filesystem::create_directories(o.out, ec);
  if (ec) return Internal(o.out + ": cannot create directory: " + ec.message());

  DI_RETURN_IF_ERROR(WriteText(o.out + "/config.json", ConfigJson(spec, o.dtype).dump(2) + "\n"));
  if (imported != nullptr) {
    DI_RETURN_IF_ERROR(WriteImportedTokenizerHf(*imported, o.out));
    const TokenizerData& d = imported->tokenizer->data();
    json gen_config = {{"do_sample", false}};
    if (d.bos_id >= 0) gen_config["bos_token_id"] = d.bos_id;
    if (d.eos_id >= 0) gen_config["eos_token_id"] = d.eos_id;
    DI_RETURN_IF_ERROR(WriteText(o.out + "/generation_config.json", gen_config.dump(2) + "\n"));
  } else {
    DI_RETURN_IF_ERROR(WriteSynthTokenizerHf(spec, o.out));
  }
  return WriteSynthWeightsHf(spec, o);
}

}  // namespace deepinfer::synth_internal
