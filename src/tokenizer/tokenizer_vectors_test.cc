// Reproduces llama.cpp's / HF's tokenizer test vectors: every .inp/.out pair
// under models/vocab and models/tokenizers (encode without BOS, specials not
// parsed), plus Decode of the expected ids and Decode(Encode(s)) == s.
#include <gtest/gtest.h>

#include "tokenizer/test_util.h"

namespace deepinfer {
namespace {

using testing::CachedTokenizer;
using testing::IdsToString;
using testing::SharedPath;

struct VectorCase {
  const char* name;
  const char* tokenizer;  // CachedTokenizer spec
  const char* vectors;    // path prefix of .inp / .out, relative to the shared dir
};

void PrintTo(const VectorCase& c, std::ostream* os) { *os << c.name; }

std::string VectorPath(const VectorCase& c, const char* extension) {
  return SharedPath(c.vectors) + extension;
}

class TokenizerVectorsTest : public ::testing::TestWithParam<VectorCase> {};

TEST_P(TokenizerVectorsTest, EncodeMatchesReference) {
  const VectorCase& c = GetParam();
  const Tokenizer* tok = CachedTokenizer(c.tokenizer);
  ASSERT_NE(tok, nullptr);
  const auto inputs = testing::ReadVectorInputs(VectorPath(c, ".inp"));
  const auto expected = testing::ReadVectorOutputs(VectorPath(c, ".out"));
  ASSERT_EQ(inputs.size(), 46u);
  ASSERT_EQ(inputs.size(), expected.size());
  int passed = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<int32_t> ids = tok->Encode(inputs[i], /*add_special=*/false, /*parse_special=*/false);
    if (ids == expected[i]) {
      ++passed;
    } else {
      ADD_FAILURE() << c.name << " case " << i << " '" << inputs[i]
                    << "'\n  expected: " << IdsToString(expected[i]) << "\n  actual:   " << IdsToString(ids);
    }
  }
  std::printf("[ %s ] %d/%zu vectors match\n", c.name, passed, inputs.size());
}

TEST_P(TokenizerVectorsTest, DecodeRoundTrips) {
  const VectorCase& c = GetParam();
  const Tokenizer* tok = CachedTokenizer(c.tokenizer);
  ASSERT_NE(tok, nullptr);
  const auto inputs = testing::ReadVectorInputs(VectorPath(c, ".inp"));
  const auto expected = testing::ReadVectorOutputs(VectorPath(c, ".out"));
  ASSERT_EQ(inputs.size(), expected.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(tok->Decode(expected[i]), inputs[i]) << c.name << " case " << i << " (reference ids)";
    EXPECT_EQ(tok->Decode(tok->Encode(inputs[i], false, false)), inputs[i]) << c.name << " case " << i;
    // With BOS the text is the same: BOS renders as nothing and SPM still
    // drops exactly the one space it added.
    EXPECT_EQ(tok->Decode(tok->Encode(inputs[i], true, false)), inputs[i])
        << c.name << " case " << i << " (BOS)";
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, TokenizerVectorsTest,
    ::testing::Values(
        VectorCase{"llama_spm", "gguf:models/vocab/ggml-vocab-llama-spm.gguf",
                   "models/vocab/ggml-vocab-llama-spm.gguf"},
        VectorCase{"phi_3", "gguf:models/vocab/ggml-vocab-phi-3.gguf", "models/vocab/ggml-vocab-phi-3.gguf"},
        VectorCase{"gpt_2", "gguf:models/vocab/ggml-vocab-gpt-2.gguf", "models/vocab/ggml-vocab-gpt-2.gguf"},
        VectorCase{"deepseek_llm", "gguf:models/vocab/ggml-vocab-deepseek-llm.gguf",
                   "models/vocab/ggml-vocab-deepseek-llm.gguf"},
        VectorCase{"deepseek_coder", "gguf:models/vocab/ggml-vocab-deepseek-coder.gguf",
                   "models/vocab/ggml-vocab-deepseek-coder.gguf"},
        VectorCase{"llama3_hf", "hf:models/tokenizers/llama3/tokenizer.json.gz",
                   "models/vocab/ggml-vocab-llama-bpe.gguf"},
        VectorCase{"qwen3_hf", "hf:models/tokenizers/qwen3/tokenizer.json.gz",
                   "models/vocab/ggml-vocab-qwen2.gguf"},
        VectorCase{"deepseek_v3_hf", "hf:models/tokenizers/deepseek_v3/tokenizer.json.gz",
                   "models/tokenizers/deepseek_v3/tokenizer.json"}),
    [](const ::testing::TestParamInfo<VectorCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace deepinfer
