// ChatTemplate against the real chat templates of Llama-3, Qwen3 and
// DeepSeek-V3 (read from the shared tokenizer_config.json files at test
// time). Every expected prompt is written by hand from the model family's
// documented prompt format, not captured from our own output.
#include "tokenizer/chat_template.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "io/gguf.h"

namespace deepinfer {
namespace {

namespace fs = std::filesystem;

std::string RealTemplate(const std::string& family) {
  const std::string path =
      std::string(DI_SHARED_DIR) + "/models/tokenizers/" + family + "/tokenizer_config.json";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str())["chat_template"].get<std::string>();
}

std::string Render(const std::string& family, const std::vector<ChatMessage>& messages,
                   bool generation_prompt, const std::string& bos = "", const std::string& eos = "") {
  StatusOr<ChatTemplate> tmpl = ChatTemplate::FromSource(RealTemplate(family));
  EXPECT_TRUE(tmpl.ok()) << tmpl.status().ToString();
  if (!tmpl.ok()) return "";
  ChatRenderOptions options;
  options.add_generation_prompt = generation_prompt;
  options.bos_token = bos;
  options.eos_token = eos;
  StatusOr<std::string> out = tmpl->Render(messages, options);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? *out : "";
}

const std::vector<ChatMessage> kSystemUser = {{"system", "You are helpful."}, {"user", "Hi"}};
const std::vector<ChatMessage> kMultiTurn = {
    {"system", "Be brief."}, {"user", "What is 2+2?"}, {"assistant", "4"}, {"user", "And 3+3?"}};

// ---- Llama 3: <|begin_of_text|>, header ids, <|eot_id|>, trimmed content.
// This (base Llama-3) template always ends with the assistant header.
TEST(ChatTemplateLlama3, SystemAndUser) {
  EXPECT_EQ(Render("llama3", kSystemUser, true, "<|begin_of_text|>"),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are helpful.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplateLlama3, MultiTurnTrimsContent) {
  std::vector<ChatMessage> messages = kMultiTurn;
  messages[1].content = "  What is 2+2?\n";
  EXPECT_EQ(Render("llama3", messages, false, "<|begin_of_text|>"),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n4<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nAnd 3+3?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

// ---- Qwen3: ChatML with <think> handling.
TEST(ChatTemplateQwen3, SystemAndUserWithAndWithoutGenerationPrompt) {
  const std::string base =
      "<|im_start|>system\nYou are helpful.<|im_end|>\n"
      "<|im_start|>user\nHi<|im_end|>\n";
  EXPECT_EQ(Render("qwen3", kSystemUser, true), base + "<|im_start|>assistant\n");
  EXPECT_EQ(Render("qwen3", kSystemUser, false), base);
}

TEST(ChatTemplateQwen3, UserOnly) {
  EXPECT_EQ(Render("qwen3", {{"user", "Hello"}}, true),
            "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateQwen3, HistoricReasoningIsDropped) {
  // Assistant turns before the last user query keep only their answer.
  std::vector<ChatMessage> messages = kMultiTurn;
  messages[2].content = "<think>\nSimple sum.\n</think>\n\n4";
  EXPECT_EQ(Render("qwen3", messages, true),
            "<|im_start|>system\nBe brief.<|im_end|>\n"
            "<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
            "<|im_start|>assistant\n4<|im_end|>\n"
            "<|im_start|>user\nAnd 3+3?<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplateQwen3, ReasoningAfterLastQueryIsKept) {
  // The final assistant turn (after the last user query) is rendered with
  // its think block re-normalized to "<think>\n...\n</think>\n\n".
  const std::vector<ChatMessage> messages = {{"user", "2+2?"}, {"assistant", "<think>\nadd\n</think>\n\n4"}};
  EXPECT_EQ(Render("qwen3", messages, false),
            "<|im_start|>user\n2+2?<|im_end|>\n"
            "<|im_start|>assistant\n<think>\nadd\n</think>\n\n4<|im_end|>\n");
  // Without reasoning, the last assistant turn still gets an empty think block.
  EXPECT_EQ(Render("qwen3", {{"user", "2+2?"}, {"assistant", "4"}}, false),
            "<|im_start|>user\n2+2?<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\n4<|im_end|>\n");
}

TEST(ChatTemplateQwen3, ToolMessagesBecomeToolResponses) {
  const std::vector<ChatMessage> messages = {{"user", "Weather?"}, {"tool", "sunny"}, {"tool", "warm"}};
  EXPECT_EQ(
      Render("qwen3", messages, true),
      "<|im_start|>user\nWeather?<|im_end|>\n"
      "<|im_start|>user\n<tool_response>\nsunny\n</tool_response>\n<tool_response>\nwarm\n</tool_response>"
      "<|im_end|>\n<|im_start|>assistant\n");
}

// ---- DeepSeek-V3: BOS, system prompts first, fullwidth-bar role markers.
const char kDsBos[] = "<｜begin▁of▁sentence｜>";

TEST(ChatTemplateDeepSeekV3, SystemAndUser) {
  EXPECT_EQ(Render("deepseek_v3", kSystemUser, true, kDsBos),
            "<｜begin▁of▁sentence｜>You are helpful.<｜User｜>Hi<｜Assistant｜>");
  EXPECT_EQ(Render("deepseek_v3", kSystemUser, false, kDsBos),
            "<｜begin▁of▁sentence｜>You are helpful.<｜User｜>Hi");
}

TEST(ChatTemplateDeepSeekV3, MultiTurn) {
  EXPECT_EQ(Render("deepseek_v3", kMultiTurn, true, kDsBos),
            "<｜begin▁of▁sentence｜>Be brief.<｜User｜>What is 2+2?<｜Assistant｜>4<｜end▁of▁sentence｜>"
            "<｜User｜>And 3+3?<｜Assistant｜>");
}

TEST(ChatTemplateDeepSeekV3, SystemPromptsAreJoined) {
  const std::vector<ChatMessage> messages = {{"system", "A"}, {"user", "u"}, {"system", "B"}};
  EXPECT_EQ(Render("deepseek_v3", messages, true, kDsBos),
            "<｜begin▁of▁sentence｜>A\n\nB<｜User｜>u<｜Assistant｜>");
}

// ---- Fallback and errors.
TEST(ChatTemplate, FallbackFormat) {
  ChatTemplate fallback = ChatTemplate::Fallback();
  EXPECT_TRUE(fallback.is_fallback());
  ChatRenderOptions options;
  options.add_generation_prompt = true;
  StatusOr<std::string> out = fallback.Render(kSystemUser, options);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "<|system|>\nYou are helpful.\n<|user|>\nHi\n<|assistant|>\n");
  options.add_generation_prompt = false;
  out = fallback.Render({{"user", "x"}}, options);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "<|user|>\nx\n");
}

TEST(ChatTemplate, SyntaxErrorNamesLineAndColumn) {
  StatusOr<ChatTemplate> t =
      ChatTemplate::FromSource("{% for m in messages %}\n{{ m.content }\n{% endfor %}");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("line 2:"), std::string::npos) << t.status().message();
}

TEST(ChatTemplate, RaiseExceptionBecomesStatus) {
  // A Mistral-style role alternation check.
  StatusOr<ChatTemplate> t = ChatTemplate::FromSource(
      "{% for m in messages %}{% if (m.role == 'user') != (loop.index0 % 2 == 0) %}"
      "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
      "{% endif %}{% if m.role == 'user' %}[INST] {{ m.content }} [/INST]{% else %}{{ m.content }}{{ "
      "eos_token }}"
      "{% endif %}{% endfor %}");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ChatRenderOptions options;
  options.eos_token = "</s>";
  StatusOr<std::string> ok = t->Render({{"user", "a"}, {"assistant", "b"}, {"user", "c"}}, options);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, "[INST] a [/INST]b</s>[INST] c [/INST]");
  StatusOr<std::string> bad = t->Render({{"user", "a"}, {"user", "b"}}, options);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("roles must alternate"), std::string::npos);
  EXPECT_NE(bad.status().message().find("line 1:"), std::string::npos);
}

TEST(ChatTemplate, RenderIsRepeatableAndThreadFree) {
  StatusOr<ChatTemplate> t = ChatTemplate::FromSource(RealTemplate("qwen3"));
  ASSERT_TRUE(t.ok());
  StatusOr<std::string> a = t->Render(kMultiTurn, ChatRenderOptions());
  StatusOr<std::string> b = t->Render(kMultiTurn, ChatRenderOptions());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);  // namespaces and sets do not leak between renders
  ChatTemplate moved = std::move(*t);
  EXPECT_FALSE(moved.is_fallback());
}

