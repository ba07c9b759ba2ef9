// Writes the fuzz seed corpora: OUT/corpus_gguf and OUT/corpus_safetensors.
// Seeds are small valid files from the writers (every metadata type, several
// tensor dtypes) plus the first 4 KiB of the shared model files when present.
// usage: fuzz_make_seeds OUT_DIR [SHARED_DIR]
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "io/safetensors.h"

namespace {

using namespace deepinfer;

void CopyPrefix(const std::string& from, const std::string& to, size_t n) {
  std::ifstream in(from, std::ios::binary);
  if (!in) return;
  std::vector<char> buf(n);
  in.read(buf.data(), static_cast<std::streamsize>(n));
  std::ofstream(to, std::ios::binary).write(buf.data(), in.gcount());
}

int Check(const Status& st) {
  if (st.ok()) return 0;
  std::fprintf(stderr, "fuzz_make_seeds: %s\n", st.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: fuzz_make_seeds OUT_DIR [SHARED_DIR]\n");
    return 2;
  }
  const std::string out = argv[1];
  const std::string gdir = out + "/corpus_gguf", sdir = out + "/corpus_safetensors";
  std::filesystem::create_directories(gdir);
  std::filesystem::create_directories(sdir);

  GgufWriter g;
  g.SetString("general.architecture", "llama");
  g.SetU32("general.alignment", 32);
  g.SetI32("i", -3);
  g.SetU64("u", 1ull << 33);
  g.SetF32("f", 0.5f);
  g.SetBool("b", true);
  g.SetStringArray("tokenizer.ggml.tokens", {"<s>", "a", "b"});
  g.SetF32Array("s", {0.f, 1.f});
  g.SetI32Array("t", {1, 2, 3});
  g.SetBoolArray("w", {true, false});
  g.AddTensor("f32", DType::kF32, {2, 4}, std::vector<uint8_t>(32, 0x3f));
  g.AddTensor("f16", DType::kF16, {8}, std::vector<uint8_t>(16, 0x3c));
  g.AddTensor("q8", DType::kQ8_0, {32}, std::vector<uint8_t>(34, 1));
  g.AddTensor("q4k", DType::kQ4_K, {256}, std::vector<uint8_t>(144, 7));
  g.AddTensor("q6k", DType::kQ6_K, {256}, std::vector<uint8_t>(210, 9));
  int rc = Check(g.Write(gdir + "/writer.gguf"));
  GgufWriter empty;
  empty.SetString("k", "v");
  rc |= Check(empty.Write(gdir + "/metadata_only.gguf"));

  SafetensorsWriter s;
  s.SetMetadata("format", "pt");
  s.AddTensor("a", DType::kF32, {2, 2}, std::vector<uint8_t>(16, 0));
  s.AddTensor("b", DType::kBF16, {3}, std::vector<uint8_t>(6, 0x3f));
  s.AddTensor("c", DType::kI64, {1}, std::vector<uint8_t>(8, 0));
  s.AddTensor("e", DType::kF16, {0, 4}, std::vector<uint8_t>());
  rc |= Check(s.Write(sdir + "/writer.safetensors"));

  if (argc > 2) {
    const std::string shared = argv[2];
    CopyPrefix(shared + "/models/gguf/stories260K.gguf", gdir + "/stories_prefix.gguf", 4096);
    CopyPrefix(shared + "/models/vocab/ggml-vocab-gpt-2.gguf", gdir + "/vocab_prefix.gguf", 4096);
    CopyPrefix(shared + "/models/stories260K-mtp/model.safetensors", sdir + "/mtp_prefix.safetensors", 8192);
  }
  return rc;
}
