// The tool fields of a chat request: tools, tool_choice, parallel_tool_calls
// (OpenAI's shapes; vLLM's errors for a choice naming no declared tool).
#include "server/request_fields.h"

namespace deepinfer::server::fields {
namespace {

MaybeError ParseToolList(const json& body, ParsedRequest* out) {
  const json* tools = Find(body, "tools");
  if (!tools) return std::nullopt;
  const char* what =
      "'tools' must be a list of {\"type\": \"function\", \"function\": {\"name\", \"description\", "
      "\"parameters\"}}";
  if (!tools->is_array()) return BadRequest(what, "tools");
  for (const json& tool : *tools) {
    if (!tool.is_object()) return BadRequest(what, "tools");
    const json* type = Find(tool, "type");
    if (!type || *type != "function")
      return BadRequest(what + std::string(" (type must be \"function\")"), "tools");
    const json* fn = Find(tool, "function");
    if (!fn || !fn->is_object()) return BadRequest(what, "tools");
    const json* name = Find(*fn, "name");
    if (!name || !name->is_string() || name->get<std::string>().empty()) {
      return BadRequest("each tool function needs a non-empty string 'name'", "tools");
    }
    ToolFunction f;
    f.name = name->get<std::string>();
    for (const ToolFunction& other : out->tools) {
      if (other.name == f.name) return BadRequest("tool '" + f.name + "' is declared twice", "tools");
    }
    const json* params = Find(*fn, "parameters");
    if (params && !params->is_object()) {
      return BadRequest("tool '" + f.name + "': 'parameters' must be a JSON Schema object", "tools");
    }
    f.parameters = params ? *params : json::object();
    if (const json* strict = Find(*fn, "strict")) {
      if (!strict->is_boolean())
        return BadRequest("tool '" + f.name + "': 'strict' must be a boolean", "tools");
      f.strict = strict->get<bool>();
    }
    out->tools.push_back(std::move(f));
  }
  // The template gets the list as sent (HF apply_chat_template's `tools`).
  out->chat.tools = *tools;
  return std::nullopt;
}

}  // namespace

MaybeError ParseTools(const json& body, ParsedRequest* out) {
  if (auto e = ParseToolList(body, out)) return e;
  ToolChoice& choice = out->tool_choice;
  choice.mode = out->tools.empty() ? ToolChoice::Mode::kNone : ToolChoice::Mode::kAuto;
  if (const json* tc = Find(body, "tool_choice")) {
    const char* what =
        "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": "
        "{\"name\": NAME}}";
    if (tc->is_string()) {
      const std::string s = tc->get<std::string>();
      if (s == "none") {
        choice.mode = ToolChoice::Mode::kNone;
      } else if (s == "auto") {
        choice.mode = ToolChoice::Mode::kAuto;
      } else if (s == "required") {
        choice.mode = ToolChoice::Mode::kRequired;
      } else {
        return BadRequest(what, "tool_choice");
      }
    } else if (tc->is_object()) {
      const json* type = Find(*tc, "type");
      const json* fn = Find(*tc, "function");
      const json* name = fn && fn->is_object() ? Find(*fn, "name") : nullptr;
      if (!type || *type != "function" || !name || !name->is_string()) return BadRequest(what, "tool_choice");
      choice.mode = ToolChoice::Mode::kNamed;
      choice.name = name->get<std::string>();
    } else {
      return BadRequest(what, "tool_choice");
    }
    if (choice.mode != ToolChoice::Mode::kNone && out->tools.empty()) {
      return BadRequest("'tool_choice' \"" +
                            std::string(tc->is_string() ? tc->get<std::string>() : "function") +
                            "\" needs 'tools'",
                        "tool_choice");
    }
    if (choice.mode == ToolChoice::Mode::kNamed) {
      bool declared = false;
      for (const ToolFunction& f : out->tools) declared = declared || f.name == choice.name;
      if (!declared) {
        return BadRequest(
            "'tool_choice' names the function '" + choice.name + "', which 'tools' does not declare",
            "tool_choice");
      }
    }
  }
  return Bool(body, "parallel_tool_calls", &out->parallel_tool_calls);
}

}  // namespace deepinfer::server::fields
