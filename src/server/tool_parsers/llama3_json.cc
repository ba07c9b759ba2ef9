// Llama 3.1 / 3.2 / 3.3 JSON tool calls: the whole output is
//   [<|python_tag|>]{"name": NAME, "parameters": {...}}[; {...}]*
// (what Llama's templates describe and render); anything else is content.
#include "server/tool_parsers/tool_call_parser.h"

namespace deepinfer::server {
namespace {

using namespace tool_parsing;

constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kSpace = " \t\r\n";

class Llama3JsonParser final : public ToolCallParser {
 public:
  const char* name() const override { return "llama3_json"; }

  // Calls only open the output: the first non-blank text decides.
  size_t CallStart(std::string_view text) const override {
    const size_t i = text.find_first_not_of(kSpace);
    if (i == std::string_view::npos) return text.empty() ? std::string_view::npos : 0;
    const std::string_view rest = text.substr(i);
    if (rest[0] == '{' || rest.substr(0, kPythonTag.size()) == kPythonTag.substr(0, rest.size())) return 0;
    return std::string_view::npos;
  }

  ToolParseResult Parse(std::string_view text) const override {
    ToolParseResult fail{std::string(text), {}};
    size_t i = text.find_first_not_of(kSpace);
    if (i == std::string_view::npos) return fail;
    if (text.substr(i, kPythonTag.size()) == kPythonTag) i += kPythonTag.size();
    ToolParseResult result;
    while (true) {
      i = text.find_first_not_of(kSpace, i);
      if (i == std::string_view::npos || text[i] != '{') return fail;
      const size_t end = JsonValueEnd(text, i);
      ParsedToolCall call;
      if (end == std::string_view::npos || !ParseCallObject(text.substr(i, end - i), &call)) return fail;
      result.calls.push_back(std::move(call));
      i = text.find_first_not_of(kSpace, end);
      if (i == std::string_view::npos) return result;
      if (text[i] != ';') return fail;
      ++i;
    }
  }

  std::vector<StreamingToolCall> StreamCalls(std::string_view text) const override {
    std::vector<StreamingToolCall> out;
    size_t i = text.find_first_not_of(kSpace);
    if (i == std::string_view::npos) return out;
    if (text.substr(i, kPythonTag.size()) == kPythonTag) i += kPythonTag.size();
    StreamCallObjects(text, i, ';', &out);
    return out;
  }

  grammar::TaggedJsonFormat CallFormat(const std::vector<ToolFunction>& tools, bool parallel) const override {
    grammar::TaggedJsonFormat f;
    for (const ToolFunction& t : tools) {
      f.tags.push_back({"{\"name\": " + JsonString(t.name) + ", \"parameters\": ", ArgumentsSchema(t), "}"});
    }
    f.separator = "; ";
    f.max_items = parallel ? kMaxParallelCalls : 1;
    return f;
  }
};

}  // namespace

const ToolCallParser& Llama3JsonToolCallParser() {
  static const Llama3JsonParser parser;
  return parser;
}

}  // namespace deepinfer::server
