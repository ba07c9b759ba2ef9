// Behaviour beyond the reference vectors: llama2.c's tok512 vocabulary
// (stories260K.gguf), special tokens, BOS/EOS, end-of-generation ids,
// TokenBytes, the merge tie-breaks on hand-made vocabularies, and encoding
// cost on long inputs.
#include "tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "tokenizer/test_util.h"

namespace deepinfer {
namespace {

using testing::CachedTokenizer;

const char kStories[] = "gguf:models/gguf/stories260K.gguf";
const char kLlamaSpm[] = "gguf:models/vocab/ggml-vocab-llama-spm.gguf";
const char kLlama3[] = "hf:models/tokenizers/llama3/tokenizer.json.gz";
const char kQwen3[] = "hf:models/tokenizers/qwen3/tokenizer.json.gz";
const char kDeepseekV3[] = "hf:models/tokenizers/deepseek_v3/tokenizer.json.gz";

// From models/README.md ("Reference outputs", stories260K.gguf).
const std::vector<int32_t> kStoriesPrompt = {1, 403, 407, 261, 378};
const std::vector<int32_t> kStoriesGenerated = {
    432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337,
    410, 408, 419, 292, 411, 322, 265, 282, 295, 433, 426, 385, 328, 432, 358, 394,
    261, 370, 432, 352, 266, 268, 388, 426, 338, 391, 266, 267, 337, 335, 312, 432,
    398, 312, 286, 267, 414, 270, 333, 415, 426, 13,  438, 310, 439, 419, 357, 336};
const char kStoriesText[] =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, "
    "she saw "
    "a big, red ball. She wanted to play with it, but it was too high.\nLily's mom said";

TEST(TokenizerTest, Stories260KEncodesPromptWithBos) {
  const Tokenizer* tok = CachedTokenizer(kStories);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->vocab_size(), 512);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_EQ(tok->Encode("Once upon a time", /*add_special=*/true, /*parse_special=*/false), kStoriesPrompt);
  std::vector<int32_t> no_bos(kStoriesPrompt.begin() + 1, kStoriesPrompt.end());
  EXPECT_EQ(tok->Encode("Once upon a time", false, false), no_bos);
}

TEST(TokenizerTest, Stories260KDecodesReferenceGeneration) {
  const Tokenizer* tok = CachedTokenizer(kStories);
  ASSERT_NE(tok, nullptr);
  std::vector<int32_t> all = kStoriesPrompt;
  all.insert(all.end(), kStoriesGenerated.begin(), kStoriesGenerated.end());
  EXPECT_EQ(tok->Decode(all), kStoriesText);
  EXPECT_EQ(tok->TokenBytes(13), "\n");  // byte token <0x0A>
  EXPECT_EQ(tok->TokenBytes(403), " Once");

  // Streaming the same ids gives the same text.
  IncrementalDetokenizer detok(*tok, /*sequence_start=*/true);
  std::string streamed;
  for (int32_t id : all) streamed += detok.Push(id);
  streamed += detok.Flush();
  EXPECT_EQ(streamed, kStoriesText);

  // Generated ids alone continue the prompt: their leading space stays.
  IncrementalDetokenizer continuation(*tok);
  std::string rest;
  for (int32_t id : kStoriesGenerated) rest += continuation.Push(id);
  EXPECT_EQ("Once upon a time" + rest, kStoriesText);
}

TEST(TokenizerTest, SpmSpecialTokensAndSpacePrefix) {
  const Tokenizer* tok = CachedTokenizer(kLlamaSpm);
  ASSERT_NE(tok, nullptr);
  const auto hello = tok->Encode("Hello", false, false);
  ASSERT_EQ(hello, std::vector<int32_t>({15043}));
  // parse_special: "<s>" becomes BOS and the text after it gets the space prefix again.
  EXPECT_EQ(tok->Encode("<s>Hello", false, true), std::vector<int32_t>({1, 15043}));
  // Without parse_special the text is just text.
  const auto literal = tok->Encode("<s>Hello", false, false);
  EXPECT_EQ(std::count(literal.begin(), literal.end(), 1), 0);
  EXPECT_EQ(tok->Decode(literal), "<s>Hello");
  // BOS / EOS rendering.
  EXPECT_EQ(tok->Decode({1, 15043, 2}), "Hello");
  EXPECT_EQ(tok->Decode({1, 15043, 2}, /*render_special=*/true), "<s> Hello</s>");
  EXPECT_TRUE(tok->IsEndOfGeneration(2));
  EXPECT_FALSE(tok->IsEndOfGeneration(1));
  EXPECT_FALSE(tok->IsEndOfGeneration(-1));
  // Out-of-range ids are skipped, never a crash.
  EXPECT_EQ(tok->Decode({-5, 15043, 1 << 30}), "Hello");
  EXPECT_EQ(tok->TokenBytes(-1), "");
  EXPECT_EQ(tok->TokenBytes(32000), "");
  EXPECT_EQ(tok->TokenBytes(1), "");  // control
  // Byte fallback: U+10FFFF is not a token.
  const auto fallback = tok->Encode("\xF4\x8F\xBF\xBF", false, false);
  EXPECT_EQ(fallback, std::vector<int32_t>({29871, 0xF4 + 3, 0x8F + 3, 0xBF + 3, 0xBF + 3}));
}

// llama.cpp gives Phi-3's special tokens rstrip: the newline after <|user|> goes.
TEST(TokenizerTest, Phi3SpecialTokensStripWhitespaceOnTheirRight) {
  const Tokenizer* tok = CachedTokenizer("gguf:models/vocab/ggml-vocab-phi-3.gguf");
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->Encode("<|user|>\nHello<|end|>\n<|assistant|>", false, true),
            std::vector<int32_t>({32010, 15043, 32007, 32001}));
  EXPECT_TRUE(tok->IsEndOfGeneration(32007));  // <|end|>
  EXPECT_TRUE(tok->IsEndOfGeneration(32000));  // <|endoftext|> (eos)
}

