// DeepSeek-V3 call tokens (what its chat template renders):
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n{...}\n```<｜tool▁call▁end｜>
//   [\n<｜tool▁call▁begin｜>...<｜tool▁call▁end｜>]*<｜tool▁calls▁end｜>
// Text before the first marker is content.
#include "server/tool_parsers/tool_call_parser.h"

#include <nlohmann/json.hpp>

namespace deepinfer::server {
namespace {

using namespace tool_parsing;

// "▁" is U+2581, "｜" U+FF5C.
constexpr std::string_view kCallsBegin =
    "<\xef\xbd\x9ctool\xe2\x96\x81"
    "calls\xe2\x96\x81"
    "begin\xef\xbd\x9c>";
constexpr std::string_view kCallsEnd =
    "<\xef\xbd\x9ctool\xe2\x96\x81"
    "calls\xe2\x96\x81"
    "end\xef\xbd\x9c>";
constexpr std::string_view kCallBegin =
    "<\xef\xbd\x9ctool\xe2\x96\x81"
    "call\xe2\x96\x81"
    "begin\xef\xbd\x9c>";
constexpr std::string_view kCallEnd =
    "<\xef\xbd\x9ctool\xe2\x96\x81"
    "call\xe2\x96\x81"
    "end\xef\xbd\x9c>";
constexpr std::string_view kSep =
    "<\xef\xbd\x9ctool\xe2\x96\x81"
    "sep\xef\xbd\x9c>";

class DeepseekV3Parser final : public ToolCallParser {
 public:
  const char* name() const override { return "deepseek_v3"; }

  size_t CallStart(std::string_view text) const override { return FindMarkerOrPrefix(text, kCallsBegin); }

  ToolParseResult Parse(std::string_view text) const override {
    ToolParseResult fail{std::string(text), {}};
    const size_t start = text.find(kCallsBegin);
    if (start == std::string_view::npos) return fail;
    ToolParseResult result;
    result.content = std::string(text.substr(0, start));
    size_t at = text.find(kCallBegin, start);
    while (at != std::string_view::npos) {
      const size_t sep = text.find(kSep, at);
      if (sep == std::string_view::npos) return fail;
      const size_t name_begin = sep + kSep.size();
      const size_t newline = text.find('\n', name_begin);
      if (newline == std::string_view::npos) return fail;
      const size_t args = text.find('{', newline);
      const size_t args_end = JsonValueEnd(text, args);
      if (args == std::string_view::npos || args_end == std::string_view::npos) return fail;
      const auto value = nlohmann::ordered_json::parse(text.substr(args, args_end - args), nullptr, false);
      if (!value.is_object()) return fail;
      result.calls.push_back({std::string(text.substr(name_begin, newline - name_begin)),
                              value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace)});
      at = text.find(kCallBegin, args_end);
    }
    if (result.calls.empty()) return fail;
    return result;
  }

  std::vector<StreamingToolCall> StreamCalls(std::string_view text) const override {
    std::vector<StreamingToolCall> out;
    const size_t start = text.find(kCallsBegin);
    if (start == std::string_view::npos) return out;
    for (size_t at = text.find(kCallBegin, start); at != std::string_view::npos;) {
      const size_t sep = text.find(kSep, at);
      if (sep == std::string_view::npos) break;
      const size_t name_begin = sep + kSep.size();
      const size_t newline = text.find('\n', name_begin);
      if (newline == std::string_view::npos) break;
      const size_t args = text.find('{', newline);
      if (args == std::string_view::npos) break;
      out.push_back(StreamingCall(std::string(text.substr(name_begin, newline - name_begin)), text, args));
      if (!out.back().closed) break;
      at = text.find(kCallBegin, args);
    }
    return out;
  }

  grammar::TaggedJsonFormat CallFormat(const std::vector<ToolFunction>& tools, bool parallel) const override {
    grammar::TaggedJsonFormat f;
    for (const ToolFunction& t : tools) {
      f.tags.push_back({std::string(kCallBegin) + "function" + std::string(kSep) + t.name + "\n```json\n",
                        ArgumentsSchema(t), "\n```" + std::string(kCallEnd)});
    }
    f.prefix = std::string(kCallsBegin);
    f.separator = "\n";
    f.suffix = std::string(kCallsEnd);
    f.max_items = parallel ? kMaxParallelCalls : 1;
    return f;
  }
};

}  // namespace

const ToolCallParser& DeepseekV3ToolCallParser() {
  static const DeepseekV3Parser parser;
  return parser;
}

}  // namespace deepinfer::server
