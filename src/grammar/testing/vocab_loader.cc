#include "grammar/testing/vocab_loader.h"

#include <zlib.h>

#include <nlohmann/json.hpp>

#include "grammar/utf8.h"

namespace deepinfer::grammar::testing {

namespace {

StatusOr<std::string> ReadMaybeGzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files too
  if (f == nullptr) return NotFound(path + ": cannot open");
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.append(buf, n);
  gzclose(f);
  if (n < 0) return DataLoss(path + ": read error");
  return out;
}

// The GPT-2 byte->code point table: printable Latin-1 bytes map to
// themselves, the other 68 bytes to 256, 257, ... in byte order.
std::vector<int> CodepointToByte() {
  std::vector<int> table(512, -1);
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    int cp = printable ? b : next++;
    table[cp] = b;
  }
  return table;
}

}  // namespace

bool ByteLevelDecode(const std::string& utf8, std::string* bytes) {
  static const std::vector<int> table = CodepointToByte();
  bytes->clear();
  for (size_t pos = 0; pos < utf8.size();) {
    uint32_t cp;
    if (!DecodeUtf8(utf8, &pos, &cp) || cp >= table.size() || table[cp] < 0) return false;
    bytes->push_back(static_cast<char>(table[cp]));
  }
  return true;
}

StatusOr<std::shared_ptr<const Vocabulary>> LoadTokenizerJson(const std::string& path,
                                                              const std::vector<std::string>& eos_tokens) {
  DI_ASSIGN_OR_RETURN(std::string text, ReadMaybeGzip(path));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.contains("model") || !j["model"].contains("vocab")) {
    return DataLoss(path + ": not a tokenizer.json");
  }
  bool byte_level = text.find("\"ByteLevel\"") != std::string::npos;
  std::vector<std::pair<int, std::string>> entries;
  for (auto& [tok, id] : j["model"]["vocab"].items()) entries.push_back({id.get<int>(), tok});
  std::vector<int32_t> special, eos;
  if (j.contains("added_tokens")) {
    for (auto& t : j["added_tokens"]) {
      int id = t["id"].get<int>();
      std::string content = t["content"].get<std::string>();
      entries.push_back({id, content});
      if (t.value("special", false)) special.push_back(id);
      for (const std::string& e : eos_tokens) {
        if (e == content) eos.push_back(id);
      }
    }
  }
  int max_id = 0;
  for (auto& e : entries) max_id = std::max(max_id, e.first);
  std::vector<std::string> tokens(max_id + 1);
  for (auto& [id, tok] : entries) {
    std::string bytes;
    if (byte_level && ByteLevelDecode(tok, &bytes)) {
      tokens[id] = bytes;
    } else if (tok.size() == 6 && tok.rfind("<0x", 0) == 0 && tok[5] == '>') {
      tokens[id] = std::string(1, static_cast<char>(std::stoi(tok.substr(3, 2), nullptr, 16)));
    } else {
      std::string s;
      for (size_t i = 0; i < tok.size(); ++i) {
        if (tok.compare(i, 3, "\xE2\x96\x81") == 0) {
          s.push_back(' ');
          i += 2;
        } else {
          s.push_back(tok[i]);
        }
      }
      tokens[id] = s;
    }
  }
  return std::shared_ptr<const Vocabulary>(
      std::make_shared<Vocabulary>(std::move(tokens), std::move(eos), std::move(special)));
}

}  // namespace deepinfer::grammar::testing
