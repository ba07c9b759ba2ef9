#include "server/chat_prompt.h"

namespace deepinfer::server {

StatusOr<std::string> RenderChatPrompt(const ChatPromptRenderer& renderer, const ParsedRequest& req) {
  StatusOr<std::string> text =
      renderer ? renderer(req.messages, req.chat) : ChatTemplate::Fallback().Render(req.messages, req.chat);
  if (!text.ok()) return text.status().WithContext("chat template");
  return text;
}

}  // namespace deepinfer::server
