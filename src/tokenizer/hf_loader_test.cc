// Loading from files: malformed tokenizer.json / tokenizer_config.json / GGUF
// metadata give a Status that names the file and the field, never a crash.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "io/gguf.h"
#include "tokenizer/test_util.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer {
namespace {

namespace fs = std::filesystem;

class HfLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("di_tok_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& content) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << content;
    return p.string();
  }

  // A small valid byte-level tokenizer.json with `model` and `pre` spliced in.
  static std::string Json(const std::string& model, const std::string& pre = kPre,
                          const std::string& added = "[]") {
    return R"({"version": "1.0", "added_tokens": )" + added + R"(, "normalizer": null, "pre_tokenizer": )" +
           pre + R"(, "model": )" + model + "}";
  }
  static constexpr const char* kPre =
      R"({"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "\\p{N}"}, "behavior": "Isolated", "invert": false}, {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}]})";
  static constexpr const char* kModel =
      R"({"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ġab": 4, "1": 5}, "merges": ["a b", ["Ġ", "ab"]]})";

  // Expects failure with `code` and a message containing every fragment.
  template <typename T>
  static void ExpectError(const StatusOr<T>& result, StatusCode code,
                          std::initializer_list<std::string> fragments) {
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), code) << result.status().ToString();
    for (const auto& f : fragments) {
      EXPECT_NE(result.status().message().find(f), std::string::npos)
          << "'" << f << "' not in: " << result.status().message();
    }
  }

  fs::path dir_;
};

TEST_F(HfLoaderTest, LoadsMinimalTokenizerWithStringAndPairMerges) {
  const std::string added = R"([{"id": 6, "content": "<eos>", "special": true, "lstrip": true},)"
                            R"( {"id": 7, "content": "<x>", "special": false, "rstrip": true}])";
  const std::string path = Write("tokenizer.json", Json(kModel, kPre, added));
  Write("tokenizer_config.json",
        R"({"eos_token": {"content": "<eos>"}, "chat_template": [{"name": "default", "template": "T"}]})");
  auto tok = Tokenizer::FromHfDir(dir_.string());
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->vocab_size(), 8);
  EXPECT_EQ((*tok)->eos_id(), 6);
  EXPECT_EQ((*tok)->bos_id(), -1);
  EXPECT_EQ((*tok)->data().chat_template, "T");
  EXPECT_EQ((*tok)->Encode("ab ab1", false, false), std::vector<int32_t>({2, 4, 5}));
  EXPECT_EQ((*tok)->Encode("<x>ab<eos>", false, true), std::vector<int32_t>({7, 2, 6}));
  // lstrip / rstrip swallow the spaces next to the token.
  EXPECT_EQ((*tok)->Encode("<x>  ab  <eos>", false, true), std::vector<int32_t>({7, 2, 6}));
  EXPECT_EQ((*tok)->Decode({7, 2, 6}), "<x>ab");
  EXPECT_TRUE((*tok)->IsEndOfGeneration(6));
  (void)path;
}

TEST_F(HfLoaderTest, GenerationConfigAddsEndOfGenerationIds) {
  Write("tokenizer.json", Json(kModel));
  Write("tokenizer_config.json", R"({"eos_token": "b"})");
  Write("generation_config.json", R"({"bos_token_id": 0, "eos_token_id": [1, 5]})");
  auto tok = Tokenizer::FromHfDir(dir_.string());
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->eos_id(), 1);
  EXPECT_TRUE((*tok)->IsEndOfGeneration(1));
  EXPECT_TRUE((*tok)->IsEndOfGeneration(5));
  EXPECT_FALSE((*tok)->IsEndOfGeneration(2));

  // A single id works too, and sets EOS when tokenizer_config names none.
  fs::remove(dir_ / "tokenizer_config.json");
  Write("generation_config.json", R"({"eos_token_id": 3})");
  tok = Tokenizer::FromHfDir(dir_.string());
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->eos_id(), 3);

  Write("generation_config.json", R"({"eos_token_id": [1, 99]})");
  ExpectError(Tokenizer::FromHfDir(dir_.string()), StatusCode::kInvalidArgument,
              {"generation_config.json", "eos_token_id"});
}

