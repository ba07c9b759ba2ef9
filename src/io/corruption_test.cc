// Corrupted and truncated inputs must give a non-OK Status naming the file,
// never a crash (this suite also runs under ASan/UBSan).
#include <gtest/gtest.h>

#include <cstring>

#include "io/gguf.h"
#include "io/io_test_util.h"
#include "io/safetensors.h"

namespace deepinfer {
namespace {

using testing_util::ReadBytes;
using testing_util::SharedModel;

// ---- Hand-built GGUF images --------------------------------------------
struct Bytes {
  std::vector<uint8_t> b;
  template <typename T>
  Bytes& Put(T v) {
    const size_t at = b.size();
    b.resize(at + sizeof(T));
    std::memcpy(b.data() + at, &v, sizeof(T));
    return *this;
  }
  Bytes& Str(const std::string& s) {
    Put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
};

// One tensor "t" of type `ggml_type` with dims `ne` (innermost first) at
// `offset`, preceded by `kv` (already-encoded key/values, `n_kv` of them);
// the data section is `data_bytes` long.
std::vector<uint8_t> OneTensorGguf(std::vector<uint64_t> ne, uint32_t ggml_type, uint64_t offset,
                                   size_t data_bytes, const Bytes& kv = {}, uint64_t n_kv = 0,
                                   uint32_t n_dims_override = 0) {
  Bytes g;
  g.Put<uint32_t>(0x46554747u).Put<uint32_t>(3).Put<uint64_t>(1).Put<uint64_t>(n_kv);
  g.b.insert(g.b.end(), kv.b.begin(), kv.b.end());
  g.Str("t").Put<uint32_t>(n_dims_override ? n_dims_override : static_cast<uint32_t>(ne.size()));
  for (uint64_t d : ne) g.Put<uint64_t>(d);
  g.Put<uint32_t>(ggml_type).Put<uint64_t>(offset);
  while (g.b.size() % 32) g.b.push_back(0);
  g.b.resize(g.b.size() + data_bytes);
  return g.b;
}

Status ParseGguf(const std::vector<uint8_t>& b) {
  auto r = GgufFile::Parse(b.data(), b.size(), "crafted.gguf");
  return r.ok() ? Status::Ok() : r.status();
}

void ExpectFails(const Status& st, StatusCode code, const std::string& needle) {
  EXPECT_EQ(st.code(), code) << st.ToString();
  EXPECT_NE(st.message().find("crafted."), std::string::npos) << st.message();
  EXPECT_NE(st.message().find(needle), std::string::npos) << st.message();
}

TEST(GgufCorruption, CraftedBaselineParses) {
  auto b = OneTensorGguf({4, 2}, 0, 0, 32);
  auto r = GgufFile::Parse(b.data(), b.size(), "crafted.gguf");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->tensors()[0].shape, (std::vector<int64_t>{2, 4}));
}

TEST(GgufCorruption, CraftedTensorInfoErrors) {
  ExpectFails(ParseGguf(OneTensorGguf({4, 2}, 0, 0, 31)), StatusCode::kDataLoss, "past end of file");
  ExpectFails(ParseGguf(OneTensorGguf({4, 2}, 0, 8, 64)), StatusCode::kDataLoss, "alignment");
  ExpectFails(ParseGguf(OneTensorGguf({4, 0}, 0, 0, 32)), StatusCode::kDataLoss, "dimension 1 is 0");
  ExpectFails(ParseGguf(OneTensorGguf({1, 1, 1, 1, 1}, 0, 0, 32)), StatusCode::kDataLoss, "rank 5");
  ExpectFails(ParseGguf(OneTensorGguf({1ull << 32, 1ull << 32}, 0, 0, 32)), StatusCode::kDataLoss,
              "overflow");
  ExpectFails(ParseGguf(OneTensorGguf({1ull << 61, 2}, 0, 0, 32)), StatusCode::kDataLoss, "overflow");
  ExpectFails(ParseGguf(OneTensorGguf({~0ull}, 0, 0, 32)), StatusCode::kDataLoss, "dimension 0");
  ExpectFails(ParseGguf(OneTensorGguf({33}, 8, 0, 64)), StatusCode::kDataLoss, "blocks");  // q8_0 row of 33
  ExpectFails(ParseGguf(OneTensorGguf({256}, 6, 0, 256)), StatusCode::kUnimplemented, "q5_0");
  ExpectFails(ParseGguf(OneTensorGguf({4}, 999, 0, 32)), StatusCode::kDataLoss, "unknown ggml type 999");
  ExpectFails(ParseGguf(OneTensorGguf({4}, 0, ~0ull - 31, 32)), StatusCode::kDataLoss, "past end of file");
}

TEST(GgufCorruption, CraftedMetadataErrors) {
  Bytes align_bad;
  align_bad.Str("general.alignment").Put<uint32_t>(4).Put<uint32_t>(24);
  ExpectFails(ParseGguf(OneTensorGguf({4}, 0, 0, 32, align_bad, 1)), StatusCode::kDataLoss, "power of two");
  Bytes align_type;
  align_type.Str("general.alignment").Put<uint32_t>(10).Put<uint64_t>(64);
  ExpectFails(ParseGguf(OneTensorGguf({4}, 0, 0, 32, align_type, 1)), StatusCode::kDataLoss, "uint32");
  Bytes nested;
  nested.Str("k").Put<uint32_t>(9).Put<uint32_t>(9).Put<uint64_t>(1);
  ExpectFails(ParseGguf(OneTensorGguf({4}, 0, 0, 32, nested, 1)), StatusCode::kDataLoss, "nested");
  Bytes huge_array;
  huge_array.Str("k").Put<uint32_t>(9).Put<uint32_t>(8).Put<uint64_t>(1ull << 62);
  ExpectFails(ParseGguf(OneTensorGguf({4}, 0, 0, 32, huge_array, 1)), StatusCode::kDataLoss, "'k'");
  Bytes huge_string;
  huge_string.Put<uint64_t>(~0ull);
  ExpectFails(ParseGguf(OneTensorGguf({4}, 0, 0, 32, huge_string, 1)), StatusCode::kDataLoss,
              "string length");
  Bytes dup;
  dup.Str("k").Put<uint32_t>(4).Put<uint32_t>(1).Str("k").Put<uint32_t>(4).Put<uint32_t>(2);
  ExpectFails(ParseGguf(OneTensorGguf({4}, 0, 0, 32, dup, 2)), StatusCode::kDataLoss, "duplicate key");
  Bytes bad_type;
  bad_type.Str("k").Put<uint32_t>(13).Put<uint32_t>(0);
  ExpectFails(ParseGguf(OneTensorGguf({4}, 0, 0, 32, bad_type, 1)), StatusCode::kDataLoss,
              "unknown value type 13");
  // A larger, valid alignment moves the data section: offset 32 is now unaligned.
  Bytes align64;
  align64.Str("general.alignment").Put<uint32_t>(4).Put<uint32_t>(64);
  ExpectFails(ParseGguf(OneTensorGguf({4}, 0, 32, 64, align64, 1)), StatusCode::kDataLoss, "alignment 64");
  EXPECT_TRUE(ParseGguf(OneTensorGguf({4}, 0, 64, 128, align64, 1)).ok());
}

TEST(GgufCorruption, HeaderCountsAndMagic) {
  Bytes g;
  g.Put<uint32_t>(0x46554747u).Put<uint32_t>(3).Put<uint64_t>(1ull << 60).Put<uint64_t>(0);
  ExpectFails(ParseGguf(g.b), StatusCode::kDataLoss, "tensor count");
  Bytes h;
  h.Put<uint32_t>(0x46554747u).Put<uint32_t>(0x03000000);
  ExpectFails(ParseGguf(h.b), StatusCode::kDataLoss, "big-endian");
  ExpectFails(ParseGguf({'G', 'G', 'U', 'X'}), StatusCode::kDataLoss, "magic");
  ExpectFails(ParseGguf({}), StatusCode::kDataLoss, "truncated");
}

// Every truncation of a real file before the end of its last tensor fails
// cleanly; every header byte flipped never crashes.
TEST(GgufCorruption, TruncatedAndFlippedStories) {
  const auto bytes = ReadBytes(SharedModel("gguf/stories260K.gguf"));
  ASSERT_FALSE(bytes.empty());
  auto whole = GgufFile::Parse(bytes.data(), bytes.size(), "crafted.gguf");
  ASSERT_TRUE(whole.ok());
  size_t header_end = bytes.size(), needed = 0;
  for (const auto& t : (*whole)->tensors()) {
    const size_t begin = static_cast<const uint8_t*>(t.data) - bytes.data();
    header_end = std::min(header_end, begin);
    needed = std::max(needed, begin + static_cast<size_t>(t.nbytes));
  }
  for (size_t n = 0; n < needed; n += (n < header_end + 64 ? 1 : 997)) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + n);  // own buffer: ASan sees overreads
    ExpectFails(ParseGguf(cut), StatusCode::kDataLoss, "");
  }
  std::vector<uint8_t> mutated = bytes;
  for (size_t i = 0; i < header_end; i += 5) {  // strided: the suite also runs under ASan
    for (uint8_t x : {0xffu, 0x01u}) {
      mutated[i] ^= x;
      auto r = GgufFile::Parse(mutated.data(), mutated.size(), "crafted.gguf");
      if (!r.ok()) {
        EXPECT_NE(r.status().message().find("crafted.gguf"), std::string::npos);
      }
      mutated[i] ^= x;
    }
  }
}

