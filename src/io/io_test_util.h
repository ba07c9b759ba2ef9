// Helpers shared by the io tests (and synth tests): scratch directories and
// whole-file reads/writes. Test-only.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace deepinfer::testing_util {

inline std::string SharedModel(const std::string& rel) {
  return std::string(DI_SHARED_DIR) + "/models/" + rel;
}

// A fresh directory under the test temp dir (left for inspection on failure).
inline std::string MakeTempDir(const std::string& tag) {
  std::string tmpl = ::testing::TempDir() + "di_" + tag + "_XXXXXX";
  char* p = mkdtemp(tmpl.data());
  EXPECT_NE(p, nullptr);
  return tmpl;
}

inline std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

inline void WriteBytes(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

template <typename T>
std::vector<uint8_t> AsBytes(const std::vector<T>& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(v.data());
  return std::vector<uint8_t>(p, p + v.size() * sizeof(T));
}

}  // namespace deepinfer::testing_util
