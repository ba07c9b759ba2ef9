#include "synth/vocab.h"

#include "core/utf8.h"

#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

namespace deepinfer {
namespace {

// Training text, written for this file. Plain ASCII English with digits,
// punctuation and newlines so the merges cover common words and spacing.
constexpr const char* kTrainingText =
    "The small robot woke up early in the morning and looked out of the window.\n"
    "It was a bright day, and the garden was full of birds that sang to each other.\n"
    "The robot wanted to help the old gardener, so it picked up a basket and went outside.\n"
    "First it watered the flowers, then it counted the apples on the tree: there were 12 red\n"
    "apples and 7 green ones. The gardener smiled and said that the robot was a good helper.\n"
    "In the afternoon the two friends sat on a bench and talked about the weather, the river,\n"
    "and the long road that ran over the hill to the town. The town had a market on Monday\n"
    "and a school where the children learned to read, to write and to count to 100.\n"
    "When the sun went down, the robot turned on a lamp and read a story about a brave cat\n"
    "who sailed across the sea in a tiny boat. The cat found an island with tall trees and\n"
    "sweet water, and it built a house there. Every night the cat looked at the stars and\n"
    "thought about home. One day a ship came by, and the cat sailed back to the town.\n"
    "The robot liked that story very much. It said good night to the gardener, closed the\n"
    "window and waited for the next morning, when there would be more work in the garden.\n"
    "Numbers like 2024, 3.14 and 1000 appear in many texts; so do words like time, year,\n"
    "people, way, day, man, thing, woman, life, child, world, school, state and family.\n";

bool IsLetter(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
bool IsDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool IsSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// An ASCII approximation of GPT-2's pre-tokenizer regex: " ?letters",
// " ?digits", " ?punctuation", and whitespace runs (a single space before a
// word belongs to the word). Merges are learnt only inside these chunks.
std::vector<std::string> SplitChunks(const std::string& text) {
  std::vector<std::string> out;
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    const size_t start = i;
    if (text[i] == ' ' && i + 1 < n && !IsSpace(text[i + 1])) ++i;
    if (IsSpace(text[i])) {
      while (i < n && IsSpace(text[i]) && !(text[i] == ' ' && i + 1 < n && !IsSpace(text[i + 1]))) ++i;
      if (i == start) ++i;
    } else if (IsLetter(text[i])) {
      while (i < n && IsLetter(text[i])) ++i;
    } else if (IsDigit(text[i])) {
      while (i < n && IsDigit(text[i])) ++i;
    } else {
      while (i < n && !IsSpace(text[i]) && !IsLetter(text[i]) && !IsDigit(text[i])) ++i;
    }
    out.push_back(text.substr(start, i - start));
  }
  return out;
}

}  // namespace

// GPT-2's map: printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') keep
// their code point; the other 68 bytes take 256, 257, ... in byte order.
std::string ByteLevelSpelling(uint8_t byte) {
  auto printable = [](int b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174; };
  uint32_t cp = byte;
  if (!printable(byte)) {
    int rank = 0;
    for (int b = 0; b < byte; ++b) rank += printable(b) ? 0 : 1;
    cp = 256 + static_cast<uint32_t>(rank);
  }
  std::string s;
  AppendUtf8(cp, &s);
  return s;
}

SynthVocab BuildSynthVocab(int64_t vocab_size) {
  SynthVocab v;
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.token_types = {kTokenUnknown, kTokenControl, kTokenControl};
  for (int b = 0; b < 256; ++b) {
    v.tokens.push_back(ByteLevelSpelling(static_cast<uint8_t>(b)));
    v.token_types.push_back(kTokenNormal);
  }
  std::unordered_map<std::string, int32_t> id_of;
  for (size_t i = 0; i < v.tokens.size(); ++i) id_of[v.tokens[i]] = static_cast<int32_t>(i);

  // Unique chunks with their counts, each as a sequence of token ids.
  std::map<std::string, int64_t> chunk_counts;
  for (const auto& c : SplitChunks(kTrainingText)) ++chunk_counts[c];
  std::vector<std::pair<std::vector<int32_t>, int64_t>> words;
  for (const auto& [chunk, count] : chunk_counts) {
    std::vector<int32_t> ids;
    for (unsigned char ch : chunk) ids.push_back(3 + ch);
    words.emplace_back(std::move(ids), count);
  }

  while (static_cast<int64_t>(v.tokens.size()) < vocab_size) {
    // Most frequent adjacent pair; ties go to the smallest (left, right) ids,
    // which makes training deterministic.
    std::map<std::pair<int32_t, int32_t>, int64_t> pairs;
    for (const auto& [ids, count] : words) {
      for (size_t i = 0; i + 1 < ids.size(); ++i) pairs[{ids[i], ids[i + 1]}] += count;
    }
    std::pair<int32_t, int32_t> best{-1, -1};
    int64_t best_count = 1;
    for (const auto& [p, c] : pairs) {
      if (c > best_count) {
        best = p;
        best_count = c;
      }
    }
    if (best.first < 0) break;  // nothing occurs twice: stop learning
    const std::string merged = v.tokens[best.first] + v.tokens[best.second];
    v.merges.push_back(v.tokens[best.first] + " " + v.tokens[best.second]);
    int32_t new_id;
    if (auto it = id_of.find(merged); it != id_of.end()) {
      new_id = it->second;  // another merge already spelt this token
    } else {
      new_id = static_cast<int32_t>(v.tokens.size());
      v.tokens.push_back(merged);
      v.token_types.push_back(kTokenNormal);
      id_of[merged] = new_id;
    }
    for (auto& [ids, count] : words) {
      std::vector<int32_t> next;
      for (size_t i = 0; i < ids.size(); ++i) {
        if (i + 1 < ids.size() && ids[i] == best.first && ids[i + 1] == best.second) {
          next.push_back(new_id);
          ++i;
        } else {
          next.push_back(ids[i]);
        }
      }
      ids = std::move(next);
    }
  }
  for (int64_t k = 0; static_cast<int64_t>(v.tokens.size()) < vocab_size; ++k) {
    v.tokens.push_back("<unused_" + std::to_string(k) + ">");
    v.token_types.push_back(kTokenUnused);
  }
  return v;
}

std::string SynthTokenizerJson(const SynthVocab& v) {
  using json = nlohmann::ordered_json;
  json added = json::array();
  for (int32_t id : {v.unk_id, v.bos_id, v.eos_id}) {
    added.push_back({{"id", id},
                     {"content", v.tokens[id]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  json vocab = json::object();
  for (size_t i = 0; i < v.tokens.size(); ++i) vocab[v.tokens[i]] = i;
  const json byte_level = {
      {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  const std::string bos = v.tokens[v.bos_id];
  json post = {
      {"type", "TemplateProcessing"},
      {"single",
       {{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
      {"pair",
       {{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}},
        {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
        {{"SpecialToken", {{"id", bos}, {"type_id", 1}}}},
        {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
      {"special_tokens", {{bos, {{"id", bos}, {"ids", {v.bos_id}}, {"tokens", {bos}}}}}}};
  json j = {{"version", "1.0"},
            {"truncation", nullptr},
            {"padding", nullptr},
            {"added_tokens", added},
            {"normalizer", nullptr},
            {"pre_tokenizer", byte_level},
            {"post_processor", post},
            {"decoder", byte_level},
            {"model",
             {{"type", "BPE"},
              {"dropout", nullptr},
              {"unk_token", nullptr},
              {"continuing_subword_prefix", nullptr},
              {"end_of_word_suffix", nullptr},
              {"fuse_unk", false},
              {"byte_fallback", false},
              {"ignore_merges", false},
              {"vocab", vocab},
              {"merges", v.merges}}}};
  return j.dump(1);
}

}  // namespace deepinfer
