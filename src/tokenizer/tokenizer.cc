// Tokenizer::Create and the one Tokenizer implementation: special-token
// partitioning, BOS/EOS, Decode and TokenBytes are shared; the text between
// special tokens goes to the SentencePiece or the byte-level BPE encoder.
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <cstdlib>

#include "tokenizer/byte_level_bpe.h"
#include "tokenizer/piece_index.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/spm_bpe.h"
#include "tokenizer/unicode.h"

namespace deepinfer {

namespace {

// Token texts that end generation besides EOS (llama.cpp's list, plus
// Llama 3's <|end_of_text|> and DeepSeek's end-of-sentence / <|EOT|>).
constexpr std::string_view kEndOfGenerationTexts[] = {
    "<|eot_id|>",  "<|im_end|>",    "<|end|>",      "<end_of_turn>",   "<|endoftext|>",
    "<|eom_id|>",  "<EOT>",         "<|EOT|>",      "<|end_of_text|>", "<｜end▁of▁sentence｜>",
    "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>",
};

bool IsSpecialType(TokenType t) { return t == TokenType::kControl || t == TokenType::kUnknown; }

// "<0x4A>" -> 0x4A; -1 if `piece` is not of that form.
int ParseByteToken(std::string_view piece) {
  if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return -1;
  int value = 0;
  for (char c : piece.substr(3, 2)) {
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}

class TokenizerImpl final : public Tokenizer {
 public:
  explicit TokenizerImpl(TokenizerData data) : data_(std::move(data)) {}

  Status Init() {
    const size_t n = data_.pieces.size();
    index_ = PieceIndex(&data_.pieces);
    specials_ = SpecialTokenMatcher(data_);
    if (data_.kind == TokenizerKind::kSentencePieceBpe) {
      spm_ = std::make_unique<SpmBpeEncoder>(data_, index_);
    } else {
      DI_ASSIGN_OR_RETURN(bpe_, ByteLevelBpeEncoder::Create(data_, index_));
    }
    token_bytes_.resize(n);
    for (size_t id = 0; id < n; ++id) {
      DI_ASSIGN_OR_RETURN(token_bytes_[id], ComputeTokenBytes(static_cast<int32_t>(id)));
    }
    strip_leading_space_ = data_.kind == TokenizerKind::kSentencePieceBpe && data_.add_space_prefix;
    return Status::Ok();
  }

  std::vector<int32_t> Encode(std::string_view text, bool add_special, bool parse_special) const override {
    std::vector<int32_t> out;
    if (add_special && data_.add_bos && data_.bos_id >= 0) out.push_back(data_.bos_id);
    std::vector<SpecialTokenMatcher::Fragment> fragments;
    specials_.Partition(text, parse_special, &fragments);
    // llama.cpp: SPM prefixes a space to text at the start or right after a
    // special token (BOS itself does not count as text).
    bool after_special = true;
    for (const auto& f : fragments) {
      if (f.token >= 0) {
        out.push_back(f.token);
        after_special = true;
        continue;
      }
      if (spm_) {
        spm_->Encode(f.text, data_.add_space_prefix && after_special, &out);
      } else {
        bpe_->Encode(f.text, &out);
      }
      after_special = false;
    }
    if (add_special && data_.add_eos && data_.eos_id >= 0) out.push_back(data_.eos_id);
    return out;
  }

  std::string Decode(const std::vector<int32_t>& ids, bool render_special) const override {
    std::string text;
    bool at_start = strip_leading_space_;
    for (int32_t id : ids) {
      if (id < 0 || id >= vocab_size()) continue;
      const bool special = IsSpecialType(data_.types[id]);
      const std::string& piece = special && render_special ? data_.pieces[id] : token_bytes_[id];
      if (piece.empty()) continue;
      if (at_start && !special && piece[0] == ' ') {
        text.append(piece, 1, std::string::npos);
      } else {
        text.append(piece);
      }
      at_start = false;
    }
    return text;
  }

  std::string TokenBytes(int32_t id) const override {
    if (id < 0 || id >= vocab_size()) return {};
    return token_bytes_[id];
  }

  const TokenizerData& data() const override { return data_; }

 private:
  StatusOr<std::string> ComputeTokenBytes(int32_t id) const {
    const std::string& piece = data_.pieces[id];
    switch (data_.types[id]) {
      case TokenType::kControl:
      case TokenType::kUnknown:
      case TokenType::kUnused:
        return std::string();
      case TokenType::kUserDefined:
        return piece;  // added tokens are stored as the raw text they match
      case TokenType::kByte: {
        const int byte = ParseByteToken(piece);
        if (byte < 0) {
          return InvalidArgument("token " + std::to_string(id) + " '" + piece +
                                 "' has type byte but is not of the form <0xXX>");
        }
        return std::string(1, static_cast<char>(byte));
      }
      case TokenType::kNormal:
        break;
    }
    if (data_.kind == TokenizerKind::kByteLevelBpe) return unicode::ByteLevelDecode(piece);
    std::string bytes;
    bytes.reserve(piece.size());
    for (size_t pos = 0; pos < piece.size();) {
      if (piece.compare(pos, unicode::kSpmSpace.size(), unicode::kSpmSpace) == 0) {
        bytes.push_back(' ');
        pos += unicode::kSpmSpace.size();
      } else {
        bytes.push_back(piece[pos++]);
      }
    }
    return bytes;
  }

  TokenizerData data_;
  PieceIndex index_;
  SpecialTokenMatcher specials_;
  std::unique_ptr<SpmBpeEncoder> spm_;
  std::unique_ptr<ByteLevelBpeEncoder> bpe_;
  std::vector<std::string> token_bytes_;  // id -> TokenBytes(id)
  bool strip_leading_space_ = false;
};

Status CheckId(const char* field, int32_t id, size_t n) {
  if (id < -1 || id >= static_cast<int64_t>(n)) {
    return InvalidArgument(std::string(field) + " " + std::to_string(id) + " is out of range [0, " +
                           std::to_string(n) + ")");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Create(TokenizerData data) {
  const size_t n = data.pieces.size();
  if (n == 0) return InvalidArgument("tokenizer has no tokens");
  if (n > static_cast<size_t>(INT32_MAX)) return InvalidArgument("tokenizer has too many tokens");
  if (data.scores.empty()) data.scores.assign(n, 0.0f);
  if (data.types.empty()) data.types.assign(n, TokenType::kNormal);
  if (data.scores.size() != n) {
    return InvalidArgument("tokenizer has " + std::to_string(n) + " tokens but " +
                           std::to_string(data.scores.size()) + " scores");
  }
  if (data.types.size() != n) {
    return InvalidArgument("tokenizer has " + std::to_string(n) + " tokens but " +
                           std::to_string(data.types.size()) + " token types");
  }
  for (size_t id = 0; id < n; ++id) {
    const auto t = static_cast<int32_t>(data.types[id]);
    if (t < static_cast<int32_t>(TokenType::kNormal) || t > static_cast<int32_t>(TokenType::kByte)) {
      data.types[id] = TokenType::kNormal;  // GGUF's "undefined" (0) and unknown values act as normal text
    }
  }
  DI_RETURN_IF_ERROR(CheckId("bos_id", data.bos_id, n));
  DI_RETURN_IF_ERROR(CheckId("eos_id", data.eos_id, n));
  DI_RETURN_IF_ERROR(CheckId("unk_id", data.unk_id, n));
  DI_RETURN_IF_ERROR(CheckId("pad_id", data.pad_id, n));
  for (int32_t id : data.extra_eos_ids) DI_RETURN_IF_ERROR(CheckId("extra_eos_ids entry", id, n));
  for (int32_t id : data.lstrip_ids) DI_RETURN_IF_ERROR(CheckId("lstrip_ids entry", id, n));
  for (int32_t id : data.rstrip_ids) DI_RETURN_IF_ERROR(CheckId("rstrip_ids entry", id, n));
  if (data.add_bos && data.bos_id < 0) data.add_bos = false;
  if (data.add_eos && data.eos_id < 0) data.add_eos = false;

  // End-of-generation tokens found by their text (control or user-defined only,
  // so a plain-text token that happens to look alike never stops generation).
  for (size_t id = 0; id < n; ++id) {
    if (data.types[id] != TokenType::kControl && data.types[id] != TokenType::kUserDefined) continue;
    const std::string& piece = data.pieces[id];
    const bool eog = std::find(std::begin(kEndOfGenerationTexts), std::end(kEndOfGenerationTexts), piece) !=
                     std::end(kEndOfGenerationTexts);
    const auto id32 = static_cast<int32_t>(id);
    if (eog && id32 != data.eos_id &&
        std::find(data.extra_eos_ids.begin(), data.extra_eos_ids.end(), id32) == data.extra_eos_ids.end()) {
      data.extra_eos_ids.push_back(id32);
    }
  }

  auto tok = std::make_unique<TokenizerImpl>(std::move(data));
  DI_RETURN_IF_ERROR(tok->Init());
  return std::unique_ptr<Tokenizer>(std::move(tok));
}

bool Tokenizer::IsEndOfGeneration(int32_t id) const {
  const TokenizerData& d = data();
  if (id < 0) return false;
  if (id == d.eos_id) return true;
  return std::find(d.extra_eos_ids.begin(), d.extra_eos_ids.end(), id) != d.extra_eos_ids.end();
}

}  // namespace deepinfer
