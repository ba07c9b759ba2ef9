// LoadModel: both formats with and without their tokenizer, Describe, and
// the errors for paths that are not a checkpoint.
#include "checkpoint/checkpoint.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/testing.h"
#include "synth/synth.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer {
namespace {

const std::string kModels = std::string(DI_SHARED_DIR) + "/models";

StatusOr<LoadedModel> Load(const std::string& path, bool tokenizer) {
  LoadOptions options;
  options.num_threads = 2;
  options.load_tokenizer = tokenizer;
  return LoadModel(path, options);
}

TEST(Checkpoint, LoadWithTokenizer) {
  auto loaded = Load(kModels + "/gguf/stories260K.gguf", /*tokenizer=*/true);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const LoadedModel& m = *loaded;
  ASSERT_NE(m.model, nullptr);
  EXPECT_EQ(m.format, "gguf");
  ASSERT_NE(m.tokenizer, nullptr);
  EXPECT_EQ(m.tokenizer->vocab_size(), 512);
  EXPECT_EQ(m.tokenizer->Encode("Once upon a time", true, false),
            (std::vector<int32_t>{1, 403, 407, 261, 378}));
  const std::string info = m.Describe();
  EXPECT_NE(info.find("architecture: llama"), std::string::npos) << info;
  EXPECT_NE(info.find("f32"), std::string::npos) << info;
}

// An HF directory carries its tokenizer in tokenizer.json beside the
// weights; load_tokenizer = false leaves it out and keeps the model.
TEST(Checkpoint, HfDirectoryWithAndWithoutTokenizer) {
  SynthOptions o;
  o.format = SynthFormat::kHf;
  o.seed = 3;
  o.out = testing::PerTestPath(DI_BINARY_DIR, "checkpoint_test", "llama_tiny_hf");
  ASSERT_TRUE(WriteSynthModel(o).ok());

  auto with = Load(o.out, /*tokenizer=*/true);
  ASSERT_TRUE(with.ok()) << with.status().ToString();
  EXPECT_EQ(with->format, "hf");
  EXPECT_EQ(with->path, o.out);
  ASSERT_NE(with->model, nullptr);
  ASSERT_NE(with->tokenizer, nullptr);
  EXPECT_EQ(with->tokenizer->vocab_size(), with->model->config().vocab_size);
  EXPECT_NE(with->Describe().find("tokenizer: byte-level-bpe"), std::string::npos) << with->Describe();

  auto without = Load(o.out, /*tokenizer=*/false);
  ASSERT_TRUE(without.ok()) << without.status().ToString();
  ASSERT_NE(without->model, nullptr);
  EXPECT_EQ(without->tokenizer, nullptr);
  EXPECT_NE(without->Describe().find("tokenizer: none"), std::string::npos) << without->Describe();
}

TEST(Checkpoint, LoadErrors) {
  LoadOptions options;
  auto missing = LoadModel(kModels + "/no/such/model.gguf", options);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no/such/model.gguf"), std::string::npos);
  // A directory without config.json.
  auto no_config = LoadModel(kModels + "/gguf", options);
  ASSERT_FALSE(no_config.ok());
  EXPECT_NE(no_config.status().message().find("config.json"), std::string::npos);
  // A GGUF without tensors (vocab only).
  auto vocab_only = LoadModel(kModels + "/vocab/ggml-vocab-llama-spm.gguf", options);
  ASSERT_FALSE(vocab_only.ok());
  EXPECT_NE(vocab_only.status().message().find("token_embd.weight"), std::string::npos)
      << vocab_only.status().message();
}

}  // namespace
}  // namespace deepinfer
