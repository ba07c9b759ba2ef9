// Writes the fuzz seed corpora: OUT/corpus_gguf, OUT/corpus_safetensors,
// OUT/corpus_model_config, OUT/corpus_http and OUT/corpus_grammar. Seeds are
// small valid files from the writers (every metadata type, several tensor
// dtypes) plus the first 4 KiB of the shared model files when present; the
// config corpus holds config.json texts ('J' first) and metadata-only GGUF
// images ('G' first) of every family; the HTTP corpus whole requests of both
// APIs; the grammar corpus every JSON Schema of the grammar test data (the
// held-out real-world set and the keyword cases, so a short run starts from
// every keyword the compiler enforces) and the CLI test grammars, each behind
// fuzz_grammar's front-end byte.
// usage: fuzz_make_seeds OUT_DIR [SHARED_DIR [GRAMMAR_TESTDATA_DIR]]
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/gguf.h"
#include "io/safetensors.h"

namespace {

using namespace deepinfer;

void CopyPrefix(const std::string& from, const std::string& to, size_t n) {
  std::ifstream in(from, std::ios::binary);
  if (!in) return;
  std::vector<char> buf(n);
  in.read(buf.data(), static_cast<std::streamsize>(n));
  std::ofstream(to, std::ios::binary).write(buf.data(), in.gcount());
}

int Check(const Status& st) {
  if (st.ok()) return 0;
  std::fprintf(stderr, "fuzz_make_seeds: %s\n", st.ToString().c_str());
  return 1;
}

// The config corpus: one seed per family, in fuzz_model_config's format.
int WriteConfigSeeds(const std::string& dir, const std::string& shared) {
  std::filesystem::create_directories(dir);
  const char* hf[] = {
      R"({"architectures":["LlamaForCausalLM"],"vocab_size":512,"hidden_size":64,"intermediate_size":172,
"num_hidden_layers":5,"num_attention_heads":8,"num_key_value_heads":4,"head_dim":8,"max_position_embeddings":512,
"rope_scaling":{"rope_type":"llama3","factor":8.0,"low_freq_factor":1.0,"high_freq_factor":4.0,
"original_max_position_embeddings":8192},"num_nextn_predict_layers":1})",
      R"({"architectures":["Qwen2ForCausalLM"],"vocab_size":300,"hidden_size":64,"intermediate_size":96,
"num_hidden_layers":4,"num_attention_heads":4,"num_key_value_heads":2,"use_sliding_window":true,
"sliding_window":16,"max_window_layers":2})",
      R"({"architectures":["Qwen3ForCausalLM"],"vocab_size":300,"hidden_size":64,"intermediate_size":96,
"num_hidden_layers":3,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":32,"sliding_window":8,
"layer_types":["sliding_attention","full_attention","sliding_attention"]})",
      R"({"architectures":["MistralForCausalLM"],"vocab_size":300,"hidden_size":64,"intermediate_size":96,
"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"sliding_window":32})",
      R"({"architectures":["MixtralForCausalLM"],"vocab_size":300,"hidden_size":64,"intermediate_size":96,
"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"num_local_experts":4,
"num_experts_per_tok":2})",
      R"({"architectures":["DeepseekV3ForCausalLM"],"vocab_size":300,"hidden_size":64,"intermediate_size":96,
"num_hidden_layers":3,"num_attention_heads":4,"num_key_value_heads":4,"q_lora_rank":32,"kv_lora_rank":16,
"qk_nope_head_dim":16,"qk_rope_head_dim":8,"v_head_dim":16,"n_routed_experts":8,"num_experts_per_tok":2,
"moe_intermediate_size":32,"n_shared_experts":1,"first_k_dense_replace":1,"n_group":2,"topk_group":1,
"scoring_func":"sigmoid","topk_method":"noaux_tc","norm_topk_prob":true,"routed_scaling_factor":2.5,
"rope_scaling":{"type":"yarn","factor":4.0,"original_max_position_embeddings":512,"mscale":1.0,
"mscale_all_dim":1.0,"beta_fast":32,"beta_slow":1},"num_nextn_predict_layers":1})",
      R"({"architectures":["Gemma2ForCausalLM"],"vocab_size":300,"hidden_size":64,"intermediate_size":96,
"num_hidden_layers":4,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":32,"query_pre_attn_scalar":24,
"hidden_activation":"gelu_pytorch_tanh","attn_logit_softcapping":50.0,"final_logit_softcapping":null,
"sliding_window":16})",
      R"({"architectures":["Gemma3ForCausalLM"],"vocab_size":300,"hidden_size":64,"intermediate_size":96,
