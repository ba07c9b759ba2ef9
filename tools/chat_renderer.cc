#include "tools/chat_renderer.h"

#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "core/log.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer::tools {
namespace {

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A template that renders a probe conversation without its messages' text
// (an empty file, a template for other variables) would drop every request's
// messages silently: refused at start-up instead.
Status CheckTemplateKeepsMessages(const ChatTemplate& tmpl) {
  const std::string probe_user = "deepinfer-probe-user-7f3a", probe_reply = "deepinfer-probe-reply-7f3a";
  std::vector<ChatMessage> messages(3);
  messages[0].role = "user";
  messages[0].content = probe_user;
  messages[1].role = "assistant";
  messages[1].content = probe_reply;
  messages[2].role = "user";
  messages[2].content = probe_user;
  auto text = tmpl.Render(messages, ChatRenderOptions{});
  if (!text.ok()) return text.status().WithContext("rendering a probe conversation");
  if (text->find(probe_user) == std::string::npos) {
    return InvalidArgument(
        "the template does not render the messages' content (a probe conversation "
        "rendered as " +
        std::to_string(text->size()) + " bytes without it)");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<ChatSetup> MakeChatSetup(const std::string& command, const std::string& chat_template_file,
                                  const LoadedModel& loaded) {
  std::optional<std::string> source;
  std::string origin;
  if (!chat_template_file.empty()) {
    DI_ASSIGN_OR_RETURN(std::string text, ReadFile(chat_template_file));
    source = std::move(text);
    origin = chat_template_file;
  } else {
    auto from_model = ChatTemplate::SourceFromModelFiles(loaded.format, loaded.path);
    if (!from_model.ok()) {
      DI_LOG_WARN("reading the checkpoint's chat template failed (%s)",
                  from_model.status().message().c_str());
    } else if (from_model->has_value()) {
      source = std::move(**from_model);
      origin = "the checkpoint";
    }
  }
  ChatSetup setup;
  std::shared_ptr<ChatTemplate> tmpl;
  if (source) {
    auto parsed = ChatTemplate::FromSource(*source);
    if (parsed.ok()) {
      if (Status s = CheckTemplateKeepsMessages(*parsed); !s.ok()) parsed = s;
    }
    if (!parsed.ok()) {
      if (!chat_template_file.empty()) return parsed.status().WithContext("--chat-template " + origin);
      std::fprintf(stderr,
                   "deepinfer %s: the chat template of the checkpoint is not supported (%s); "
                   "using the fallback chat format\n",
                   command.c_str(), parsed.status().message().c_str());
      setup.source = "fallback (the checkpoint's is not supported)";
    } else {
      tmpl = std::make_shared<ChatTemplate>(std::move(parsed).value());
      setup.template_text = *source;
      setup.source = origin == "the checkpoint" ? "the checkpoint's" : "--chat-template " + origin;
    }
  } else {
    std::fprintf(stderr,
                 "deepinfer %s: the checkpoint has no chat template; using the fallback chat format "
                 "(<|role|>\\ncontent\\n ... <|assistant|>\\n)\n",
                 command.c_str());
    setup.source = "fallback (the checkpoint has none)";
  }
  if (!tmpl) tmpl = std::make_shared<ChatTemplate>(ChatTemplate::Fallback());
  ChatRenderOptions render;
  const TokenizerData& data = loaded.tokenizer->data();
  auto piece = [&](int32_t id) {
    return id >= 0 && id < static_cast<int32_t>(data.pieces.size()) ? data.pieces[id] : "";
  };
  render.bos_token = piece(data.bos_id);
  render.eos_token = piece(data.eos_id);
  setup.renderer = [tmpl, render](const std::vector<ChatMessage>& messages,
                                  const ChatRenderOptions& request) {
    ChatRenderOptions options = request;
    options.bos_token = render.bos_token;
    options.eos_token = render.eos_token;
    return tmpl->Render(messages, options);
  };
  return setup;
}

std::vector<int32_t> EncodeRenderedChat(const Tokenizer& tok, const std::string& text) {
  bool add_special = true;
  const int32_t bos = tok.bos_id();
  if (bos >= 0 && bos < tok.vocab_size()) {
    const std::string& piece = tok.data().pieces[static_cast<size_t>(bos)];
    if (!piece.empty() && text.rfind(piece, 0) == 0) add_special = false;
  }
  return tok.Encode(text, add_special, /*parse_special=*/true);
}

}  // namespace deepinfer::tools
