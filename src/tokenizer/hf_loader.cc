// Tokenizer::FromHfFile / FromHfDir: HF tokenizer.json (optionally gzip'ed)
// plus tokenizer_config.json beside it.
//
// Supported: model.type BPE over a ByteLevel pre-tokenizer (possibly inside a
// Sequence with Split / Digits steps), merges as "a b" strings or [a, b]
// pairs, model.ignore_merges, added_tokens (special -> control, others ->
// user-defined; lstrip / rstrip honoured; single_word and normalized ignored),
// the NFC normalizer (treated as identity: inputs are expected in NFC
// already) and empty normalizer sequences. The decoder and post_processor
// sections are not read: byte-level decoding is implied, and BOS/EOS come
// from tokenizer_config.json. Anything else is Unimplemented.
// Every error names the file and the JSON field; the JSON library's
// exceptions never leave this file.
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tokenizer/hf_json_reader.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer {

namespace {

using nlohmann::json;

StatusOr<json> ParseJson(const std::string& path) {
  DI_ASSIGN_OR_RETURN(std::string text, ReadMaybeGzip(path));
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    return DataLoss(path + ": invalid JSON: " + e.what());
  }
}

// Field accessors that report "<file>: <field>: <problem>".
class Fields {
 public:
  explicit Fields(std::string file) : file_(std::move(file)) {}

  Status Error(const std::string& field, const std::string& problem) const {
    return InvalidArgument(file_ + ": " + field + ": " + problem);
  }
  Status Unsupported(const std::string& field, const std::string& what) const {
    return Unimplemented(file_ + ": " + field + ": " + what + " is not supported");
  }
  StatusOr<std::string> String(const json& v, const std::string& field) const {
    if (!v.is_string()) return Error(field, "expected a string");
    return v.get<std::string>();
  }
  StatusOr<bool> Bool(const json& obj, const char* key, bool def, const std::string& field) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return def;
    if (!it->is_boolean()) return Error(field.empty() ? key : field + "." + key, "expected true or false");
    return it->get<bool>();
  }

 private:
  std::string file_;
};

constexpr int64_t kMaxTokenId = 1 << 24;  // far above any real vocabulary; catches garbage ids

StatusOr<PreTokenizerStep::Behavior> ParseBehavior(const Fields& f, const json& v, const std::string& field) {
  DI_ASSIGN_OR_RETURN(std::string name, f.String(v, field));
  using B = PreTokenizerStep::Behavior;
  if (name == "Isolated") return B::kIsolated;
  if (name == "Removed") return B::kRemoved;
  if (name == "MergedWithPrevious") return B::kMergedWithPrevious;
  if (name == "MergedWithNext") return B::kMergedWithNext;
  if (name == "Contiguous") return B::kContiguous;
  return f.Error(field, "unknown behavior '" + name + "'");
}

Status ParsePreTokenizer(const Fields& f, const json& v, const std::string& field,
                         std::vector<PreTokenizerStep>* steps) {
  if (!v.is_object()) return f.Error(field, "expected an object");
  auto type_it = v.find("type");
  if (type_it == v.end()) return f.Error(field + ".type", "missing");
  DI_ASSIGN_OR_RETURN(std::string type, f.String(*type_it, field + ".type"));
  if (type == "Sequence") {
    auto list = v.find("pretokenizers");
    if (list == v.end() || !list->is_array()) return f.Error(field + ".pretokenizers", "expected an array");
    for (size_t i = 0; i < list->size(); ++i) {
      DI_RETURN_IF_ERROR(
          ParsePreTokenizer(f, (*list)[i], field + ".pretokenizers[" + std::to_string(i) + "]", steps));
    }
    return Status::Ok();
  }
  PreTokenizerStep step;
  if (type == "Split") {
    step.kind = PreTokenizerStep::Kind::kSplit;
    auto pattern = v.find("pattern");
    if (pattern == v.end() || !pattern->is_object()) return f.Error(field + ".pattern", "expected an object");
    if (auto re = pattern->find("Regex"); re != pattern->end()) {
      DI_ASSIGN_OR_RETURN(step.pattern, f.String(*re, field + ".pattern.Regex"));
    } else if (auto lit = pattern->find("String"); lit != pattern->end()) {
      DI_ASSIGN_OR_RETURN(step.pattern, f.String(*lit, field + ".pattern.String"));
      step.pattern_is_literal = true;
    } else {
      return f.Error(field + ".pattern", "expected {\"Regex\": ...} or {\"String\": ...}");
    }
    if (step.pattern.empty()) return f.Error(field + ".pattern", "empty pattern");
    auto behavior = v.find("behavior");
    if (behavior == v.end()) return f.Error(field + ".behavior", "missing");
    DI_ASSIGN_OR_RETURN(step.behavior, ParseBehavior(f, *behavior, field + ".behavior"));
    DI_ASSIGN_OR_RETURN(step.invert, f.Bool(v, "invert", false, field));
  } else if (type == "ByteLevel") {
    step.kind = PreTokenizerStep::Kind::kByteLevel;
    DI_ASSIGN_OR_RETURN(step.add_prefix_space, f.Bool(v, "add_prefix_space", true, field));
    DI_ASSIGN_OR_RETURN(step.use_regex, f.Bool(v, "use_regex", true, field));
  } else if (type == "Digits") {
    step.kind = PreTokenizerStep::Kind::kDigits;
    DI_ASSIGN_OR_RETURN(step.individual_digits, f.Bool(v, "individual_digits", false, field));
  } else {
    return f.Unsupported(field + ".type", "pre-tokenizer '" + type + "'");
  }
  steps->push_back(std::move(step));
  return Status::Ok();
}

