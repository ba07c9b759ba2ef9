// LoadModel: both formats with and without their tokenizer, Describe, and
// the errors for paths that are not a checkpoint.
#include "checkpoint/checkpoint.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

// --tokenizer: stories260K-mtp ships weights only; the stories260K GGUF's
// vocabulary (the same tok512) serves it. A vocabulary larger than the
// model's, or a path that holds no tokenizer, is a load error.
TEST(Checkpoint, TokenizerFromElsewhere) {
  LoadOptions options;
  options.num_threads = 2;
  options.tokenizer_path = kModels + "/gguf/stories260K.gguf";
  auto mtp = LoadModel(kModels + "/stories260K-mtp", options);
  ASSERT_TRUE(mtp.ok()) << mtp.status().ToString();
  ASSERT_NE(mtp->tokenizer, nullptr);
  EXPECT_EQ(mtp->tokenizer->Encode("Once upon a time", true, false),
            (std::vector<int32_t>{1, 403, 407, 261, 378}));

  options.tokenizer_path = kModels + "/tokenizers/qwen3";  // 151k tokens for a 512-token model
  auto too_big = LoadModel(kModels + "/gguf/stories260K.gguf", options);
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.status().message().find("vocabulary"), std::string::npos) << too_big.status().ToString();

  options.tokenizer_path = kModels + "/no/such/tokenizer.json";
  auto missing = LoadModel(kModels + "/gguf/stories260K.gguf", options);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound) << missing.status().ToString();
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

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Overwrites the integer metadata value of `key` in a GGUF image in place:
// a key is stored as u64 length + bytes, then a u32 type, then the value.
bool PatchGgufInt(std::string& image, const std::string& key, uint64_t value) {
  std::string needle(8, '\0');
  const uint64_t len = key.size();
  std::memcpy(needle.data(), &len, 8);
  needle += key;
  const size_t at = image.find(needle);
  if (at == std::string::npos) return false;
  const size_t type_at = at + needle.size();
  uint32_t type = 0;
  std::memcpy(&type, image.data() + type_at, 4);
  const size_t width = type == 4 || type == 5 ? 4 : (type == 10 || type == 11 ? 8 : 0);
  if (width == 0) return false;
  std::memcpy(image.data() + type_at + 4, &value, width);  // little-endian low bytes
  return true;
}

// A count no file can hold (issue 19: block_count 0xFFFFFFFF aborted with
// bad_alloc) is a clear InvalidArgument naming the key, before anything is
// allocated from it.
TEST(Checkpoint, AbsurdGgufCountsAreRefusedNamingTheKey) {
  const std::string original = ReadBytes(kModels + "/gguf/stories260K.gguf");
  ASSERT_FALSE(original.empty());
  const std::string dir = testing::PerTestPath(DI_BINARY_DIR, "checkpoint_test", "absurd_gguf");
  std::filesystem::create_directories(dir);
  struct Case {
    const char* key;
    uint64_t value;
  };
  const Case cases[] = {
      {"llama.block_count", 0xFFFFFFFFu},
      {"llama.block_count", 0},
      {"llama.block_count", 10000},
      {"llama.embedding_length", 0xFFFFFFFFu},
      {"llama.attention.head_count", 0xFFFFFFFFu},
      {"llama.attention.head_count_kv", 0xFFFFFFFFu},
      {"llama.feed_forward_length", 0xFFFFFFFFu},
      {"llama.context_length", 0xFFFFFFFFFFFFull},
      {"llama.rope.dimension_count", 0xFFFFFFFFu},
  };
  for (const Case& c : cases) {
    std::string image = original;
    if (!PatchGgufInt(image, c.key, c.value)) continue;  // a key this file does not write
    const std::string path = dir + "/patched.gguf";
    WriteBytes(path, image);
    auto loaded = Load(path, /*tokenizer=*/true);
    ASSERT_FALSE(loaded.ok()) << c.key << " = " << c.value;
    EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument) << loaded.status().ToString();
  }
  std::string image = original;
  ASSERT_TRUE(PatchGgufInt(image, "llama.block_count", 0xFFFFFFFFu));
  WriteBytes(dir + "/patched.gguf", image);
  auto loaded = Load(dir + "/patched.gguf", /*tokenizer=*/false);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.status().message().find("block_count"), std::string::npos) << loaded.status().message();
}

// HF config.json counts: num_hidden_layers -1 (std::length_error before) and
// 1e9 (bad_alloc), a layer count beyond the tensors the directory holds, and
// huge widths are refused with the key named.
TEST(Checkpoint, AbsurdHfConfigCountsAreRefusedNamingTheKey) {
  SynthOptions o;
  o.format = SynthFormat::kHf;
  o.seed = 5;
  o.out = testing::PerTestPath(DI_BINARY_DIR, "checkpoint_test", "absurd_hf");
  ASSERT_TRUE(WriteSynthModel(o).ok());
  const std::string config_path = o.out + "/config.json";
  const std::string original = ReadBytes(config_path);
  auto json = nlohmann::json::parse(original);
  struct Case {
    const char* key;
    int64_t value;
    const char* named;
  };
  const Case cases[] = {
      {"num_hidden_layers", -1, "num_hidden_layers"},
      {"num_hidden_layers", 1000000000, "num_hidden_layers"},
      {"num_hidden_layers", 5000, "layers"},  // within the bound, beyond the tensors
      {"vocab_size", int64_t{1} << 40, "vocab_size"},
      {"hidden_size", int64_t{1} << 40, "hidden_size"},
      {"num_attention_heads", int64_t{1} << 40, "num_heads"},
      {"num_key_value_heads", int64_t{1} << 40, "num_kv_heads"},
      {"head_dim", int64_t{1} << 40, "head_dim"},
      {"intermediate_size", int64_t{1} << 40, "intermediate_size"},
      {"max_position_embeddings", int64_t{1} << 40, "max_position"},
  };
  for (const Case& c : cases) {
    nlohmann::json patched = json;
    patched[c.key] = c.value;
    WriteBytes(config_path, patched.dump());
    auto loaded = Load(o.out, /*tokenizer=*/false);
    ASSERT_FALSE(loaded.ok()) << c.key << " = " << c.value;
    EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument) << loaded.status().ToString();
    EXPECT_NE(loaded.status().message().find(c.named), std::string::npos) << loaded.status().message();
  }
  WriteBytes(config_path, original);
  EXPECT_TRUE(Load(o.out, /*tokenizer=*/false).ok());
}

}  // namespace
}  // namespace deepinfer
