#include "io/gguf.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "io/io_test_util.h"
#include "tensor/dequant.h"

namespace deepinfer {
namespace {

using testing_util::AsBytes;
using testing_util::MakeTempDir;
using testing_util::ReadBytes;
using testing_util::SharedModel;

TEST(GgufWriter, RoundTripsMetadataAndTensors) {
  GgufWriter w;
  w.SetString("general.architecture", "llama");
  w.SetU32("llama.block_count", 7);
  w.SetI32("neg", -5);
  w.SetU64("big", 1ull << 40);
  w.SetF32("eps", 1e-5f);
  w.SetBool("flag", true);
  w.SetStringArray("tokens", {"a", "", "h\xc3\xa9llo"});
  w.SetF32Array("scores", {0.5f, -1.25f});
  w.SetI32Array("types", {1, 3, -2});
  w.SetBoolArray("swa", {true, false, true});
  w.SetU32("llama.block_count", 9);  // replaces, keeps one entry

  const std::vector<float> a = {1, 2, 3, 4, 5, 6};
  w.AddTensor("a", DType::kF32, {2, 3}, AsBytes(a));
  std::vector<uint16_t> h = {F32ToF16(1.5f), F32ToF16(-2.0f), F32ToF16(0.25f)};
  w.AddTensor("h", DType::kF16, {3}, AsBytes(h));
  std::vector<float> q(64);
  for (int i = 0; i < 64; ++i) q[i] = static_cast<float>(i - 32);
  std::vector<uint8_t> qb(RowBytes(DType::kQ8_0, 64));
  ASSERT_TRUE(QuantizeRow(DType::kQ8_0, q.data(), qb.data(), 64));
  w.AddTensor("q", DType::kQ8_0, {1, 1, 64}, [qb]() -> StatusOr<std::vector<uint8_t>> { return qb; });

  const std::string path = MakeTempDir("gguf_rt") + "/m.gguf";
  ASSERT_TRUE(w.Write(path).ok());
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const GgufFile& g = **f;
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.metadata().size(), 10u);
  EXPECT_EQ(*g.GetString("general.architecture"), "llama");
  EXPECT_EQ(*g.GetInt("llama.block_count"), 9);
  EXPECT_EQ(*g.GetInt("neg"), -5);
  EXPECT_EQ(*g.GetInt("big"), 1ll << 40);
  EXPECT_FLOAT_EQ(static_cast<float>(*g.GetFloat("eps")), 1e-5f);
  EXPECT_EQ(*g.GetFloat("llama.block_count"), 9.0);  // ints read as floats
  EXPECT_TRUE(*g.GetBool("flag"));
  EXPECT_EQ(*g.GetStringArray("tokens"), (std::vector<std::string>{"a", "", "h\xc3\xa9llo"}));
  EXPECT_EQ(*g.GetFloatArray("scores"), (std::vector<double>{0.5, -1.25}));
  EXPECT_EQ(*g.GetIntArray("types"), (std::vector<int64_t>{1, 3, -2}));
  EXPECT_EQ(*g.GetIntArray("swa"), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(g.Find("types")->array_type, GgufType::kInt32);

  // Type errors and absent keys.
  EXPECT_EQ(g.GetInt("general.architecture").status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(g.GetInt("general.architecture").status().message().find("general.architecture"),
            std::string::npos);
  EXPECT_EQ(g.GetString("nope").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(g.GetIntOr("nope", 42), 42);
  EXPECT_EQ(g.GetIntOr("general.architecture", 42), 42);
  EXPECT_EQ(g.GetStringOr("general.architecture", "x"), "llama");

  ASSERT_EQ(g.tensors().size(), 3u);
  const TensorView* ta = g.FindTensor("a");
  ASSERT_NE(ta, nullptr);
  EXPECT_EQ(ta->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ta->nbytes, 24);
  EXPECT_EQ(std::memcmp(ta->data, a.data(), 24), 0);
  const TensorView* th = g.FindTensor("h");
  EXPECT_EQ(th->dtype, DType::kF16);
  float hf[3];
  DequantizeRow(DType::kF16, th->data, hf, 3);
  EXPECT_EQ(hf[0], 1.5f);
  EXPECT_EQ(hf[1], -2.0f);
  const TensorView* tq = g.FindTensor("q");
  EXPECT_EQ(tq->shape, (std::vector<int64_t>{1, 1, 64}));
  EXPECT_EQ(tq->nbytes, 68);
  std::vector<float> back(64);
  DequantizeRow(DType::kQ8_0, tq->data, back.data(), 64);
  for (int i = 0; i < 64; ++i) EXPECT_NEAR(back[i], q[i], 0.13f) << i;
  // Data is aligned to 32 bytes from the start of the file.
  const auto bytes = ReadBytes(path);
  for (const auto& t : g.tensors()) {
    const auto* base = static_cast<const uint8_t*>(g.tensors()[0].data);
    EXPECT_EQ((static_cast<const uint8_t*>(t.data) - base) % 32, 0);
  }
  EXPECT_EQ(bytes.size() % 32, 0u);
  EXPECT_EQ(g.FindTensor("missing"), nullptr);
}

TEST(GgufWriter, RejectsSizeMismatchAndLeavesNoFile) {
  GgufWriter w;
  w.AddTensor("a", DType::kF32, {2, 3}, std::vector<uint8_t>(20));
  const std::string path = MakeTempDir("gguf_bad") + "/m.gguf";
  Status st = w.Write(path);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("'a'"), std::string::npos);
  EXPECT_FALSE(GgufFile::Open(path).ok());
  EXPECT_FALSE(GgufFile::Open(path + ".tmp").ok());
}

// stories260K.gguf, converted by llama.cpp from llama2.c's stories260K.bin:
// metadata per models/README.md, and the embedding table must be the .bin's
// bytes (the .bin stores token_embedding [512][64] f32 right after its
// 28-byte header).
TEST(GgufFile, ReadsStories260K) {
  auto f = GgufFile::Open(SharedModel("gguf/stories260K.gguf"));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const GgufFile& g = **f;
  EXPECT_EQ(*g.GetString("general.architecture"), "llama");
  EXPECT_EQ(*g.GetInt("llama.embedding_length"), 64);
  EXPECT_EQ(*g.GetInt("llama.block_count"), 5);
  EXPECT_EQ(*g.GetInt("llama.feed_forward_length"), 172);
  EXPECT_EQ(*g.GetInt("llama.attention.head_count"), 8);
  EXPECT_EQ(*g.GetInt("llama.attention.head_count_kv"), 4);
  EXPECT_EQ(*g.GetInt("llama.rope.dimension_count"), 8);
  EXPECT_EQ(*g.GetInt("llama.context_length"), 128);
  EXPECT_EQ(*g.GetString("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(g.GetStringArray("tokenizer.ggml.tokens")->size(), 512u);
  EXPECT_EQ(g.GetFloatArray("tokenizer.ggml.scores")->size(), 512u);
  EXPECT_EQ(g.GetIntArray("tokenizer.ggml.token_type")->size(), 512u);
  EXPECT_EQ(*g.GetInt("tokenizer.ggml.bos_token_id"), 1);
  EXPECT_EQ(*g.GetInt("tokenizer.ggml.eos_token_id"), 2);
  for (const auto& t : g.tensors()) EXPECT_EQ(t.dtype, DType::kF32) << t.name;

  const TensorView* emb = g.FindTensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->shape, (std::vector<int64_t>{512, 64}));
  const TensorView* k = g.FindTensor("blk.0.attn_k.weight");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->shape, (std::vector<int64_t>{32, 64}));  // kv_dim 32 x dim 64
  EXPECT_EQ(g.FindTensor("blk.4.ffn_gate.weight")->shape, (std::vector<int64_t>{172, 64}));
  EXPECT_EQ(g.FindTensor("blk.4.ffn_down.weight")->shape, (std::vector<int64_t>{64, 172}));

  const auto bin = ReadBytes(SharedModel("llama2c/stories260K.bin"));
  ASSERT_GE(bin.size(), 28u + 512 * 64 * 4);
  EXPECT_EQ(std::memcmp(emb->data, bin.data() + 28, 512 * 64 * 4), 0);
  // rms_att [L][dim] follows the embedding; layer 0's is attn_norm of blk.0.
  EXPECT_EQ(std::memcmp(g.FindTensor("blk.0.attn_norm.weight")->data, bin.data() + 28 + 512 * 64 * 4, 64 * 4),
            0);
}

TEST(GgufFile, ReadsF16TinyRandomLlama) {
  auto f = GgufFile::Open(SharedModel("gguf/llama-2-tiny-random.gguf"));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const GgufFile& g = **f;
  int f16 = 0, f32 = 0;
  for (const auto& t : g.tensors()) (t.dtype == DType::kF16 ? f16 : f32) += 1;
  EXPECT_EQ(f16, 9);
  EXPECT_EQ(f32, 3);
  EXPECT_EQ(*g.GetInt("llama.embedding_length"), 8);
  EXPECT_EQ(*g.GetInt("llama.context_length"), 4096);
  EXPECT_EQ(*g.GetInt("llama.feed_forward_length"), 32);
  EXPECT_EQ(g.GetStringArray("tokenizer.ggml.tokens")->size(), 32000u);
  const TensorView* q = g.FindTensor("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->dtype, DType::kF16);
  EXPECT_EQ(q->shape, (std::vector<int64_t>{8, 8}));
  std::vector<float> row(8);
  DequantizeRow(DType::kF16, q->data, row.data(), 8);
  for (float v : row) EXPECT_TRUE(std::isfinite(v));
}

TEST(GgufFile, ReadsVocabOnlyFile) {
  auto f = GgufFile::Open(SharedModel("vocab/ggml-vocab-gpt-2.gguf"));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_TRUE((*f)->tensors().empty());
  EXPECT_EQ(*(*f)->GetString("tokenizer.ggml.model"), "gpt2");
}

TEST(GgufFile, RejectsVersion1AndMissingFile) {
  const uint8_t v1[] = {'G', 'G', 'U', 'F', 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  auto r = GgufFile::Parse(v1, sizeof(v1), "old.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(r.status().message().find("old.gguf"), std::string::npos);
  EXPECT_NE(r.status().message().find("version 1"), std::string::npos);
  auto missing = GgufFile::Open("/nonexistent/x.gguf");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("/nonexistent/x.gguf"), std::string::npos);
  EXPECT_FALSE(GgufFile::Open(DI_SHARED_DIR).ok());  // a directory
}

}  // namespace
}  // namespace deepinfer
