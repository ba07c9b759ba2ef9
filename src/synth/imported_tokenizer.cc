#include "synth/imported_tokenizer.h"

#include <filesystem>

#include "io/gguf.h"

namespace deepinfer::synth_internal {
namespace {

namespace fs = std::filesystem;

// GGUF names llama.cpp gives byte-level pre-tokenizers, most common first.
constexpr const char* kGgufPreNames[] = {"llama-bpe",    "qwen2",          "deepseek-v3",
                                         "deepseek-llm", "deepseek-coder", "gpt-2",
                                         "starcoder",    "falcon",         "default"};

bool IsLlama3Family(const std::string& pre) { return pre == "llama-bpe"; }

// Text that tells the pre-tokenizers apart: contractions, digit runs,
// punctuation runs, newlines and indentation, CJK, kana, accents, emoji.
constexpr const char* kProbe =
    "Hello world! I'm can't we'll 12345 678 9,000.5 3.14159\n\n  indented\tTAB   spaces  \r\n"
    "fn(x){return x**2;} // comment <tag attr=\"v\"> $100 +-*/ ~^|\n"
    "\xe4\xbd\xa0\xe5\xa5\xbd\xe4\xb8\x96\xe7\x95\x8c "
    "\xe3\x81\x93\xe3\x82\x93\xe3\x81\xab\xe3\x81\xa1\xe3\x81"
    "\xaf \xe3\x82\xab\xe3\x82\xbf\xe3\x82\xab\xe3\x83\x8a caf\xc3\xa9 na\xc3\xafve "
    "\xf0\x9f\x98\x80\xf0\x9f\x91"
    "\x8d OK...!!! ??? a1b2c3 ABC123def 2026-12-02T10:00:00Z";

StatusOr<std::string> GgufPreName(const Tokenizer& hf) {
  const TokenizerData& d = hf.data();
  const std::vector<int32_t> want = hf.Encode(kProbe, /*add_special=*/false, /*parse_special=*/true);
  for (const char* name : kGgufPreNames) {
    if (d.ignore_merges != IsLlama3Family(name)) continue;
    TokenizerData g = d;
    g.pre = name;
    g.pre_steps.clear();
    auto candidate = Tokenizer::Create(std::move(g));
    if (!candidate.ok()) continue;
    if ((*candidate)->Encode(kProbe, false, true) == want) return std::string(name);
  }
  return InvalidArgument(
      "--tokenizer: this tokenizer's pre-tokenizer matches none of llama.cpp's GGUF pre-tokenizer names, so "
      "--format gguf cannot hold it; use --format hf");
}

}  // namespace

StatusOr<ImportedTokenizer> LoadImportedTokenizer(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return InvalidArgument("--tokenizer " + dir + ": not a directory");
  ImportedTokenizer t;
  for (const char* name : {"tokenizer.json", "tokenizer.json.gz"}) {
    const fs::path p = fs::path(dir) / name;
    if (fs::is_regular_file(p, ec)) {
      t.tokenizer_file = p.string();
      break;
    }
  }
  if (t.tokenizer_file.empty()) {
    return InvalidArgument("--tokenizer " + dir + ": no tokenizer.json or tokenizer.json.gz");
  }
  const fs::path config = fs::path(dir) / "tokenizer_config.json";
  if (fs::is_regular_file(config, ec)) t.config_file = config.string();
  auto tok = Tokenizer::FromHfFile(t.tokenizer_file);
  if (!tok.ok()) return InvalidArgument("--tokenizer: " + tok.status().message());
  t.tokenizer = std::move(*tok);
  return t;
}

Status WriteImportedTokenizerHf(const ImportedTokenizer& t, const std::string& out_dir) {
  for (const std::string& file : {t.tokenizer_file, t.config_file}) {
    if (file.empty()) continue;
    const fs::path to = fs::path(out_dir) / fs::path(file).filename();
    std::error_code ec;
    fs::copy_file(file, to, fs::copy_options::overwrite_existing, ec);
    if (ec) return Internal(to.string() + ": cannot copy from " + file + ": " + ec.message());
    // The source may be read-only (a shared folder); the copy is ours.
    fs::permissions(
        to, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read,
        ec);
  }
  // A synth directory written before without --tokenizer may hold the other
  // spelling; the loader would take tokenizer.json first.
  if (fs::path(t.tokenizer_file).filename() == "tokenizer.json.gz") {
    std::error_code ec;
    fs::remove(fs::path(out_dir) / "tokenizer.json", ec);
  }
  return Status::Ok();
}

Status SetImportedTokenizerGguf(const ImportedTokenizer& t, GgufWriter& w) {
  const TokenizerData& d = t.tokenizer->data();
  if (d.kind != TokenizerKind::kByteLevelBpe) {
    return InvalidArgument("--tokenizer with --format gguf: only byte-level BPE tokenizers are supported");
  }
  if (!d.lstrip_ids.empty() || !d.rstrip_ids.empty()) {
    return InvalidArgument(
        "--tokenizer with --format gguf: added tokens with lstrip/rstrip cannot be stored in GGUF; use "
        "--format "
        "hf");
  }
  DI_ASSIGN_OR_RETURN(std::string pre, GgufPreName(*t.tokenizer));
  std::vector<int32_t> types;
  types.reserve(d.pieces.size());
  for (size_t i = 0; i < d.pieces.size(); ++i) {
    types.push_back(static_cast<int32_t>(i < d.types.size() ? d.types[i] : TokenType::kNormal));
  }
  w.SetString("tokenizer.ggml.model", "gpt2");
  w.SetString("tokenizer.ggml.pre", pre);
  w.SetStringArray("tokenizer.ggml.tokens", d.pieces);
  w.SetI32Array("tokenizer.ggml.token_type", types);
  w.SetStringArray("tokenizer.ggml.merges", d.merges);
  auto set_id = [&](const char* key, int32_t id) {
    if (id >= 0) w.SetU32(key, static_cast<uint32_t>(id));
  };
  set_id("tokenizer.ggml.bos_token_id", d.bos_id);
  set_id("tokenizer.ggml.eos_token_id", d.eos_id);
  set_id("tokenizer.ggml.unknown_token_id", d.unk_id);
  set_id("tokenizer.ggml.padding_token_id", d.pad_id);
  w.SetBool("tokenizer.ggml.add_bos_token", d.add_bos);
  w.SetBool("tokenizer.ggml.add_eos_token", d.add_eos);
  if (!d.chat_template.empty()) w.SetString("tokenizer.chat_template", d.chat_template);
  return Status::Ok();
}

}  // namespace deepinfer::synth_internal