TEST_F(HfLoaderTest, ReadsGzipAndReportsTruncation) {
  const std::string json = Json(kModel);
  const std::string gz_path = (dir_ / "tokenizer.json.gz").string();
  gzFile f = gzopen(gz_path.c_str(), "wb");
  gzwrite(f, json.data(), static_cast<unsigned>(json.size()));
  gzclose(f);
  EXPECT_TRUE(Tokenizer::FromHfDir(dir_.string()).ok());

  std::string bytes = testing::ReadFile(gz_path);
  const std::string cut = Write("cut.json.gz", bytes.substr(0, bytes.size() / 2));
  ExpectError(Tokenizer::FromHfFile(cut), StatusCode::kDataLoss, {"cut.json.gz"});
}

TEST_F(HfLoaderTest, MalformedTokenizerJson) {
  struct Case {
    std::string content;
    StatusCode code;
    std::vector<std::string> fragments;
  };
  const std::vector<Case> cases = {
      {"{not json", StatusCode::kDataLoss, {"invalid JSON"}},
      {"[1, 2]", StatusCode::kInvalidArgument, {"expected an object"}},
      {R"({"pre_tokenizer": null})", StatusCode::kInvalidArgument, {"model: missing"}},
      {Json(R"({"type": "BPE", "vocab": [1], "merges": []})"), StatusCode::kInvalidArgument, {"model.vocab"}},
      {Json(R"({"type": "BPE", "vocab": {"a": "x"}, "merges": []})"),
       StatusCode::kInvalidArgument,
       {"model.vocab[\"a\"]"}},
      {Json(R"({"type": "BPE", "vocab": {"a": -3}, "merges": []})"),
       StatusCode::kInvalidArgument,
       {"model.vocab[\"a\"]"}},
      {Json(R"({"type": "BPE", "vocab": {"a": 0}})"), StatusCode::kInvalidArgument, {"model.merges"}},
      {Json(R"({"type": "BPE", "vocab": {"a": 0}, "merges": ["a a", 7]})"),
       StatusCode::kInvalidArgument,
       {"model.merges[1]"}},
      {Json(R"({"type": "BPE", "vocab": {"a": 0}, "merges": [["a", "a", "a"]]})"),
       StatusCode::kInvalidArgument,
       {"model.merges[0]"}},
      {Json(R"({"type": "BPE", "vocab": {"a": 0}, "merges": ["aa"]})"),
       StatusCode::kInvalidArgument,
       {"merges[0]", "'aa'"}},
      {Json(R"({"type": "Unigram", "vocab": []})"), StatusCode::kUnimplemented, {"model.type", "Unigram"}},
      {Json(kModel, "null"), StatusCode::kUnimplemented, {"pre_tokenizer"}},
      {Json(kModel, R"({"type": "Metaspace"})"),
       StatusCode::kUnimplemented,
       {"pre_tokenizer.type", "Metaspace"}},
      {Json(kModel, R"({"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "("}, )"
                    R"("behavior": "Isolated"}, {"type": "ByteLevel"}]})"),
       StatusCode::kInvalidArgument,
       {"regex '('"}},
      {Json(kModel, R"({"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Sideways"})"),
       StatusCode::kInvalidArgument,
       {"pre_tokenizer.behavior", "Sideways"}},
      {Json(kModel, R"({"type": "Sequence", "pretokenizers": [{"type": "ByteLevel", "use_regex": 3}]})"),
       StatusCode::kInvalidArgument,
       {"pre_tokenizer.pretokenizers[0].use_regex"}},
      {Json(kModel, kPre, R"([{"id": -1, "content": "<x>"}])"),
       StatusCode::kInvalidArgument,
       {"added_tokens[0].id"}},
      {Json(kModel, kPre, R"([{"id": 9}])"), StatusCode::kInvalidArgument, {"added_tokens[0].content"}},
      {Json(kModel, kPre, R"([{"id": 99999999999, "content": "<x>"}])"),
       StatusCode::kInvalidArgument,
       {"added_tokens[0].id"}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i) + ": " + cases[i].content);
    const std::string path = Write("bad" + std::to_string(i) + ".json", cases[i].content);
    auto tok = Tokenizer::FromHfFile(path);
    ASSERT_FALSE(tok.ok());
    EXPECT_EQ(tok.status().code(), cases[i].code) << tok.status().ToString();
    EXPECT_NE(tok.status().message().find(path), std::string::npos) << tok.status().message();
    for (const auto& f : cases[i].fragments) {
      EXPECT_NE(tok.status().message().find(f), std::string::npos)
          << "'" << f << "' not in: " << tok.status().message();
    }
  }
}

