#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "io/gguf.h"
#include "io/io_test_util.h"
#include "tensor/dequant.h"

namespace deepinfer {
namespace {

using testing_util::AsBytes;
using testing_util::MakeTempDir;
using testing_util::ReadBytes;
using testing_util::SharedModel;

TEST(SafetensorsWriter, RoundTrip) {
  SafetensorsWriter w;
  const std::vector<float> a = {1, -2, 3.5f, 4, 5, 6};
  const std::vector<uint16_t> b = {F32ToBF16(1.0f), F32ToBF16(-3.0f)};
  const std::vector<int64_t> c = {7, -8};
  w.AddTensor("z.first", DType::kF32, {2, 3}, AsBytes(a));
  w.AddTensor("a.second", DType::kBF16, {2}, AsBytes(b));
  w.AddTensor("m.third", DType::kI64, {1, 2}, [c]() -> StatusOr<std::vector<uint8_t>> { return AsBytes(c); });
  w.SetMetadata("format", "pt");
  const std::string path = MakeTempDir("st_rt") + "/model.safetensors";
  ASSERT_TRUE(w.Write(path).ok());

  const auto raw = ReadBytes(path);
  uint64_t n = 0;
  std::memcpy(&n, raw.data(), 8);
  EXPECT_EQ(n % 8, 0u);  // header padded with spaces to 8 bytes
  EXPECT_EQ(raw.size(), 8 + n + 24 + 4 + 16);

  auto f = SafetensorsFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ((*f)->tensors().size(), 3u);
  EXPECT_EQ((*f)->tensors()[0].name, "z.first");  // data order, not name order
  EXPECT_EQ((*f)->metadata().at("format"), "pt");
  const TensorView* ta = (*f)->FindTensor("z.first");
  EXPECT_EQ(ta->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::memcmp(ta->data, a.data(), 24), 0);
  const TensorView* tb = (*f)->FindTensor("a.second");
  EXPECT_EQ(tb->dtype, DType::kBF16);
  float bf[2];
  DequantizeRow(DType::kBF16, tb->data, bf, 2);
  EXPECT_EQ(bf[1], -3.0f);
  const TensorView* tc = (*f)->FindTensor("m.third");
  int64_t cv[2];
  std::memcpy(cv, tc->data, 16);
  EXPECT_EQ(cv[1], -8);
}

TEST(SafetensorsWriter, RejectsQuantizedAndDuplicates) {
  const std::string dir = MakeTempDir("st_bad");
  SafetensorsWriter w;
  w.AddTensor("q", DType::kQ8_0, {32}, std::vector<uint8_t>(34));
  EXPECT_EQ(w.Write(dir + "/a.safetensors").code(), StatusCode::kInvalidArgument);
  SafetensorsWriter d;
  d.AddTensor("x", DType::kF32, {1}, std::vector<uint8_t>(4));
  d.AddTensor("x", DType::kF32, {1}, std::vector<uint8_t>(4));
  EXPECT_EQ(d.Write(dir + "/b.safetensors").code(), StatusCode::kInvalidArgument);
}

// stories260K-mtp holds llama2.c's stories260K weights under HF names; its
// embedding must equal the llama.cpp GGUF conversion of the same checkpoint.
TEST(SafetensorsFile, ReadsStoriesMtp) {
  auto ck = SafetensorsCheckpoint::Open(SharedModel("stories260K-mtp"));
  ASSERT_TRUE(ck.ok()) << ck.status().ToString();
  EXPECT_EQ((*ck)->tensors().size(), 61u);  // 5 layers x 9 + 3 + 13 MTP
  const TensorView* emb = (*ck)->FindTensor("model.embed_tokens.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->dtype, DType::kF32);
  EXPECT_EQ(emb->shape, (std::vector<int64_t>{512, 64}));
  EXPECT_EQ((*ck)->FindTensor("model.layers.0.self_attn.k_proj.weight")->shape,
            (std::vector<int64_t>{32, 64}));
  EXPECT_EQ((*ck)->FindTensor("model.layers.5.eh_proj.weight")->shape, (std::vector<int64_t>{64, 128}));
  auto g = GgufFile::Open(SharedModel("gguf/stories260K.gguf"));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(std::memcmp(emb->data, (*g)->FindTensor("token_embd.weight")->data, 512 * 64 * 4), 0);
  EXPECT_EQ(std::memcmp((*ck)->FindTensor("lm_head.weight")->data, emb->data, 512 * 64 * 4), 0);
  EXPECT_EQ(std::memcmp((*ck)->FindTensor("model.layers.3.mlp.down_proj.weight")->data,
                        (*g)->FindTensor("blk.3.ffn_down.weight")->data, 64 * 172 * 4),
            0);
  // Opening the file directly works too.
  EXPECT_TRUE(SafetensorsCheckpoint::Open(SharedModel("stories260K-mtp/model.safetensors")).ok());
}

void WriteText(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(SafetensorsCheckpoint, ShardedIndex) {
  const std::string dir = MakeTempDir("st_shard");
  SafetensorsWriter s1, s2;
  s1.AddTensor("w1", DType::kF32, {2}, AsBytes(std::vector<float>{1, 2}));
  s2.AddTensor("w2", DType::kF16, {1}, AsBytes(std::vector<uint16_t>{0x3c00}));
  ASSERT_TRUE(s1.Write(dir + "/model-00001-of-00002.safetensors").ok());
  ASSERT_TRUE(s2.Write(dir + "/model-00002-of-00002.safetensors").ok());
  WriteText(dir + "/model.safetensors.index.json",
            R"({"metadata":{},"weight_map":{"w1":"model-00001-of-00002.safetensors",)"
            R"("w2":"model-00002-of-00002.safetensors"}})");
  auto ck = SafetensorsCheckpoint::Open(dir);
  ASSERT_TRUE(ck.ok()) << ck.status().ToString();
  EXPECT_EQ((*ck)->tensors().size(), 2u);
  ASSERT_NE((*ck)->FindTensor("w2"), nullptr);
  EXPECT_EQ((*ck)->FindTensor("w2")->dtype, DType::kF16);
  EXPECT_EQ((*ck)->FindTensor("nope"), nullptr);

  WriteText(
      dir + "/model.safetensors.index.json",
      R"({"weight_map":{"w1":"model-00001-of-00002.safetensors","w3":"model-00002-of-00002.safetensors"}})");
  auto missing = SafetensorsCheckpoint::Open(dir);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("'w3'"), std::string::npos);

  WriteText(dir + "/model.safetensors.index.json", R"({"weight_map":{"w1":"../evil.safetensors"}})");
  auto evil = SafetensorsCheckpoint::Open(dir);
  ASSERT_FALSE(evil.ok());
  EXPECT_EQ(evil.status().code(), StatusCode::kDataLoss);

  WriteText(dir + "/model.safetensors.index.json", "{not json");
  EXPECT_EQ(SafetensorsCheckpoint::Open(dir).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(SafetensorsCheckpoint::Open(dir + "/nowhere").status().code(), StatusCode::kNotFound);
}

TEST(SafetensorsCheckpoint, DuplicateAcrossShards) {
  const std::string dir = MakeTempDir("st_dup");
  SafetensorsWriter s;
  s.AddTensor("w", DType::kF32, {1}, AsBytes(std::vector<float>{1}));
  ASSERT_TRUE(s.Write(dir + "/a.safetensors").ok());
  ASSERT_TRUE(s.Write(dir + "/b.safetensors").ok());
  WriteText(dir + "/model.safetensors.index.json",
            R"({"weight_map":{"w":"a.safetensors","x":"b.safetensors"}})");
  auto r = SafetensorsCheckpoint::Open(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("another shard"), std::string::npos);
}

}  // namespace
}  // namespace deepinfer
