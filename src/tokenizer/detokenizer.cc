// IncrementalDetokenizer: streams token ids out as text that is always valid
// UTF-8 (see tokenizer.h for the contract).
#include <string>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace deepinfer {

namespace {
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
}  // namespace

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tok, bool sequence_start)
    : tok_(tok),
      first_(sequence_start && tok.data().kind == TokenizerKind::kSentencePieceBpe &&
             tok.data().add_space_prefix) {}

std::string IncrementalDetokenizer::Push(int32_t id) {
  std::string piece = tok_.TokenBytes(id);
  if (piece.empty()) return {};  // control / unused / out-of-range: nothing, and no effect on first_
  if (first_ && piece[0] == ' ') piece.erase(0, 1);
  first_ = false;
  pending_.append(piece);

  // Emit every complete code point; replace bytes that can never become valid;
  // keep an incomplete tail for the next token.
  std::string out;
  std::string_view rest = pending_;
  while (!rest.empty()) {
    const unicode::Utf8Scan scan = unicode::ScanUtf8(rest);
    out.append(rest.substr(0, scan.valid_prefix));
    rest.remove_prefix(scan.valid_prefix);
    if (scan.invalid_bytes == 0) break;  // done, or an incomplete tail stays pending
    out.append(kReplacement);
    rest.remove_prefix(scan.invalid_bytes);
  }
  pending_ = std::string(rest);  // copy first: `rest` points into pending_
  return out;
}

std::string IncrementalDetokenizer::Flush() {
  std::string out = pending_.empty() ? std::string() : std::string(kReplacement);
  pending_.clear();
  return out;
}

}  // namespace deepinfer
