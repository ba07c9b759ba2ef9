// `synth --tokenizer DIR`: a real tokenizer (HF tokenizer.json[.gz] plus
// tokenizer_config.json) put into a synth model, so chat templates, tool
// calls and reasoning run end to end on a tiny random-weight model with a
// real vocabulary. Not a public header of the serving code: only synth.
//
// HF: the tokenizer files are copied verbatim (tokenizer.json or
// tokenizer.json.gz, which the HF loader reads either way).
// GGUF: llama.cpp's tokenizer.ggml.* keys, with the pre-tokenizer name whose
// llama.cpp regexes tokenize like the tokenizer.json (checked on a probe
// text, so a name is never guessed), and tokenizer.chat_template. A tokenizer
// GGUF cannot express (no matching pre name, SentencePiece models from
// tokenizer.json) is an InvalidArgument naming --format gguf.
// Thread-safety: pure functions.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer {
class GgufWriter;
}

namespace deepinfer::synth_internal {

struct ImportedTokenizer {
  std::string tokenizer_file;  // DIR/tokenizer.json or DIR/tokenizer.json.gz
  std::string config_file;     // DIR/tokenizer_config.json ("" if absent)
  std::unique_ptr<Tokenizer> tokenizer;
};

// Reads DIR/tokenizer.json (or .json.gz) and DIR/tokenizer_config.json.
StatusOr<ImportedTokenizer> LoadImportedTokenizer(const std::string& dir);

// Copies the tokenizer files into `out_dir` (under their own names).
Status WriteImportedTokenizerHf(const ImportedTokenizer& t, const std::string& out_dir);

// Sets the tokenizer.ggml.* keys and tokenizer.chat_template.
Status SetImportedTokenizerGguf(const ImportedTokenizer& t, GgufWriter& w);

}  // namespace deepinfer::synth_internal
