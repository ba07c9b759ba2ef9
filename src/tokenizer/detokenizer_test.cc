// IncrementalDetokenizer: never emits broken UTF-8, and its output adds up to
// Decode.
#include <gtest/gtest.h>

#include "tokenizer/test_util.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace deepinfer {
namespace {

using testing::CachedTokenizer;

bool IsValidUtf8(const std::string& s) {
  const auto scan = unicode::ScanUtf8(s);
  return scan.valid_prefix == s.size();
}

// Pushes `ids` one at a time; every returned piece must be valid UTF-8.
std::string Stream(const Tokenizer& tok, const std::vector<int32_t>& ids, bool sequence_start) {
  IncrementalDetokenizer detok(tok, sequence_start);
  std::string out;
  for (int32_t id : ids) {
    const std::string piece = detok.Push(id);
    EXPECT_TRUE(IsValidUtf8(piece)) << "token " << id;
    out += piece;
  }
  out += detok.Flush();
  return out;
}

TEST(DetokenizerTest, ByteFallbackEmojiIsHeldUntilComplete) {
  const Tokenizer* tok = CachedTokenizer("gguf:models/vocab/ggml-vocab-llama-spm.gguf");
  ASSERT_NE(tok, nullptr);
  // From the vectors: " 🦙" -> ▁ then four byte tokens.
  IncrementalDetokenizer detok(*tok);
  EXPECT_EQ(detok.Push(29871), " ");
  EXPECT_EQ(detok.Push(243), "");
  EXPECT_EQ(detok.Push(162), "");
  EXPECT_EQ(detok.Push(169), "");
  EXPECT_EQ(detok.Push(156), "\xF0\x9F\xA6\x99");
  EXPECT_EQ(detok.Flush(), "");
}

TEST(DetokenizerTest, InvalidAndDanglingBytesBecomeReplacementCharacters) {
  const Tokenizer* tok = CachedTokenizer("gguf:models/vocab/ggml-vocab-llama-spm.gguf");
  ASSERT_NE(tok, nullptr);
  const int32_t kByte0 = 3;  // <0x00>
  IncrementalDetokenizer detok(*tok);
  EXPECT_EQ(detok.Push(kByte0 + 0xFF), "\xEF\xBF\xBD");  // never valid
  EXPECT_EQ(detok.Push(kByte0 + 0xE4), "");              // lead of a 3-byte sequence
  EXPECT_EQ(detok.Push(kByte0 + 'A'),
            "\xEF\xBF\xBD"
            "A");  // broken by ASCII
  EXPECT_EQ(detok.Push(kByte0 + 0xE4), "");
  EXPECT_EQ(detok.Push(kByte0 + 0xB8), "");
  EXPECT_EQ(detok.Flush(), "\xEF\xBF\xBD");  // dangling tail
  EXPECT_EQ(detok.Push(kByte0 + 'B'), "B");  // usable after Flush
  EXPECT_EQ(detok.Push(1 << 30), "");        // out of range: skipped
}

TEST(DetokenizerTest, StreamingEqualsDecodeOnAllVectors) {
  const auto inputs =
      testing::ReadVectorInputs(testing::SharedPath("models/vocab/ggml-vocab-llama-spm.gguf.inp"));
  for (const char* spec :
       {"gguf:models/vocab/ggml-vocab-llama-spm.gguf", "gguf:models/vocab/ggml-vocab-gpt-2.gguf",
        "hf:models/tokenizers/llama3/tokenizer.json.gz", "hf:models/tokenizers/qwen3/tokenizer.json.gz"}) {
    const Tokenizer* tok = CachedTokenizer(spec);
    ASSERT_NE(tok, nullptr);
    for (const std::string& text : inputs) {
      const auto ids = tok->Encode(text, /*add_special=*/true, false);
      EXPECT_EQ(Stream(*tok, ids, /*sequence_start=*/true), tok->Decode(ids)) << spec << ": " << text;
      EXPECT_EQ(Stream(*tok, ids, true), text) << spec;
    }
  }
}

TEST(DetokenizerTest, MultiByteCharactersSplitAcrossByteLevelTokens) {
  const Tokenizer* tok = CachedTokenizer("hf:models/tokenizers/llama3/tokenizer.json.gz");
  ASSERT_NE(tok, nullptr);
  // Rare CJK / emoji sequences are split mid-character by byte-level BPE.
  const std::string text =
      "\xF0\x9F\xA6\x99\xF0\x9F\x98\x81 \xE1\x9E\x80\xE1\x9E\xB6 \xE7\xAC\x91\xE9\xA1\x94";
  const auto ids = tok->Encode(text, false, false);
  bool split_inside_character = false;
  for (int32_t id : ids) split_inside_character |= !IsValidUtf8(tok->TokenBytes(id));
  EXPECT_TRUE(split_inside_character) << "test input no longer exercises partial characters";
  EXPECT_EQ(Stream(*tok, ids, false), text);
}

}  // namespace
}  // namespace deepinfer