Status CheckNormalizer(const Fields& f, const json& v, const std::string& field) {
  if (v.is_null()) return Status::Ok();
  if (!v.is_object()) return f.Error(field, "expected an object or null");
  auto type_it = v.find("type");
  if (type_it == v.end()) return f.Error(field + ".type", "missing");
  DI_ASSIGN_OR_RETURN(std::string type, f.String(*type_it, field + ".type"));
  if (type == "NFC") return Status::Ok();  // identity here: see the file comment
  if (type == "Sequence") {
    auto list = v.find("normalizers");
    if (list == v.end() || !list->is_array()) return f.Error(field + ".normalizers", "expected an array");
    for (size_t i = 0; i < list->size(); ++i) {
      DI_RETURN_IF_ERROR(CheckNormalizer(f, (*list)[i], field + ".normalizers[" + std::to_string(i) + "]"));
    }
    return Status::Ok();
  }
  return f.Unsupported(field + ".type", "normalizer '" + type + "'");
}

Status ParseModel(const Fields& f, const json& model, HfTokenizerJson& doc, TokenizerData* data) {
  if (!model.is_object()) return f.Error("model", "expected an object");
  if (auto type = model.find("type"); type != model.end()) {
    DI_ASSIGN_OR_RETURN(std::string name, f.String(*type, "model.type"));
    if (name != "BPE") return f.Unsupported("model.type", "model '" + name + "'");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    auto it = model.find(key);
    if (it != model.end() && !it->is_null() &&
        !(it->is_string() && it->get_ref<const std::string&>().empty())) {
      return f.Unsupported(std::string("model.") + key, "a non-empty value");
    }
  }
  DI_ASSIGN_OR_RETURN(data->ignore_merges, f.Bool(model, "ignore_merges", false, "model"));

  if (!doc.has_vocab) return f.Error("model.vocab", "expected an object");
  for (auto& [piece, id] : doc.vocab) {
    if (id < 0 || id >= kMaxTokenId) {
      return f.Error("model.vocab[\"" + piece + "\"]",
                     "expected a token id in [0, " + std::to_string(kMaxTokenId) + ")");
    }
    if (static_cast<size_t>(id) >= data->pieces.size()) data->pieces.resize(static_cast<size_t>(id) + 1);
    data->pieces[static_cast<size_t>(id)] = std::move(piece);
  }
  if (!doc.has_merges) return f.Error("model.merges", "expected an array");
  data->merges = std::move(doc.merges);
  return Status::Ok();
}

