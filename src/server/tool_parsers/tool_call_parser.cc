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
