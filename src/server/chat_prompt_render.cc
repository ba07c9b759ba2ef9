// chat_prompt_render: a test helper (not installed) that prints the prompt
// the server renders for a chat request, byte for byte, through the same
// code: ParseChatRequest -> ChatTemplate::Render with the request's inputs.
// tests/chat/jinja2_compare_test.py compares it with Python Jinja2.
//
//   chat_prompt_render TEMPLATE_FILE REQUEST_JSON_FILE [BOS [EOS]]
// Exit 0 and the prompt on stdout; 1 and one line on stderr for a parse,
// request or render error (the server's 400 message).
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

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
  ChatRenderOptions options = req.chat;
  if (argc > 3) options.bos_token = argv[3];
  if (argc > 4) options.eos_token = argv[4];
  auto text = tmpl->Render(req.messages, options);
  if (!text.ok()) {
    std::fprintf(stderr, "render: %s\n", text.status().message().c_str());
    return 1;
  }
  std::fwrite(text->data(), 1, text->size(), stdout);
  return 0;
}
