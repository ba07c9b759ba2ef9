// The prompt text of a chat request: its messages and template inputs
// (tools, documents, chat_template_kwargs, add_generation_prompt,
// continue_final_message) through the server's chat renderer. The one entry
// point every route that needs a chat prompt uses (/v1/chat/completions, and
// routes that show or count the rendered prompt), so they cannot disagree.
// Thread-safety: as the renderer (ChatTemplate renders are const and
// reentrant).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "server/parsed_request.h"
#include "tokenizer/chat_template.h"

namespace deepinfer::server {

// Renders chat messages into prompt text. Null: the built-in fallback format,
// "<|role|>\ncontent\n" per message, then "<|assistant|>\n" (what
// ChatTemplate::Fallback documents). `options` are the request's (tools,
// documents, kwargs, generation prompt); the renderer adds the special
// tokens (bos_token, eos_token).
using ChatPromptRenderer =
    std::function<StatusOr<std::string>(const std::vector<ChatMessage>&, const ChatRenderOptions& options)>;

// `req` as ParseChatRequest filled it. InvalidArgument (prefixed "chat
// template: ") when the template fails on these inputs: the caller's 400.
StatusOr<std::string> RenderChatPrompt(const ChatPromptRenderer& renderer, const ParsedRequest& req);

}  // namespace deepinfer::server
