// Helpers shared by the tokenizer tests: vector files and cached tokenizers.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer::testing {

inline std::string SharedPath(const std::string& rel) { return std::string(DI_SHARED_DIR) + "/" + rel; }

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// .inp framing (llama.cpp test-tokenizer-0): every test string is followed by
// "\n__ggml_vocab_test__\n"; text after the last separator is ignored.
inline std::vector<std::string> ReadVectorInputs(const std::string& path) {
  const std::string all = ReadFile(path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    const size_t next = all.find(sep, pos);
    if (next == std::string::npos) break;
    out.push_back(all.substr(pos, next - pos));
    pos = next + sep.size();
  }
  return out;
}

// .out: one line per input, space-separated ids (an empty line for no ids).
inline std::vector<std::vector<int32_t>> ReadVectorOutputs(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<int32_t>> out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::vector<int32_t> ids;
    int32_t id;
    while (ss >> id) ids.push_back(id);
    out.push_back(std::move(ids));
  }
  return out;
}

// Loads each tokenizer once per test binary (the big ones take a moment).
// "gguf:<rel path>" or "hf:<rel path>"; returns nullptr (and fails) on error.
inline const Tokenizer* CachedTokenizer(const std::string& spec) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto it = cache.find(spec);
  if (it != cache.end()) return it->second.get();
  const std::string kind = spec.substr(0, spec.find(':'));
  const std::string path = SharedPath(spec.substr(kind.size() + 1));
  StatusOr<std::unique_ptr<Tokenizer>> tok = Status(StatusCode::kInternal, "unknown spec " + spec);
  if (kind == "gguf") {
    auto gguf = GgufFile::Open(path);
    if (!gguf.ok()) {
      ADD_FAILURE() << gguf.status().ToString();
      return nullptr;
    }
    tok = Tokenizer::FromGguf(**gguf);
  } else if (kind == "hf") {
    tok = Tokenizer::FromHfFile(path);
  }
  if (!tok.ok()) {
    ADD_FAILURE() << tok.status().ToString();
    return nullptr;
  }
  return (cache[spec] = std::move(tok).value()).get();
}

inline std::string IdsToString(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) {
    if (!s.empty()) s.push_back(' ');
    s.append(std::to_string(id));
  }
  return s;
}

}  // namespace deepinfer::testing
