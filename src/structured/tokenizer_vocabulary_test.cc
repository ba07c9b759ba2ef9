#include "structured/tokenizer_vocabulary.h"

#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "grammar/vocabulary.h"

namespace deepinfer {
namespace {

std::unique_ptr<Tokenizer> LoadShared(const std::string& family) {
  auto tok = Tokenizer::FromHfDir(std::string(DI_SHARED_DIR) + "/models/tokenizers/" + family);
  EXPECT_TRUE(tok.ok()) << tok.status().ToString();
  return tok.ok() ? std::move(*tok) : nullptr;
}

uint64_t Fingerprint(const TokenizerVocabulary& v) {
  return grammar::Vocabulary(v.token_bytes, v.end_of_generation_ids).fingerprint();
}

struct Family {
  const char* name;
  int32_t vocab_size;
  int64_t model_rows;  // the checkpoints' embedding rows (Qwen3 pads to a multiple of 128)
  std::vector<int32_t> end_of_generation;
};

void PrintTo(const Family& f, std::ostream* os) { *os << f.name; }

class TokenizerVocabularyTest : public ::testing::TestWithParam<Family> {};

// The server builds the vocabulary with the model's logit rows, `deepinfer
// constrain` with the tokenizer alone and `deepinfer generate` with the
// model's rows: all three must be the same vocabulary.
TEST_P(TokenizerVocabularyTest, ServerAndCliGetTheSameVocabulary) {
  const Family& f = GetParam();
  auto tok = LoadShared(f.name);
  ASSERT_NE(tok, nullptr);
  ASSERT_EQ(tok->vocab_size(), f.vocab_size);
  const TokenizerVocabulary server = GrammarVocabularyOf(*tok, f.model_rows);
  const TokenizerVocabulary cli = GrammarVocabularyOf(*tok, tok->vocab_size());
  EXPECT_EQ(server.token_bytes, cli.token_bytes);
  EXPECT_EQ(server.end_of_generation_ids, cli.end_of_generation_ids);
  EXPECT_EQ(Fingerprint(server), Fingerprint(cli));
  EXPECT_EQ(server.token_bytes.size(), static_cast<size_t>(f.vocab_size));

  auto so_server = StructuredOutputFor(*tok, f.model_rows);
  auto so_cli = StructuredOutputFor(*tok, tok->vocab_size());
  ASSERT_TRUE(so_server.ok() && so_cli.ok());
  EXPECT_EQ((*so_server)->vocab_size(), (*so_cli)->vocab_size());
}

// EOS plus the end-of-turn tokens, ascending: the ids the engine stops on
// (every id with IsEndOfGeneration), hand-checked against the tokenizer files.
TEST_P(TokenizerVocabularyTest, EndOfGenerationIsTheEngineStopSet) {
  const Family& f = GetParam();
  auto tok = LoadShared(f.name);
  ASSERT_NE(tok, nullptr);
  const TokenizerVocabulary v = GrammarVocabularyOf(*tok, f.model_rows);
  EXPECT_EQ(v.end_of_generation_ids, f.end_of_generation);
  std::vector<int32_t> stop_set;
  for (int32_t id = 0; id < f.model_rows; ++id) {
    if (tok->IsEndOfGeneration(id)) stop_set.push_back(id);
  }
  EXPECT_EQ(v.end_of_generation_ids, stop_set);
}

// Every id keeps the tokenizer's bytes, end-of-generation ids too (the
// grammar vocabulary never allows those as text, so blanking them, as the CLI
// once did, only changed the vocabulary's fingerprint). Qwen3's <|fim_pad|>,
// <|repo_name|> and <|file_sep|> are user-defined tokens with text.
TEST_P(TokenizerVocabularyTest, BytesAreTheTokenizers) {
  const Family& f = GetParam();
  auto tok = LoadShared(f.name);
  ASSERT_NE(tok, nullptr);
  const TokenizerVocabulary v = GrammarVocabularyOf(*tok, f.model_rows);
  for (int32_t id = 0; id < f.vocab_size; ++id) {
    ASSERT_EQ(v.token_bytes[static_cast<size_t>(id)], tok->TokenBytes(id)) << id;
  }
  EXPECT_EQ(v.token_bytes[f.end_of_generation[0]], "");  // a control token: no bytes
}

// A model with fewer rows than the tokenizer has ids: the ids it cannot
// produce (and their end-of-generation marks) are dropped.
TEST_P(TokenizerVocabularyTest, ClipsToTheModelRows) {
  const Family& f = GetParam();
  auto tok = LoadShared(f.name);
  ASSERT_NE(tok, nullptr);
  const int32_t last_eog = f.end_of_generation.back();
  const TokenizerVocabulary v = GrammarVocabularyOf(*tok, last_eog);
  EXPECT_EQ(v.token_bytes.size(), static_cast<size_t>(last_eog));
  EXPECT_EQ(v.end_of_generation_ids,
            std::vector<int32_t>(f.end_of_generation.begin(), f.end_of_generation.end() - 1));
  EXPECT_TRUE(GrammarVocabularyOf(*tok, 0).token_bytes.empty());
}

INSTANTIATE_TEST_SUITE_P(
    SharedTokenizers, TokenizerVocabularyTest,
    ::testing::Values(
        // <|end_of_text|> (EOS), <|eot_id|> (this is Llama 3.0: 128008 is reserved, not <|eom_id|>)
        Family{"llama3", 128256, 128256, {128001, 128009}},
        // <|endoftext|>, <|im_end|> (EOS), <|fim_pad|>, <|repo_name|>, <|file_sep|>
        Family{"qwen3", 151669, 151936, {151643, 151645, 151662, 151663, 151664}}),
    [](const ::testing::TestParamInfo<Family>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace deepinfer