"num_hidden_layers":6,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":32,"sliding_window":16,
"sliding_window_pattern":6,"rope_local_base_freq":10000.0,"rope_scaling":{"rope_type":"linear","factor":8.0}})",
  };
  int n = 0;
  for (const char* text : hf) {
    std::ofstream(dir + "/hf_" + std::to_string(n++) + ".json", std::ios::binary) << 'J' << text;
  }
  if (!shared.empty()) {
    std::ifstream in(shared + "/models/stories260K-mtp/config.json", std::ios::binary);
    if (in) {
      std::ofstream(dir + "/hf_stories_mtp.json", std::ios::binary) << 'J' << in.rdbuf();
    }
  }
  GgufWriter g;
  g.SetString("general.architecture", "llama");
  g.SetU32("llama.embedding_length", 64);
  g.SetU32("llama.block_count", 5);
  g.SetU32("llama.feed_forward_length", 172);
  g.SetU32("llama.attention.head_count", 8);
  g.SetU32("llama.attention.head_count_kv", 4);
  g.SetF32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  g.SetU32("llama.context_length", 512);
  g.SetU32("llama.vocab_size", 512);
  g.SetI32Array("llama.attention.sliding_window", {0, 8, 0, 8, 0});
  g.SetString("llama.rope.scaling.type", "linear");
  g.SetF32("llama.rope.scaling.factor", 2.0f);
  g.SetU32("llama.expert_count", 4);
  g.SetU32("llama.expert_used_count", 2);
  g.AddTensor("token_embd.weight", DType::kF32, {2, 4}, std::vector<uint8_t>(32, 0));
  const std::string tmp = dir + "/llama.gguf.tmp";
  int rc = Check(g.Write(tmp));
  if (rc == 0) {
    std::ifstream in(tmp, std::ios::binary);
    std::ofstream(dir + "/gguf_llama.bin", std::ios::binary) << 'G' << in.rdbuf();
  }
  std::filesystem::remove(tmp);
  return rc;
}

// The HTTP corpus: whole requests (header + JSON body) of both APIs.
void WriteHttpSeeds(const std::string& dir) {
  std::filesystem::create_directories(dir);
  const char* bodies[] = {
      R"({"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0.7, "top_p": 0.9, "top_k": 40,
"seed": 3, "n": 2, "stop": ["\n", "."], "logprobs": 2, "echo": true, "stream": true,
"stream_options": {"include_usage": true}})",
      R"({"prompt": [[1, 403, 407], [1, 2]], "max_tokens": 4, "logit_bias": {"5": -100}, "ignore_eos": true,
"stop_token_ids": [2], "presence_penalty": 0.5, "frequency_penalty": 0.1, "repetition_penalty": 1.1})",
      R"({"prompt": "x", "guided_json": {"type": "object", "properties": {"a": {"type": "string"}}},
"min_p": 0.05, "priority": 1, "user": "u"})",
      R"({"prompt": "x", "guided_regex": "[a-z]{1,5}"})",
      R"({"prompt": "x", "guided_grammar": "root ::= \"a\" | \"b\""})",
      R"({"prompt": "x", "guided_choice": ["yes", "no"]})",
      R"({"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"},
{"role": "assistant", "content": [{"type": "text", "text": "hello"}]}], "max_completion_tokens": 5,
"logprobs": true, "top_logprobs": 3, "response_format": {"type": "json_object"}})",
      R"({"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "json_schema",
"json_schema": {"name": "x", "schema": {"type": "array", "items": {"type": "integer"}}}}})",
  };
  int n = 0;
  for (const char* body : bodies) {
    const std::string b = body;
    const std::string path =
        b.find("messages") != std::string::npos ? "/v1/chat/completions" : "/v1/completions";
    std::ofstream(dir + "/request_" + std::to_string(n++) + ".http", std::ios::binary)
        << "POST " << path << " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\n"
        << "Content-Type: application/json\r\nContent-Length: " << b.size() << "\r\n\r\n"
        << b;
  }
  std::ofstream(dir + "/chunked.http", std::ios::binary)
      << "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      << "e\r\n{\"prompt\": \"a\"}\r\n0\r\n\r\n";
  std::ofstream(dir + "/get.http", std::ios::binary) << "GET /health HTTP/1.0\r\n\r\n";
}

}  // namespace

