// The chat template a command renders conversations with, chosen once at
// start-up for `deepinfer serve` and `deepinfer generate --chat`:
// --chat-template FILE, else the checkpoint's own template, else the
// documented fallback format (with a notice on stderr). A template that
// cannot be parsed, or renders a probe conversation without its messages'
// text, is an error for --chat-template and a notice (then the fallback)
// for the checkpoint's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "core/status.h"
#include "server/api_service.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer::tools {

struct ChatSetup {
  server::ChatPromptRenderer renderer;  // adds the special tokens to the request's options
  std::string source;                   // for the start-up summary: "the checkpoint", a file, "fallback ..."
  std::string template_text;            // the Jinja source in use; "" for the fallback format
};

// `command` prefixes the notices ("serve", "generate").
StatusOr<ChatSetup> MakeChatSetup(const std::string& command, const std::string& chat_template_file,
                                  const LoadedModel& loaded);

// Token ids of a rendered chat prompt: special-token text parsed, and BOS
// added only when the text does not already begin with it (templates
// usually write BOS themselves) -- the rule the server's chat route applies.
std::vector<int32_t> EncodeRenderedChat(const Tokenizer& tok, const std::string& text);

}  // namespace deepinfer::tools