TEST(TokenizerTest, Llama3SpecialTokensAndEndOfGeneration) {
  const Tokenizer* tok = CachedTokenizer(kLlama3);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->vocab_size(), 128256);
  EXPECT_EQ(tok->bos_id(), 128000);
  EXPECT_EQ(tok->eos_id(), 128001);
  EXPECT_FALSE(tok->data().chat_template.empty());
  const std::string text = "<|start_header_id|>user<|end_header_id|>\n\nhello<|eot_id|>";
  EXPECT_EQ(tok->Encode(text, true, true),
            std::vector<int32_t>({128000, 128006, 882, 128007, 271, 15339, 128009}));
  const auto plain = tok->Encode(text, false, false);
  for (int32_t id : plain) EXPECT_LT(id, 128000);
  EXPECT_EQ(tok->Decode(plain), text);
  EXPECT_EQ(tok->Decode({128000, 15339, 128009}), "hello");
  EXPECT_EQ(tok->Decode({128000, 15339, 128009}, true), "<|begin_of_text|>hello<|eot_id|>");
  EXPECT_TRUE(tok->IsEndOfGeneration(128001));  // <|end_of_text|>
  EXPECT_TRUE(tok->IsEndOfGeneration(128009));  // <|eot_id|>
  EXPECT_FALSE(tok->IsEndOfGeneration(128000));
  EXPECT_FALSE(tok->IsEndOfGeneration(15339));
  EXPECT_EQ(tok->TokenBytes(15339), "hello");
  EXPECT_EQ(tok->TokenBytes(128009), "");
}

TEST(TokenizerTest, Qwen3AddedTokensAndNoBos) {
  const Tokenizer* tok = CachedTokenizer(kQwen3);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->bos_id(), -1);
  EXPECT_FALSE(tok->data().add_bos);
  EXPECT_EQ(tok->Encode("hi", true, false), tok->Encode("hi", false, false));
  EXPECT_FALSE(tok->data().chat_template.empty());
  EXPECT_TRUE(tok->IsEndOfGeneration(151645));  // <|im_end|> (eos)
  EXPECT_TRUE(tok->IsEndOfGeneration(151643));  // <|endoftext|>
  // <think> is a non-special added token: HF extracts it even without special parsing.
  const auto think = tok->Encode("<think>x</think>", false, false);
  EXPECT_EQ(think.front(), 151667);
  EXPECT_EQ(think.back(), 151668);
  EXPECT_EQ(tok->TokenBytes(151667), "<think>");
  // <|im_start|> is special: only with parse_special.
  EXPECT_EQ(tok->Encode("<|im_start|>", false, true), std::vector<int32_t>({151644}));
  EXPECT_NE(tok->Encode("<|im_start|>", false, false), std::vector<int32_t>({151644}));
}