std::string ReadText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// fuzz_grammar's first byte: 1 = JSON Schema (strict), 2 = JSON Schema (any
// whitespace, best effort), 3 = GBNF, 4 = Lark. Schemas alternate 1 and 2.
int WriteGrammarSeeds(const std::string& dir, const std::filesystem::path& testdata) {
  std::filesystem::create_directories(dir);
  int written = 0;
  const auto write = [&](char front_end, const std::string& text) {
    std::ofstream(dir + "/seed_" + std::to_string(written++), std::ios::binary) << front_end << text;
  };
  for (const char* file :
       {"heldout_schemas.json", "json_schema_cases.json", "json_schema_draft4_cases.json"}) {
    const nlohmann::json cases =
        nlohmann::json::parse(ReadText(testdata / file), nullptr, /*allow_exceptions=*/false);
    if (!cases.is_array()) {
      std::fprintf(stderr, "fuzz_make_seeds: %s is missing or not a JSON array\n", (testdata / file).c_str());
      return 1;
    }
    for (const nlohmann::json& c : cases) {
      if (c.is_object() && c.contains("schema"))
        write(written % 2 == 0 ? '\x01' : '\x02', c["schema"].dump());
    }
  }
  write('\x03', ReadText(testdata / "cli/expr.gbnf"));
  write('\x04', ReadText(testdata / "cli/intlist.lark"));
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: fuzz_make_seeds OUT_DIR [SHARED_DIR [GRAMMAR_TESTDATA_DIR]]\n");
    return 2;
  }
  const std::string out = argv[1];
  const std::string gdir = out + "/corpus_gguf", sdir = out + "/corpus_safetensors";
  std::filesystem::create_directories(gdir);
  std::filesystem::create_directories(sdir);

  GgufWriter g;
  g.SetString("general.architecture", "llama");
  g.SetU32("general.alignment", 32);
  g.SetI32("i", -3);
  g.SetU64("u", 1ull << 33);
  g.SetF32("f", 0.5f);
  g.SetBool("b", true);
  g.SetStringArray("tokenizer.ggml.tokens", {"<s>", "a", "b"});
  g.SetF32Array("s", {0.f, 1.f});
  g.SetI32Array("t", {1, 2, 3});
  g.SetBoolArray("w", {true, false});
  g.AddTensor("f32", DType::kF32, {2, 4}, std::vector<uint8_t>(32, 0x3f));
  g.AddTensor("f16", DType::kF16, {8}, std::vector<uint8_t>(16, 0x3c));
  g.AddTensor("q8", DType::kQ8_0, {32}, std::vector<uint8_t>(34, 1));
  g.AddTensor("q4k", DType::kQ4_K, {256}, std::vector<uint8_t>(144, 7));
  g.AddTensor("q6k", DType::kQ6_K, {256}, std::vector<uint8_t>(210, 9));
  int rc = Check(g.Write(gdir + "/writer.gguf"));
  GgufWriter empty;
  empty.SetString("k", "v");
  rc |= Check(empty.Write(gdir + "/metadata_only.gguf"));

  SafetensorsWriter s;
  s.SetMetadata("format", "pt");
  s.AddTensor("a", DType::kF32, {2, 2}, std::vector<uint8_t>(16, 0));
  s.AddTensor("b", DType::kBF16, {3}, std::vector<uint8_t>(6, 0x3f));
  s.AddTensor("c", DType::kI64, {1}, std::vector<uint8_t>(8, 0));
  s.AddTensor("e", DType::kF16, {0, 4}, std::vector<uint8_t>());
  rc |= Check(s.Write(sdir + "/writer.safetensors"));

  rc |= WriteConfigSeeds(out + "/corpus_model_config", argc > 2 ? argv[2] : "");
  WriteHttpSeeds(out + "/corpus_http");
  if (argc > 3) rc |= WriteGrammarSeeds(out + "/corpus_grammar", argv[3]);
  if (argc > 2) {
    const std::string shared = argv[2];
    CopyPrefix(shared + "/models/gguf/stories260K.gguf", gdir + "/stories_prefix.gguf", 4096);
    CopyPrefix(shared + "/models/vocab/ggml-vocab-gpt-2.gguf", gdir + "/vocab_prefix.gguf", 4096);
    CopyPrefix(shared + "/models/stories260K-mtp/model.safetensors", sdir + "/mtp_prefix.safetensors", 8192);
  }
  return rc;
}
