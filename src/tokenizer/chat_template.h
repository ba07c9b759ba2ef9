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
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace deepinfer {

struct ChatMessage {
  std::string role;     // "system", "user", "assistant", "tool"
  std::string content;  // text (multi-part contents are joined by the caller)
};

struct ChatRenderOptions {
  bool add_generation_prompt = true;
  std::string bos_token;  // exposed to the template as bos_token / eos_token
  std::string eos_token;
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