TEST(TokenizerTest, DeepseekV3Bos) {
  const Tokenizer* tok = CachedTokenizer(kDeepseekV3);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->bos_id(), 0);
  EXPECT_EQ(tok->eos_id(), 1);
  const auto ids = tok->Encode("Hello", true, false);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], 0);
  EXPECT_EQ(tok->Decode(ids), "Hello");
}

// --- Hand-made vocabularies -------------------------------------------------

TokenizerData SpmVocab(const std::vector<std::pair<std::string, float>>& extra) {
  TokenizerData d;
  d.kind = TokenizerKind::kSentencePieceBpe;
  d.pieces = {"<unk>", "<s>", "</s>"};
  d.types = {TokenType::kUnknown, TokenType::kControl, TokenType::kControl};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    d.pieces.push_back(name);
    d.types.push_back(TokenType::kByte);
  }
  for (const auto& [piece, score] : extra) {
    d.pieces.push_back(piece);
    d.types.push_back(TokenType::kNormal);
  }
  d.scores.assign(d.pieces.size(), 0.0f);
  for (size_t i = 0; i < extra.size(); ++i) d.scores[259 + i] = extra[i].second;
  d.unk_id = 0;
  d.bos_id = 1;
  d.eos_id = 2;
  d.add_space_prefix = false;
  return d;
}

TEST(TokenizerTest, SpmMergesByScoreWithLeftmostTieBreak) {
  // ids: a=259 b=260 c=261 ab=262 bc=263
  auto equal = Tokenizer::Create(SpmVocab({{"a", -1}, {"b", -1}, {"c", -1}, {"ab", -5}, {"bc", -5}}));
  ASSERT_TRUE(equal.ok()) << equal.status().ToString();
  EXPECT_EQ((*equal)->Encode("abc", false, false), std::vector<int32_t>({262, 261}));
  auto right_wins = Tokenizer::Create(SpmVocab({{"a", -1}, {"b", -1}, {"c", -1}, {"ab", -5}, {"bc", -4}}));
  ASSERT_TRUE(right_wins.ok());
  EXPECT_EQ((*right_wins)->Encode("abc", false, false), std::vector<int32_t>({259, 263}));
  // 'é' is not a token: its two UTF-8 bytes fall back to byte tokens.
  EXPECT_EQ((*equal)->Encode("a\xC3\xA9", false, false), std::vector<int32_t>({259, 0xC3 + 3, 0xA9 + 3}));
  EXPECT_EQ((*equal)->Decode({259, 0xC3 + 3, 0xA9 + 3}), "a\xC3\xA9");
}

TokenizerData ByteLevelVocab(const std::vector<std::string>& extra, const std::vector<std::string>& merges) {
  TokenizerData d;
  d.kind = TokenizerKind::kByteLevelBpe;
  for (int b = 0; b < 256; ++b) {
    std::string piece;
    // Byte-level alphabet for ASCII letters is the letter itself; the test only uses those.
    piece.push_back(static_cast<char>(b));
    d.pieces.push_back(b >= 'a' && b <= 'z' ? piece : "[byte" + std::to_string(b) + "]");
  }
  for (const auto& e : extra) d.pieces.push_back(e);
  d.merges = merges;
  PreTokenizerStep map_only;
  map_only.kind = PreTokenizerStep::Kind::kByteLevel;
  map_only.use_regex = false;
  d.pre_steps = {map_only};
  d.add_space_prefix = false;
  return d;
}

TEST(TokenizerTest, ByteLevelMergesByRankWithLeftmostTieBreak) {
  // ids: aa=256 ab=257 aaa=258
  auto tok = Tokenizer::Create(ByteLevelVocab({"aa", "ab", "aaa"}, {"a b", "a a", "aa a"}));
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->Encode("aab", false, false), std::vector<int32_t>({'a', 257}));   // "a b" ranks first
  EXPECT_EQ((*tok)->Encode("aaaa", false, false), std::vector<int32_t>({256, 256}));  // leftmost "a a" first
  EXPECT_EQ((*tok)->Encode("aaa", false, false), std::vector<int32_t>({258}));
  EXPECT_EQ((*tok)->Decode({256, 'b'}), "aab");
}