Status ParseAddedTokens(const Fields& f, const json& root, TokenizerData* data) {
  auto added = root.find("added_tokens");
  if (added == root.end() || added->is_null()) return Status::Ok();
  if (!added->is_array()) return f.Error("added_tokens", "expected an array");
  std::vector<std::pair<size_t, TokenType>> typed;
  for (size_t i = 0; i < added->size(); ++i) {
    const json& t = (*added)[i];
    const std::string field = "added_tokens[" + std::to_string(i) + "]";
    if (!t.is_object()) return f.Error(field, "expected an object");
    auto id_it = t.find("id");
    if (id_it == t.end() || !id_it->is_number_integer() || id_it->get<int64_t>() < 0 ||
        id_it->get<int64_t>() >= kMaxTokenId) {
      return f.Error(field + ".id", "expected a token id in [0, " + std::to_string(kMaxTokenId) + ")");
    }
    auto content = t.find("content");
    if (content == t.end()) return f.Error(field + ".content", "missing");
    DI_ASSIGN_OR_RETURN(std::string text, f.String(*content, field + ".content"));
    if (text.empty()) return f.Error(field + ".content", "empty token text");
    DI_ASSIGN_OR_RETURN(bool special, f.Bool(t, "special", false, field));
    const auto id = static_cast<size_t>(id_it->get<int64_t>());
    if (id >= data->pieces.size()) data->pieces.resize(id + 1);
    data->pieces[id] = text;
    typed.emplace_back(id, special ? TokenType::kControl : TokenType::kUserDefined);
    DI_ASSIGN_OR_RETURN(bool lstrip, f.Bool(t, "lstrip", false, field));
    DI_ASSIGN_OR_RETURN(bool rstrip, f.Bool(t, "rstrip", false, field));
    if (lstrip) data->lstrip_ids.push_back(static_cast<int32_t>(id));
    if (rstrip) data->rstrip_ids.push_back(static_cast<int32_t>(id));
  }
  data->types.assign(data->pieces.size(), TokenType::kNormal);
  for (const auto& [id, type] : typed) data->types[id] = type;
  return Status::Ok();
}

// bos_token / eos_token: "text", {"content": "text", ...} or null.
StatusOr<int32_t> SpecialTokenId(const Fields& f, const json& config, const char* key,
                                 const TokenizerData& data) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return -1;
  const json* text_json = &*it;
  if (it->is_object()) {
    auto content = it->find("content");
    if (content == it->end()) return f.Error(std::string(key) + ".content", "missing");
    text_json = &*content;
  }
  DI_ASSIGN_OR_RETURN(std::string text, f.String(*text_json, key));
  for (size_t id = 0; id < data.pieces.size(); ++id) {
    if (data.pieces[id] == text && data.types[id] != TokenType::kNormal) return static_cast<int32_t>(id);
  }
  for (size_t id = 0; id < data.pieces.size(); ++id) {
    if (data.pieces[id] == text) return static_cast<int32_t>(id);
  }
  return f.Error(key, "token '" + text + "' is not in the vocabulary");
}

Status ParseConfig(const std::string& path, TokenizerData* data) {
  DI_ASSIGN_OR_RETURN(json config, ParseJson(path));
  Fields f(path);
  if (!config.is_object()) return f.Error("(root)", "expected an object");
  DI_ASSIGN_OR_RETURN(data->bos_id, SpecialTokenId(f, config, "bos_token", *data));
  DI_ASSIGN_OR_RETURN(data->eos_id, SpecialTokenId(f, config, "eos_token", *data));
  DI_ASSIGN_OR_RETURN(data->pad_id, SpecialTokenId(f, config, "pad_token", *data));
  DI_ASSIGN_OR_RETURN(data->unk_id, SpecialTokenId(f, config, "unk_token", *data));
  // Without add_bos_token, a configured BOS is added (Llama 3's config relies
  // on its post-processor for that); Qwen has no BOS at all.
  DI_ASSIGN_OR_RETURN(data->add_bos, f.Bool(config, "add_bos_token", data->bos_id >= 0, ""));
  DI_ASSIGN_OR_RETURN(data->add_eos, f.Bool(config, "add_eos_token", false, ""));
  auto tmpl = config.find("chat_template");
  if (tmpl != config.end() && !tmpl->is_null()) {
    if (tmpl->is_string()) {
      data->chat_template = tmpl->get<std::string>();
    } else if (tmpl->is_array()) {
      // [{"name": "default", "template": "..."}, ...]: prefer "default".
      for (size_t i = 0; i < tmpl->size(); ++i) {
        const json& entry = (*tmpl)[i];
        const std::string field = "chat_template[" + std::to_string(i) + "]";
        if (!entry.is_object() || !entry.contains("template")) {
          return f.Error(field, "expected {name, template}");
        }
        DI_ASSIGN_OR_RETURN(std::string text, f.String(entry["template"], field + ".template"));
        const bool is_default = entry.contains("name") && entry["name"] == "default";
        if (data->chat_template.empty() || is_default) data->chat_template = text;
      }
    } else {
      return f.Error("chat_template", "expected a string or a list of {name, template}");
    }
  }
  return Status::Ok();
}