// ---- SourceFromModelFiles.
class ChatTemplateFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("di_chat_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& content) {
    std::ofstream(dir_ / name, std::ios::binary) << content;
  }
  StatusOr<std::optional<std::string>> Hf() {
    return ChatTemplate::SourceFromModelFiles("hf", dir_.string());
  }
  fs::path dir_;
};

TEST_F(ChatTemplateFiles, HfString) {
  Write("tokenizer_config.json", R"({"chat_template": "{{ x }}"})");
  auto s = Hf();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->value_or("?"), "{{ x }}");
  // A file path inside the directory works too (tokenizer.json as given).
  auto s2 = ChatTemplate::SourceFromModelFiles("hf", (dir_ / "tokenizer.json").string());
  ASSERT_TRUE(s2.ok());
  EXPECT_EQ(s2->value_or("?"), "{{ x }}");
}

TEST_F(ChatTemplateFiles, HfListPrefersDefault) {
  Write(
      "tokenizer_config.json",
      R"({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})");
  auto s = Hf();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->value_or("?"), "D");
  Write("tokenizer_config.json", R"({"chat_template": [{"name": "rag", "template": "R"}]})");
  s = Hf();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->value_or("?"), "R");
}

TEST_F(ChatTemplateFiles, HfMissingIsNullopt) {
  auto s = Hf();  // no tokenizer_config.json at all
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->has_value());
  Write("tokenizer_config.json", R"({"eos_token": "</s>", "chat_template": null})");
  s = Hf();
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->has_value());
}

