// Reads an HF tokenizer.json quickly. Internal to src/tokenizer.
//
// model.vocab and model.merges are ~95% of the file (hundreds of thousands of
// entries); building them as a JSON DOM and copying them out again dominated
// load time. A SAX pass captures those two straight into flat vectors and
// builds an ordinary DOM for everything else.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace deepinfer {

// nlohmann::json's members make the implicit moves noexcept(false); nothing
// throws there.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct HfTokenizerJson {
  nlohmann::json rest;  // the document, with model.vocab / model.merges set to null when captured
  bool has_vocab = false;
  std::vector<std::pair<std::string, int64_t>> vocab;  // model.vocab entries, file order
  bool has_merges = false;
  std::vector<std::string> merges;  // model.merges as "a b", rank order
};

// Reads `path` (plain or gzip). DataLoss for unreadable / invalid JSON;
// InvalidArgument naming the entry for a malformed vocab id or merge.
StatusOr<HfTokenizerJson> ReadHfTokenizerJson(const std::string& path);

// Reads a whole file, inflating gzip data transparently.
StatusOr<std::string> ReadMaybeGzip(const std::string& path);

}  // namespace deepinfer