// generation_config.json's eos_token_id (an id or a list of ids) names every
// token that ends a generation — Llama 3 lists both <|end_of_text|> and
// <|eot_id|> there, while tokenizer_config.json names only one.
Status ParseGenerationConfig(const std::string& path, TokenizerData* data) {
  DI_ASSIGN_OR_RETURN(json config, ParseJson(path));
  Fields f(path);
  if (!config.is_object()) return f.Error("(root)", "expected an object");
  auto eos = config.find("eos_token_id");
  if (eos == config.end() || eos->is_null()) return Status::Ok();
  std::vector<json> ids = eos->is_array() ? eos->get<std::vector<json>>() : std::vector<json>{*eos};
  const auto vocab = static_cast<int64_t>(data->pieces.size());
  for (const json& v : ids) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= vocab) {
      return f.Error("eos_token_id", "expected token ids in [0, " + std::to_string(vocab) + ")");
    }
    const auto id = static_cast<int32_t>(v.get<int64_t>());
    if (data->eos_id < 0) data->eos_id = id;
    if (id != data->eos_id) data->extra_eos_ids.push_back(id);
  }
  return Status::Ok();
}

StatusOr<TokenizerData> LoadHf(const std::string& path) {
  DI_ASSIGN_OR_RETURN(HfTokenizerJson doc, ReadHfTokenizerJson(path));
  const json& root = doc.rest;
  Fields f(path);
  if (!root.is_object()) return f.Error("(root)", "expected an object");
  TokenizerData data;
  data.kind = TokenizerKind::kByteLevelBpe;
  data.pre = "tokenizer.json";
  data.add_space_prefix = false;

  auto model = root.find("model");
  if (model == root.end()) return f.Error("model", "missing");
  DI_RETURN_IF_ERROR(ParseModel(f, *model, doc, &data));
  DI_RETURN_IF_ERROR(ParseAddedTokens(f, root, &data));
  if (data.types.size() != data.pieces.size()) data.types.assign(data.pieces.size(), TokenType::kNormal);
  for (size_t id = 0; id < data.pieces.size(); ++id) {
    if (data.pieces[id].empty()) data.types[id] = TokenType::kUnused;  // a hole in the id space
  }
  if (auto unk = model->find("unk_token"); unk != model->end() && !unk->is_null()) {
    DI_ASSIGN_OR_RETURN(std::string text, f.String(*unk, "model.unk_token"));
    for (size_t id = 0; id < data.pieces.size(); ++id) {
      if (data.pieces[id] == text) data.unk_id = static_cast<int32_t>(id);
    }
  }

  if (auto norm = root.find("normalizer"); norm != root.end()) {
    DI_RETURN_IF_ERROR(CheckNormalizer(f, *norm, "normalizer"));
  }
  auto pre = root.find("pre_tokenizer");
  if (pre == root.end() || pre->is_null()) {
    return f.Unsupported("pre_tokenizer", "a BPE model without a ByteLevel pre-tokenizer");
  }
  DI_RETURN_IF_ERROR(ParsePreTokenizer(f, *pre, "pre_tokenizer", &data.pre_steps));
  bool has_byte_level = false;
  for (const auto& s : data.pre_steps) has_byte_level |= s.kind == PreTokenizerStep::Kind::kByteLevel;
  if (!has_byte_level) return f.Unsupported("pre_tokenizer", "a BPE model without a ByteLevel pre-tokenizer");

  const std::filesystem::path config = std::filesystem::path(path).parent_path() / "tokenizer_config.json";
  std::error_code ec;
  if (std::filesystem::exists(config, ec)) DI_RETURN_IF_ERROR(ParseConfig(config.string(), &data));
  const std::filesystem::path gen = std::filesystem::path(path).parent_path() / "generation_config.json";
  if (std::filesystem::exists(gen, ec)) DI_RETURN_IF_ERROR(ParseGenerationConfig(gen.string(), &data));
  return data;
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromHfFile(const std::string& tokenizer_json_path) {
  auto load = [&]() -> StatusOr<TokenizerData> {
    try {
      return LoadHf(tokenizer_json_path);
    } catch (const std::exception& e) {  // a JSON access we failed to guard; never let it escape
      return Internal(tokenizer_json_path + ": " + e.what());
    }
  };
  StatusOr<TokenizerData> data = load();
  if (!data.ok()) return data.status();
  auto tok = Create(std::move(data).value());
  if (!tok.ok()) return tok.status().WithContext(tokenizer_json_path);
  return tok;
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromHfDir(const std::string& dir) {
  std::error_code ec;
  for (const char* name : {"tokenizer.json", "tokenizer.json.gz"}) {
    const std::filesystem::path p = std::filesystem::path(dir) / name;
    if (std::filesystem::is_regular_file(p, ec)) return FromHfFile(p.string());
  }
  return NotFound(dir + ": no tokenizer.json or tokenizer.json.gz");
}

}  // namespace deepinfer