TEST_F(ChatTemplateFiles, HfJinjaFileWins) {
  Write("tokenizer_config.json", R"({"chat_template": "old"})");
  Write("chat_template.jinja", "new {{ x }}\n");
  auto s = Hf();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->value_or("?"), "new {{ x }}\n");
}

TEST_F(ChatTemplateFiles, HfMalformedIsError) {
  for (const char* bad : {R"({"chat_template": 5})", R"({"chat_template": [{"name": "default"}]})",
                          "{not json", R"(["chat_template"])"}) {
    Write("tokenizer_config.json", bad);
    auto s = Hf();
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.status().message().find("tokenizer_config.json"), std::string::npos);
  }
}

TEST_F(ChatTemplateFiles, RealHfDirectory) {
  auto s = ChatTemplate::SourceFromModelFiles("hf", std::string(DI_SHARED_DIR) + "/models/tokenizers/qwen3");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_TRUE(s->has_value());
  EXPECT_EQ(s->value().rfind("{%- if tools %}", 0), 0u);
}

TEST_F(ChatTemplateFiles, Gguf) {
  GgufWriter with;
  with.SetString("general.architecture", "llama");
  with.SetString("tokenizer.chat_template", "{{ messages[0].content }}");
  const std::string with_path = (dir_ / "with.gguf").string();
  ASSERT_TRUE(with.Write(with_path).ok());
  auto s = ChatTemplate::SourceFromModelFiles("gguf", with_path);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->value_or("?"), "{{ messages[0].content }}");

  GgufWriter without;
  without.SetString("general.architecture", "llama");
  const std::string without_path = (dir_ / "without.gguf").string();
  ASSERT_TRUE(without.Write(without_path).ok());
  s = ChatTemplate::SourceFromModelFiles("gguf", without_path);
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->has_value());

  GgufWriter wrong_type;
  wrong_type.SetU32("tokenizer.chat_template", 7);
  const std::string wrong_path = (dir_ / "wrong.gguf").string();
  ASSERT_TRUE(wrong_type.Write(wrong_path).ok());
  EXPECT_FALSE(ChatTemplate::SourceFromModelFiles("gguf", wrong_path).ok());

  EXPECT_FALSE(ChatTemplate::SourceFromModelFiles("gguf", (dir_ / "missing.gguf").string()).ok());
  EXPECT_FALSE(ChatTemplate::SourceFromModelFiles("onnx", with_path).ok());
}

}  // namespace
}  // namespace deepinfer