TEST_F(HfLoaderTest, MalformedConfigAndMissingFiles) {
  Write("tokenizer.json", Json(kModel));
  Write("tokenizer_config.json", R"({"bos_token": "<nope>"})");
  ExpectError(Tokenizer::FromHfDir(dir_.string()), StatusCode::kInvalidArgument,
              {"tokenizer_config.json", "bos_token", "<nope>"});
  Write("tokenizer_config.json", R"({"add_bos_token": "yes"})");
  ExpectError(Tokenizer::FromHfDir(dir_.string()), StatusCode::kInvalidArgument, {"add_bos_token"});
  Write("tokenizer_config.json", R"({"chat_template": 5})");
  ExpectError(Tokenizer::FromHfDir(dir_.string()), StatusCode::kInvalidArgument, {"chat_template"});

  ExpectError(Tokenizer::FromHfFile((dir_ / "missing.json").string()), StatusCode::kNotFound,
              {"missing.json"});
  fs::create_directories(dir_ / "empty");
  ExpectError(Tokenizer::FromHfDir((dir_ / "empty").string()), StatusCode::kNotFound, {"empty"});
}

TEST_F(HfLoaderTest, MalformedGgufMetadata) {
  auto open = [&](const GgufWriter& w, const std::string& name) -> StatusOr<std::unique_ptr<Tokenizer>> {
    const std::string path = (dir_ / name).string();
    Status s = w.Write(path);
    if (!s.ok()) return s;
    DI_ASSIGN_OR_RETURN(auto gguf, GgufFile::Open(path));
    return Tokenizer::FromGguf(*gguf);
  };
  {
    GgufWriter w;
    w.SetString("tokenizer.ggml.model", "bert");
    w.SetStringArray("tokenizer.ggml.tokens", {"a"});
    ExpectError(open(w, "bert.gguf"), StatusCode::kUnimplemented, {"bert.gguf", "bert"});
  }
  {
    GgufWriter w;
    w.SetString("tokenizer.ggml.model", "llama");
    ExpectError(open(w, "notokens.gguf"), StatusCode::kNotFound, {"notokens.gguf", "tokenizer.ggml.tokens"});
  }
  {
    GgufWriter w;
    w.SetString("tokenizer.ggml.model", "llama");
    w.SetStringArray("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a"});
    w.SetF32Array("tokenizer.ggml.scores", {0, 0});
    ExpectError(open(w, "scores.gguf"), StatusCode::kInvalidArgument,
                {"scores.gguf", "tokenizer.ggml.scores"});
  }
  {
    GgufWriter w;
    w.SetString("tokenizer.ggml.model", "gpt2");
    w.SetStringArray("tokenizer.ggml.tokens", {"a"});
    ExpectError(open(w, "nomerges.gguf"), StatusCode::kNotFound, {"nomerges.gguf", "tokenizer.ggml.merges"});
  }
  {
    // Out-of-range special ids (UINT32_MAX is "none" in llama.cpp's files) are ignored.
    GgufWriter w;
    w.SetString("tokenizer.ggml.model", "llama");
    w.SetStringArray("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>",
                                               "\xE2\x96\x81"
                                               "a"});
    w.SetU32("tokenizer.ggml.eos_token_id", 0xFFFFFFFFu);
    w.SetU32("tokenizer.ggml.bos_token_id", 777);
    auto tok = open(w, "ids.gguf");
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    EXPECT_EQ((*tok)->eos_id(), -1);
    EXPECT_EQ((*tok)->bos_id(), -1);
    EXPECT_EQ((*tok)->Encode("a", true, false), std::vector<int32_t>({3}));
  }
}

}  // namespace
}  // namespace deepinfer
