// Tokenizer::FromGguf: reads the tokenizer.ggml.* metadata keys, with
// llama.cpp's defaults for keys a file leaves out.
#include <cctype>

#include "core/log.h"
#include "io/gguf.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer {

namespace {

// Optional keys: absent -> `def`; present with the wrong type -> error.
StatusOr<bool> OptionalBool(const GgufFile& gguf, const std::string& key, bool def) {
  if (gguf.Find(key) == nullptr) return def;
  return gguf.GetBool(key);
}

// Special token ids: absent -> `def`; out of range (files use UINT32_MAX for
// "none") -> -1 with a warning, as llama.cpp ignores bad ids.
StatusOr<int32_t> OptionalTokenId(const GgufFile& gguf, const std::string& key, int32_t def,
                                  size_t n_tokens) {
  if (gguf.Find(key) == nullptr) return def;
  DI_ASSIGN_OR_RETURN(int64_t id, gguf.GetInt(key));
  if (id < 0 || id >= static_cast<int64_t>(n_tokens)) {
    if (id != 0xFFFFFFFFll && id != -1) {
      DI_LOG_WARN("%s: %s = %lld is out of range [0, %zu); ignored", gguf.path().c_str(), key.c_str(),
                  static_cast<long long>(id), n_tokens);
    }
    return -1;
  }
  return static_cast<int32_t>(id);
}

// Phi-3 GGUF files lack the per-token rstrip flags of the HF tokenizer;
// llama.cpp recognises the model by name and sets them.
bool IsPhi3(const GgufFile& gguf) {
  std::string name = gguf.GetStringOr("general.name", "");
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos;
}

void AddPhi3Strips(TokenizerData* data) {
  for (size_t id = 0; id < data->pieces.size(); ++id) {
    const TokenType type = id < data->types.size() ? data->types[id] : TokenType::kNormal;
    const std::string& piece = data->pieces[id];
    const bool special =
        type == TokenType::kControl || type == TokenType::kUserDefined || type == TokenType::kUnknown;
    const bool excluded = piece == "<unk>" || piece == "<s>" || piece == "<|endoftext|>";
    if ((special || piece == "</s>") && !excluded) data->rstrip_ids.push_back(static_cast<int32_t>(id));
  }
}

StatusOr<TokenizerData> LoadGguf(const GgufFile& gguf) {
  TokenizerData data;
  DI_ASSIGN_OR_RETURN(std::string model, gguf.GetString("tokenizer.ggml.model"));
  bool llama3_family = false;
  if (model == "llama") {
    data.kind = TokenizerKind::kSentencePieceBpe;
    data.pre = "default";
  } else if (model == "gpt2") {
    data.kind = TokenizerKind::kByteLevelBpe;
    data.pre = gguf.GetStringOr("tokenizer.ggml.pre", "default");
    llama3_family =
        data.pre == "llama3" || data.pre == "llama-v3" || data.pre == "llama-bpe" || data.pre == "falcon3";
  } else {
    return Unimplemented("tokenizer.ggml.model '" + model + "' is not supported (only 'llama' and 'gpt2')");
  }

  DI_ASSIGN_OR_RETURN(data.pieces, gguf.GetStringArray("tokenizer.ggml.tokens"));
  const size_t n = data.pieces.size();
  if (n == 0) return InvalidArgument("tokenizer.ggml.tokens is empty");

  if (gguf.Find("tokenizer.ggml.scores") != nullptr) {
    DI_ASSIGN_OR_RETURN(std::vector<double> scores, gguf.GetFloatArray("tokenizer.ggml.scores"));
    if (scores.size() != n) {
      return InvalidArgument("tokenizer.ggml.scores has " + std::to_string(scores.size()) + " entries for " +
                             std::to_string(n) + " tokens");
    }
    data.scores.assign(scores.begin(), scores.end());
  }
  if (gguf.Find("tokenizer.ggml.token_type") != nullptr) {
    DI_ASSIGN_OR_RETURN(std::vector<int64_t> types, gguf.GetIntArray("tokenizer.ggml.token_type"));
    if (types.size() != n) {
      return InvalidArgument("tokenizer.ggml.token_type has " + std::to_string(types.size()) +
                             " entries for " + std::to_string(n) + " tokens");
    }
    data.types.reserve(n);
    for (int64_t t : types) {
      data.types.push_back(static_cast<TokenType>(t));  // Create maps unknown values to normal
    }
  }
  if (data.kind == TokenizerKind::kByteLevelBpe) {
    DI_ASSIGN_OR_RETURN(data.merges, gguf.GetStringArray("tokenizer.ggml.merges"));
  }

  const bool spm = data.kind == TokenizerKind::kSentencePieceBpe;
  DI_ASSIGN_OR_RETURN(data.bos_id, OptionalTokenId(gguf, "tokenizer.ggml.bos_token_id", spm ? 1 : -1, n));
  DI_ASSIGN_OR_RETURN(data.eos_id, OptionalTokenId(gguf, "tokenizer.ggml.eos_token_id", spm ? 2 : -1, n));
  DI_ASSIGN_OR_RETURN(data.unk_id, OptionalTokenId(gguf, "tokenizer.ggml.unknown_token_id", spm ? 0 : -1, n));
  DI_ASSIGN_OR_RETURN(data.pad_id, OptionalTokenId(gguf, "tokenizer.ggml.padding_token_id", -1, n));
  for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    DI_ASSIGN_OR_RETURN(int32_t id, OptionalTokenId(gguf, key, -1, n));
    if (id >= 0) data.extra_eos_ids.push_back(id);
  }
  DI_ASSIGN_OR_RETURN(data.add_bos, OptionalBool(gguf, "tokenizer.ggml.add_bos_token", spm || llama3_family));
  DI_ASSIGN_OR_RETURN(data.add_eos, OptionalBool(gguf, "tokenizer.ggml.add_eos_token", false));
  DI_ASSIGN_OR_RETURN(data.add_space_prefix, OptionalBool(gguf, "tokenizer.ggml.add_space_prefix", spm));
  data.ignore_merges = llama3_family;
  data.chat_template = gguf.GetStringOr("tokenizer.chat_template", "");
  if (IsPhi3(gguf)) AddPhi3Strips(&data);
  return data;
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromGguf(const GgufFile& gguf) {
  StatusOr<TokenizerData> data = LoadGguf(gguf);
  if (!data.ok()) return data.status().WithContext(gguf.path());
  auto tok = Create(std::move(data).value());
  if (!tok.ok()) return tok.status().WithContext(gguf.path());
  return tok;
}

}  // namespace deepinfer
