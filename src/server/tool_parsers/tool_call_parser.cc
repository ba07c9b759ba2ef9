#include "server/tool_parsers/tool_call_parser.h"

#include <nlohmann/json.hpp>

namespace deepinfer::server {

const ToolCallParser& HermesToolCallParser();
const ToolCallParser& Llama3JsonToolCallParser();
const ToolCallParser& DeepseekV3ToolCallParser();
const ToolCallParser& MistralToolCallParser();

namespace {
std::vector<const ToolCallParser*> AllParsers() {
  return {&HermesToolCallParser(), &Llama3JsonToolCallParser(), &DeepseekV3ToolCallParser(),
          &MistralToolCallParser()};
}
}  // namespace

const ToolCallParser* FindToolCallParser(std::string_view name) {
  if (name == "qwen" || name == "qwen3") name = "hermes";  // the names users try
  if (name == "llama3" || name == "llama") name = "llama3_json";
  if (name == "deepseek" || name == "deepseek_v31") name = "deepseek_v3";
  for (const ToolCallParser* p : AllParsers()) {
    if (name == p->name()) return p;
  }
  return nullptr;
}

std::string ToolCallParserNames() {
  std::string names;
  for (const ToolCallParser* p : AllParsers()) names += (names.empty() ? "" : ", ") + std::string(p->name());
  return names;
}

const ToolCallParser* DetectToolCallParser(std::string_view source) {
  auto has = [&](std::string_view s) { return source.find(s) != std::string_view::npos; };
  if (has("<tool_call>")) return &HermesToolCallParser();
  if (has("tool\xe2\x96\x81"
          "calls\xe2\x96\x81"
          "begin"))
    return &DeepseekV3ToolCallParser();
  if (has("[TOOL_CALLS]")) return &MistralToolCallParser();
  if (has("<|start_header_id|>")) return &Llama3JsonToolCallParser();
  return nullptr;
}

namespace tool_parsing {

size_t FindMarkerOrPrefix(std::string_view text, std::string_view marker) {
  const size_t at = text.find(marker);
  if (at != std::string_view::npos) return at;
  for (size_t n = std::min(marker.size() - 1, text.size()); n > 0; --n) {
    if (text.substr(text.size() - n) == marker.substr(0, n)) return text.size() - n;
  }
  return std::string_view::npos;
}

size_t JsonValueEnd(std::string_view text, size_t begin) {
  if (begin >= text.size() || (text[begin] != '{' && text[begin] != '[')) return std::string_view::npos;
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = begin; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

bool ParseCallObject(std::string_view object_text, ParsedToolCall* out) {
  const auto j = nlohmann::ordered_json::parse(object_text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return false;
  auto name = j.find("name");
  if (name == j.end() || !name->is_string()) return false;
  auto args = j.find("arguments");
  if (args == j.end()) args = j.find("parameters");
  nlohmann::ordered_json value = nlohmann::ordered_json::object();
  if (args != j.end()) {
    value = *args;
    if (value.is_string()) value = nlohmann::ordered_json::parse(value.get<std::string>(), nullptr, false);
    if (!value.is_object()) return false;
  }
  out->name = name->get<std::string>();
  out->arguments =
      value.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::ordered_json::error_handler_t::replace);
  return true;
}

namespace {
constexpr std::string_view kBlank = " \t\r\n";

size_t SkipBlank(std::string_view text, size_t i) {
  while (i < text.size() && kBlank.find(text[i]) != std::string_view::npos) ++i;
  return i;
}

// The end of the JSON string at text[i] (one past its closing quote); npos
// when it is not closed yet.
size_t StringEnd(std::string_view text, size_t i) {
  if (i >= text.size() || text[i] != '"') return std::string_view::npos;
  for (size_t j = i + 1; j < text.size(); ++j) {
    if (text[j] == '\\') {
      ++j;
    } else if (text[j] == '"') {
      return j + 1;
    }
  }
  return std::string_view::npos;
}
}  // namespace

bool CallObjectPrefix(std::string_view text, std::string* name, size_t* args_begin) {
  size_t i = SkipBlank(text, 0);
  if (i >= text.size() || text[i] != '{') return false;
  i = SkipBlank(text, i + 1);
  size_t end = StringEnd(text, i);
  if (end == std::string_view::npos || text.substr(i, end - i) != "\"name\"") return false;
  i = SkipBlank(text, end);
  if (i >= text.size() || text[i] != ':') return false;
  i = SkipBlank(text, i + 1);
  end = StringEnd(text, i);
  if (end == std::string_view::npos) return false;
  const auto value = nlohmann::json::parse(text.substr(i, end - i), nullptr, false);
  if (!value.is_string()) return false;
  i = SkipBlank(text, end);
  if (i >= text.size() || text[i] != ',') return false;
  i = SkipBlank(text, i + 1);
  end = StringEnd(text, i);
  if (end == std::string_view::npos) return false;
  const std::string_view key = text.substr(i, end - i);
  if (key != "\"arguments\"" && key != "\"parameters\"") return false;
  i = SkipBlank(text, end);
  if (i >= text.size() || text[i] != ':') return false;
  i = SkipBlank(text, i + 1);
  if (i >= text.size() || text[i] != '{') return false;
  *name = value.get<std::string>();
  *args_begin = i;
  return true;
}

StreamingToolCall StreamingCall(std::string name, std::string_view text, size_t args_begin) {
  StreamingToolCall call;
  call.name = std::move(name);
  const size_t end = JsonValueEnd(text, args_begin);
  call.closed = end != std::string_view::npos;
  call.arguments = text.substr(args_begin, call.closed ? end - args_begin : std::string_view::npos);
  return call;
}

void StreamCallObjects(std::string_view text, size_t at, char separator,
                       std::vector<StreamingToolCall>* out) {
  while (at < text.size()) {
    std::string name;
    size_t args = 0;
    const std::string_view rest = text.substr(at);
    if (!CallObjectPrefix(rest, &name, &args)) return;
    out->push_back(StreamingCall(std::move(name), rest, args));
    if (!out->back().closed || separator == '\0') return;
    const size_t end = JsonValueEnd(rest, SkipBlank(rest, 0));
    if (end == std::string_view::npos) return;
    at = SkipBlank(text, at + end);
    if (at >= text.size() || text[at] != separator) return;
    at = SkipBlank(text, at + 1);
  }
}

std::string CompactJson(std::string_view text) {
  std::string out;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (kBlank.find(c) != std::string_view::npos) {
      continue;
    }
    out += c;
  }
  return out;
}

std::string JsonString(const std::string& s) {
  return nlohmann::ordered_json(s).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string ArgumentsSchema(const ToolFunction& f) {
  nlohmann::ordered_json schema = f.parameters;
  if (!schema.is_object() || schema.empty()) schema = {{"type", "object"}};
  return schema.dump();
}

}  // namespace tool_parsing
}  // namespace deepinfer::server