TEST(TokenizerTest, CreateRejectsBadDescriptions) {
  auto d = SpmVocab({{"a", -1}});
  d.bos_id = 100000;
  auto bad_bos = Tokenizer::Create(d);
  ASSERT_FALSE(bad_bos.ok());
  EXPECT_NE(bad_bos.status().message().find("bos_id 100000"), std::string::npos)
      << bad_bos.status().message();

  d = SpmVocab({{"a", -1}});
  d.scores.pop_back();
  EXPECT_FALSE(Tokenizer::Create(d).ok());

  d = SpmVocab({{"a", -1}});
  d.pieces[3] = "<0xZZ>";  // a byte token that is not one
  auto bad_byte = Tokenizer::Create(d);
  ASSERT_FALSE(bad_byte.ok());
  EXPECT_NE(bad_byte.status().message().find("<0xZZ>"), std::string::npos);

  auto no_space = Tokenizer::Create(ByteLevelVocab({"ab"}, {"ab"}));
  ASSERT_FALSE(no_space.ok());
  EXPECT_NE(no_space.status().message().find("merges[0]"), std::string::npos) << no_space.status().message();

  TokenizerData bad_pre = ByteLevelVocab({}, {});
  bad_pre.pre_steps.clear();
  bad_pre.pre = "no-such-pre";
  auto unknown_pre = Tokenizer::Create(bad_pre);
  ASSERT_FALSE(unknown_pre.ok());
  EXPECT_EQ(unknown_pre.status().code(), StatusCode::kUnimplemented);

  EXPECT_FALSE(Tokenizer::Create(TokenizerData{}).ok());  // no tokens
}

// The contract says Encode / Decode are const and thread-safe: run them from
// several threads at once and compare with a single-threaded run.
TEST(TokenizerTest, ConcurrentEncodeDecodeAgree) {
  const auto inputs =
      testing::ReadVectorInputs(testing::SharedPath("models/vocab/ggml-vocab-llama-spm.gguf.inp"));
  for (const char* spec : {kLlamaSpm, kLlama3}) {
    const Tokenizer* tok = CachedTokenizer(spec);
    ASSERT_NE(tok, nullptr);
    std::vector<std::vector<int32_t>> expected;
    for (const auto& text : inputs) expected.push_back(tok->Encode(text, true, true));
    std::vector<int> mismatches(4, 0);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int round = 0; round < 20; ++round) {
          for (size_t i = 0; i < inputs.size(); ++i) {
            const auto ids = tok->Encode(inputs[i], true, true);
            if (ids != expected[i] || tok->Decode(ids) != inputs[i]) ++mismatches[t];
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    for (int t = 0; t < 4; ++t) EXPECT_EQ(mismatches[t], 0) << spec << " thread " << t;
  }
}

// --- Cost --------------------------------------------------------------------

double SecondsToEncode(const Tokenizer& tok, const std::string& text, size_t* n_ids) {
  const auto start = std::chrono::steady_clock::now();
  *n_ids = tok.Encode(text, false, false).size();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// One 200 kB "word" is a single pre-token / SPM fragment: quadratic merging
// would take minutes here, the heap-based merge takes milliseconds.
TEST(TokenizerTest, LongInputsEncodeInNearLinearTime) {
  for (const char* spec : {kLlamaSpm, kLlama3}) {
    const Tokenizer* tok = CachedTokenizer(spec);
    ASSERT_NE(tok, nullptr);
    size_t n_word = 0, n_text = 0;
    const double word_s = SecondsToEncode(*tok, std::string(200000, 'a'), &n_word);
    std::string text;
    while (text.size() < 1000000) text += "The quick brown fox jumps over the lazy dog; 12345 times! ";
    const double text_s = SecondsToEncode(*tok, text, &n_text);
    size_t n_space = 0;
    const double space_s = SecondsToEncode(*tok, std::string(300000, ' ') + "x\n", &n_space);
    std::printf(
        "[ %s ] 200k-char word: %zu ids in %.3f s; 1 MB text: %zu ids in %.3f s; 300k spaces: %zu ids in "
        "%.3f s\n",
        spec, n_word, word_s, n_text, text_s, n_space, space_s);
    EXPECT_LT(space_s, 10.0);
    EXPECT_GT(n_word, 0u);
    EXPECT_LT(word_s, 10.0);  // generous: shared, sanitized CI machines
    EXPECT_LT(text_s, 20.0);
  }
}

}  // namespace
}  // namespace deepinfer
