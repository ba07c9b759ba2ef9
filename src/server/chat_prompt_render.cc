// chat_prompt_render: a test helper (not installed) that prints the prompt
// the server renders for a chat request, byte for byte, through the same
// code: ParseChatRequest -> RenderChatPrompt over a renderer that adds
// BOS / EOS as serve's does (tools/chat_renderer.cc).
// tests/chat/jinja2_compare_test.py compares it with Python Jinja2.
//
//   chat_prompt_render TEMPLATE_FILE REQUEST_JSON_FILE [BOS [EOS]]
// Exit 0 and the prompt on stdout; 1 and one line on stderr for a parse,
// request or render error (the server's 400 message).
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "server/chat_prompt.h"
#include "server/parsed_request.h"
#include "tokenizer/chat_template.h"

namespace {

std::string ReadAll(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

// A test helper: an exception (out of memory) aborts it, which the test
// reports as a failed render.
// NOLINTNEXTLINE(bugprone-exception-escape)
int main(int argc, char** argv) {
  using namespace deepinfer;
  if (argc < 3) {
    std::fprintf(stderr, "usage: chat_prompt_render TEMPLATE_FILE REQUEST_JSON_FILE [BOS [EOS]]\n");
    return 2;
  }
  auto tmpl = ChatTemplate::FromSource(ReadAll(argv[1]));
  if (!tmpl.ok()) {
    std::fprintf(stderr, "template: %s\n", tmpl.status().message().c_str());
    return 1;
  }
  const auto body = nlohmann::ordered_json::parse(ReadAll(argv[2]), nullptr, false);
  server::RequestLimits limits;
  limits.vocab_size = 1 << 20;
  server::ParsedRequest req;
  if (auto e = server::ParseChatRequest(body, limits, &req)) {
    std::fprintf(stderr, "request: %s\n", e->message.c_str());
    return 1;
  }
  const std::string bos = argc > 3 ? argv[3] : "", eos = argc > 4 ? argv[4] : "";
  const ChatTemplate& t = *tmpl;
  const server::ChatPromptRenderer renderer = [&](const std::vector<ChatMessage>& messages,
                                                  const ChatRenderOptions& request) {
    ChatRenderOptions options = request;
    options.bos_token = bos;
    options.eos_token = eos;
    return t.Render(messages, options);
  };
  auto text = server::RenderChatPrompt(renderer, req);
  if (!text.ok()) {
    std::fprintf(stderr, "render: %s\n", text.status().message().c_str());
    return 1;
  }
  std::fwrite(text->data(), 1, text->size(), stdout);
  return 0;
}
