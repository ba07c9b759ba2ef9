// libFuzzer target for the chat-template engine: the input is a Jinja
// template source. It is lexed and parsed; when it parses, it renders over
// a fixed conversation (system, user, assistant with a think block, tool)
// with lowered limits so one input stays far under a second. Any outcome is
// fine except a crash, a sanitizer report, a leak or a hang.
#include <cstddef>
#include <cstdint>
#include <string>

#include "jinja/eval.h"

using namespace deepinfer::jinja;

namespace {

const Context& FuzzContext() {
  static const Context context = [] {
    auto message = [](const char* role, const char* content) {
      return Value::Dict({{"role", Value::String(role)}, {"content", Value::String(content)}});
    };
    ValueList messages = {
        message("system", "You are a helpful assistant."),
        message("user", "Hi <tool_response>\n"),
        message("assistant", "<think>\nhmm\n</think>\n\nHello \xC3\xA9!"),
        message("tool", "{\"ok\": true}"),
        message("user", ""),
    };
    return Context{{"messages", Value::List(std::move(messages))},
                   {"add_generation_prompt", Value::Bool(true)},
                   {"bos_token", Value::String("<s>")},
                   {"eos_token", Value::String("</s>")}};
  }();
  return context;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) return 0;  // longer sources add nothing the lexer has not seen
  const std::string source(reinterpret_cast<const char*>(data), size);
  deepinfer::StatusOr<Template> tmpl = Template::Parse(source);
  if (!tmpl.ok()) return 0;
  RenderLimits limits;
  limits.max_steps = 200000;
  limits.max_output_bytes = 1 << 16;
  limits.max_alloc_bytes = 1 << 22;
  (void)tmpl->Render(FuzzContext(), limits);
  return 0;
}