// ---- Safetensors --------------------------------------------------------
std::vector<uint8_t> Safetensors(const std::string& header, size_t data_bytes) {
  Bytes s;
  s.Put<uint64_t>(header.size());
  s.b.insert(s.b.end(), header.begin(), header.end());
  s.b.resize(s.b.size() + data_bytes);
  return s.b;
}

Status ParseSt(const std::vector<uint8_t>& b) {
  auto r = SafetensorsFile::Parse(b.data(), b.size(), "crafted.safetensors");
  return r.ok() ? Status::Ok() : r.status();
}

TEST(SafetensorsCorruption, CraftedHeaders) {
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
  EXPECT_TRUE(ParseSt(Safetensors(ok, 16)).ok());
  ExpectFails(ParseSt(Safetensors(ok, 15)), StatusCode::kDataLoss, "outside the data region");
  ExpectFails(ParseSt(Safetensors(R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", 16)),
              StatusCode::kDataLoss, "need 16");
  ExpectFails(ParseSt(Safetensors(R"({"a":{"dtype":"Q4","shape":[2],"data_offsets":[0,2]}})", 16)),
              StatusCode::kDataLoss, "unknown dtype");
  ExpectFails(ParseSt(Safetensors(R"({"a":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}})", 16)),
              StatusCode::kUnimplemented, "F64");
  ExpectFails(ParseSt(Safetensors(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 16)),
              StatusCode::kDataLoss, "negative");
  ExpectFails(ParseSt(Safetensors(
                  R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 16)),
              StatusCode::kDataLoss, "overflow");
  ExpectFails(ParseSt(Safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 16)),
              StatusCode::kDataLoss, "outside");
  ExpectFails(ParseSt(Safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                  R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                  16)),
              StatusCode::kDataLoss, "overlaps");
  ExpectFails(ParseSt(Safetensors(R"({"a":{"dtype":"F32","shape":[2]}})", 16)), StatusCode::kDataLoss,
              "data_offsets");
  ExpectFails(ParseSt(Safetensors(R"({"a":5})", 16)), StatusCode::kDataLoss, "'a'");
  ExpectFails(ParseSt(Safetensors(R"({"__metadata__":{"k":1}})", 0)), StatusCode::kDataLoss, "__metadata__");
  ExpectFails(ParseSt(Safetensors(R"([1,2])", 0)), StatusCode::kDataLoss, "not an object");
  ExpectFails(ParseSt(Safetensors(R"({"a":)", 0)), StatusCode::kDataLoss, "invalid JSON");
  ExpectFails(ParseSt(Safetensors(std::string(100000, '['), 0)), StatusCode::kDataLoss, "nested");
  Bytes huge;
  huge.Put<uint64_t>(~0ull);
  ExpectFails(ParseSt(huge.b), StatusCode::kDataLoss, "header length");
  ExpectFails(ParseSt({1, 2, 3}), StatusCode::kDataLoss, "too short");
  // Zero-element tensors are legal in safetensors.
  EXPECT_TRUE(ParseSt(Safetensors(R"({"e":{"dtype":"F16","shape":[0,3],"data_offsets":[0,0]}})", 0)).ok());
}

TEST(SafetensorsCorruption, TruncatedAndFlippedMtp) {
  const auto bytes = ReadBytes(SharedModel("stories260K-mtp/model.safetensors"));
  ASSERT_FALSE(bytes.empty());
  uint64_t header = 0;
  std::memcpy(&header, bytes.data(), 8);
  for (size_t n = 0; n < bytes.size(); n += (n < header + 16 ? 1 : 1009)) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + n);
    ExpectFails(ParseSt(cut), StatusCode::kDataLoss, "");
  }
  std::vector<uint8_t> mutated = bytes;
  for (size_t i = 0; i < 8 + header; i += 2) {
    for (uint8_t x : {0xffu, 0x01u}) {
      mutated[i] ^= x;
      Status st = ParseSt(mutated);
      if (!st.ok()) {
        EXPECT_NE(st.message().find("crafted.safetensors"), std::string::npos);
      }
      mutated[i] ^= x;
    }
  }
}

}  // namespace
}  // namespace deepinfer
