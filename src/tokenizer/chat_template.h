// ChatTemplate: renders a list of chat messages into the prompt text a model
// was trained on, by evaluating the checkpoint's Jinja2 chat template with a
// built-in Jinja subset engine (jinja/eval.h). Templates come from model files,
// so they are untrusted: evaluation is bounded (output size, loop iterations,
// recursion depth) and every error is a Status, never a crash.
//
// Usage (docs/chat-templates.md):
//   DI_ASSIGN_OR_RETURN(auto source, ChatTemplate::SourceFromModelFiles(format, path));
//   ChatTemplate tmpl = ChatTemplate::Fallback();
//   if (source) { DI_ASSIGN_OR_RETURN(tmpl, ChatTemplate::FromSource(*source)); }
//   DI_ASSIGN_OR_RETURN(std::string prompt, tmpl.Render(messages, {.add_generation_prompt = true}));
// Thread-safety: a ChatTemplate is immutable; Render may run concurrently.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace deepinfer {

// One message as the template sees it: a dict with "role", "content" and
// then every other field of `fields`, in their order. nlohmann::json's
// members make the implicit moves noexcept(false); nothing throws there.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct ChatMessage {
  std::string role;              // "system", "user", "assistant", "tool", "developer"
  std::string content;           // text (multi-part contents are joined by the caller)
  bool content_is_null = false;  // content is None in the template (an assistant turn of only tool calls)
  // The message's other fields as sent (tool_calls, tool_call_id, name,
  // reasoning_content, ...): a JSON object, or null for none. Key order is kept.
  nlohmann::ordered_json fields;
};

// The variables a render gets besides `messages` (Hugging Face's
// apply_chat_template arguments). Implicit moves: as ChatMessage's.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct ChatRenderOptions {
  bool add_generation_prompt = true;
  // Leave the last message open: the prompt ends right after its content
  // (HF continue_final_message). Excludes add_generation_prompt.
  bool continue_final_message = false;
  std::string bos_token;  // exposed to the template as bos_token / eos_token
  std::string eos_token;
  nlohmann::ordered_json tools;      // a list, or null: `tools` is None in the template (as HF passes it)
  nlohmann::ordered_json documents;  // a list, or null: None
  // Extra top-level variables (chat_template_kwargs, e.g. enable_thinking);
  // an object or null. They cannot replace the variables above.
  nlohmann::ordered_json variables;
};

class ChatTemplate {
 public:
  // Parses a Jinja2 template source. InvalidArgument with line:column on a
  // syntax error or a construct outside the supported subset.
  static StatusOr<ChatTemplate> FromSource(const std::string& source);
  // The documented fallback for checkpoints without a template:
  // "<|role|>\ncontent\n" per message, then "<|assistant|>\n" (docs/serving.md).
  static ChatTemplate Fallback();
  // The template a checkpoint carries: GGUF key tokenizer.chat_template, or HF
  // tokenizer_config.json "chat_template" (string, or the entry named
  // "default" of a list). nullopt when the checkpoint has none.
  // format is "gguf" or "hf"; path as given to LoadModel.
  static StatusOr<std::optional<std::string>> SourceFromModelFiles(const std::string& format,
                                                                   const std::string& path);

  // InvalidArgument for a template error, a value the engine cannot hold (an
  // integer beyond 64 bits) or a final message continue_final_message
  // cannot find in the rendered text.
  StatusOr<std::string> Render(const std::vector<ChatMessage>& messages,
                               const ChatRenderOptions& options) const;
  bool is_fallback() const;

  ChatTemplate(ChatTemplate&&) noexcept;
  ChatTemplate& operator=(ChatTemplate&&) noexcept;
  ~ChatTemplate();

 private:
  struct Impl;
  explicit ChatTemplate(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace deepinfer
