// Mistral: [TOOL_CALLS] then a JSON list of {"name", "arguments"} objects
// (or one object); text before the marker is content.
#include "server/tool_parsers/tool_call_parser.h"

#include <nlohmann/json.hpp>

namespace deepinfer::server {
namespace {

using namespace tool_parsing;

constexpr std::string_view kMarker = "[TOOL_CALLS]";

class MistralParser final : public ToolCallParser {
 public:
  const char* name() const override { return "mistral"; }

  size_t CallStart(std::string_view text) const override { return FindMarkerOrPrefix(text, kMarker); }

  ToolParseResult Parse(std::string_view text) const override {
    ToolParseResult fail{std::string(text), {}};
    const size_t at = text.find(kMarker);
    if (at == std::string_view::npos) return fail;
    const size_t begin = text.find_first_not_of(" \t\r\n", at + kMarker.size());
    const size_t end = JsonValueEnd(text, begin);
    if (end == std::string_view::npos) return fail;
    const auto value = nlohmann::ordered_json::parse(text.substr(begin, end - begin), nullptr, false);
    if (!value.is_array() && !value.is_object()) return fail;
    ToolParseResult result;
    result.content = std::string(text.substr(0, at));
    const nlohmann::ordered_json list = value.is_array() ? value : nlohmann::ordered_json::array({value});
    for (const auto& item : list) {
      ParsedToolCall call;
      if (!ParseCallObject(item.dump(), &call)) return fail;
      result.calls.push_back(std::move(call));
    }
    if (result.calls.empty()) return fail;
    return result;
  }

  std::vector<StreamingToolCall> StreamCalls(std::string_view text) const override {
    std::vector<StreamingToolCall> out;
    const size_t at = text.find(kMarker);
    if (at == std::string_view::npos) return out;
    size_t i = text.find_first_not_of(" \t\r\n", at + kMarker.size());
    if (i == std::string_view::npos) return out;
    if (text[i] != '[') {
      StreamCallObjects(text, i, '\0', &out);  // one object, no list
      return out;
    }
    i = text.find_first_not_of(" \t\r\n", i + 1);
    if (i != std::string_view::npos) StreamCallObjects(text, i, ',', &out);
    return out;
  }

  grammar::TaggedJsonFormat CallFormat(const std::vector<ToolFunction>& tools, bool parallel) const override {
    grammar::TaggedJsonFormat f;
    for (const ToolFunction& t : tools) {
      f.tags.push_back({"{\"name\": " + JsonString(t.name) + ", \"arguments\": ", ArgumentsSchema(t), "}"});
    }
    f.prefix = std::string(kMarker) + "[";
    f.separator = ", ";
    f.suffix = "]";
    f.max_items = parallel ? kMaxParallelCalls : 1;
    return f;
  }
};

}  // namespace

const ToolCallParser& MistralToolCallParser() {
  static const MistralParser parser;
  return parser;
}

}  // namespace deepinfer::server
