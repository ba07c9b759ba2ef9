// ToolCallParser: one model family's native tool-call format, both ways:
// parsing the generated text into OpenAI tool calls, and describing the
// format as a grammar (grammar/tagged_json.h) so tool_choice "required" or
// a named function forces a well-formed call whose arguments follow the
// function's parameters schema.
//
// Families (one file each): hermes (Qwen2.5/Qwen3, Hermes: <tool_call>{...}
// </tool_call>), llama3_json (Llama 3.x: {"name", "parameters"} objects,
// optionally after <|python_tag|>, separated by ";"), deepseek_v3
// (<｜tool▁calls▁begin｜> call tokens with ```json arguments), mistral
// ([TOOL_CALLS][{"name", "arguments"}, ...]).
// Thread-safety: parsers are stateless singletons; every method is const.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/tagged_json.h"
#include "server/parsed_request.h"

namespace deepinfer::server {

// The most calls a forced (required / named) parallel call section holds.
inline constexpr int32_t kMaxParallelCalls = 16;

struct ParsedToolCall {
  std::string name;
  std::string arguments;  // a JSON object's text
};

struct ToolParseResult {
  std::string content;  // text outside the calls ("" when there is none)
  std::vector<ParsedToolCall> calls;
};

class ToolCallParser {
 public:
  virtual ~ToolCallParser() = default;
  virtual const char* name() const = 0;

  // Where a call section may begin in `text` (generated content so far):
  // the offset of its first marker, or of a marker's beginning cut off by the
  // end of `text`; npos when no call can start anywhere in `text`. Streaming
  // holds text back from there until the output ends.
  virtual size_t CallStart(std::string_view text) const = 0;

  // The whole generated content -> text and calls. Output that is not a
  // well-formed call section stays content (no calls), as vLLM's parsers do.
  virtual ToolParseResult Parse(std::string_view text) const = 0;

  // The format of one call (or, with `parallel`, one or more) of one of
  // `tools`, for grammar-forced tool choice.
  virtual grammar::TaggedJsonFormat CallFormat(const std::vector<ToolFunction>& tools,
                                               bool parallel) const = 0;
};

// nullptr for an unknown name.
const ToolCallParser* FindToolCallParser(std::string_view name);
// "hermes, llama3_json, deepseek_v3, mistral" (for flag errors).
std::string ToolCallParserNames();
// The parser whose markers the chat template writes; nullptr when none does.
const ToolCallParser* DetectToolCallParser(std::string_view template_source);

namespace tool_parsing {
// Helpers shared by the parsers.

// Offset of `marker` in text, or of a proper prefix of it that ends text;
// npos when neither.
size_t FindMarkerOrPrefix(std::string_view text, std::string_view marker);
// The end (one past the closing brace or bracket) of the JSON object or
// array starting at text[begin]; npos when it is not closed.
size_t JsonValueEnd(std::string_view text, size_t begin);
// A {"name": STRING, <args_key>: OBJECT} call object (args_key "arguments"
// or "parameters"; an arguments string holding JSON is accepted too).
// False when `object_text` is not one.
bool ParseCallObject(std::string_view object_text, ParsedToolCall* out);
// `"name"` as JSON text.
std::string JsonString(const std::string& s);
// The trailing part of a parameters schema as the grammar needs it (an
// empty schema allows any object).
std::string ArgumentsSchema(const ToolFunction& f);
}  // namespace tool_parsing

}  // namespace deepinfer::server
