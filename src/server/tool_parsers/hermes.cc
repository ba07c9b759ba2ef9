// Hermes / Qwen2.5 / Qwen3: each call is
//   <tool_call>\n{"name": NAME, "arguments": {...}}\n</tool_call>
// (calls one after another, separated by a newline), text before them is content.
#include "server/tool_parsers/tool_call_parser.h"

namespace deepinfer::server {
namespace {

using namespace tool_parsing;

constexpr std::string_view kBegin = "<tool_call>", kEnd = "</tool_call>";
constexpr std::string_view kSpace = " \t\r\n";

std::string_view Trim(std::string_view s) {
  const size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(kSpace) - b + 1);
}

class HermesParser final : public ToolCallParser {
 public:
  const char* name() const override { return "hermes"; }

  size_t CallStart(std::string_view text) const override { return FindMarkerOrPrefix(text, kBegin); }

  ToolParseResult Parse(std::string_view text) const override {
    size_t at = text.find(kBegin);
    if (at == std::string_view::npos) return {std::string(text), {}};
    ToolParseResult result;
    result.content = std::string(Trim(text.substr(0, at)).empty() ? std::string_view() : text.substr(0, at));
    while (at != std::string_view::npos) {
      const size_t body = at + kBegin.size();
      const size_t end = text.find(kEnd, body);  // an unclosed last call runs to the end
      ParsedToolCall call;
      if (!ParseCallObject(Trim(text.substr(body, end == std::string_view::npos ? end : end - body)),
                           &call)) {
        return {std::string(text), {}};
      }
      result.calls.push_back(std::move(call));
      if (end == std::string_view::npos) break;
      at = text.find(kBegin, end + kEnd.size());
    }
    return result;
  }

  std::vector<StreamingToolCall> StreamCalls(std::string_view text) const override {
    std::vector<StreamingToolCall> out;
    for (size_t at = text.find(kBegin); at != std::string_view::npos;) {
      const size_t before = out.size();
      StreamCallObjects(text, at + kBegin.size(), '\0', &out);
      if (out.size() == before || !out.back().closed) break;
      at = text.find(kBegin, at + kBegin.size());
    }
    return out;
  }

  grammar::TaggedJsonFormat CallFormat(const std::vector<ToolFunction>& tools, bool parallel) const override {
    grammar::TaggedJsonFormat f;
    for (const ToolFunction& t : tools) {
      f.tags.push_back({"<tool_call>\n{\"name\": " + JsonString(t.name) + ", \"arguments\": ",
                        ArgumentsSchema(t), "}\n</tool_call>"});
    }
    f.separator = "\n";
    f.max_items = parallel ? kMaxParallelCalls : 1;
    return f;
  }
};

}  // namespace

const ToolCallParser& HermesToolCallParser() {
  static const HermesParser parser;
  return parser;
}

}  // namespace deepinfer::server
