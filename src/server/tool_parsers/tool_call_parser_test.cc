// Tool-call parsers: each family's text (as its chat template renders calls)
// parses to the calls, non-call text stays content, and -- the invariant
// forced tool choice relies on -- every output the family's CallFormat
// grammar allows (random walks over a byte vocabulary) parses back to calls
// of declared functions whose arguments satisfy their schemas.
#include "server/tool_parsers/tool_call_parser.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "grammar/structured_output.h"
#include "server/chat_output.h"

namespace deepinfer::server {
namespace {

using ojson = nlohmann::ordered_json;

const ToolCallParser& P(const char* name) {
  const ToolCallParser* p = FindToolCallParser(name);
  EXPECT_NE(p, nullptr) << name;
  return *p;
}

TEST(ToolCallParsers, Registry) {
  EXPECT_EQ(ToolCallParserNames(), "hermes, llama3_json, deepseek_v3, mistral");
  EXPECT_EQ(FindToolCallParser("qwen3"), FindToolCallParser("hermes"));
  EXPECT_EQ(FindToolCallParser("bogus"), nullptr);
  EXPECT_EQ(DetectToolCallParser("{{ '<tool_call>' }}"), &P("hermes"));
  EXPECT_EQ(DetectToolCallParser("<|start_header_id|>"), &P("llama3_json"));
  EXPECT_EQ(DetectToolCallParser("[TOOL_CALLS]"), &P("mistral"));
  EXPECT_EQ(DetectToolCallParser("<\xef\xbd\x9ctool\xe2\x96\x81"
                                 "calls\xe2\x96\x81"
                                 "begin\xef\xbd\x9c>"),
            &P("deepseek_v3"));
  EXPECT_EQ(DetectToolCallParser("{{ messages }}"), nullptr);
}

TEST(ToolCallParsers, Hermes) {
  auto r = P("hermes").Parse(
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"n\": "
      "2}}\n"
      "</tool_call>\n<tool_call>\n{\"name\": \"t\", \"arguments\": {}}\n</tool_call>");
  EXPECT_EQ(r.content, "Let me check.\n");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments, R"({"city":"Paris","n":2})");  // key order kept
  EXPECT_EQ(r.calls[1].arguments, "{}");
  EXPECT_TRUE(P("hermes").Parse("plain text").calls.empty());
  EXPECT_EQ(P("hermes").Parse("<tool_call>{not json</tool_call>").content,
            "<tool_call>{not json</tool_call>");
  EXPECT_EQ(P("hermes").CallStart("abc <tool"), 4u);
  EXPECT_EQ(P("hermes").CallStart("abc <tx"), std::string_view::npos);
}

TEST(ToolCallParsers, Llama3Json) {
  auto r =
      P("llama3_json").Parse(R"( {"name": "a", "parameters": {"x": 1}}; {"name": "b", "parameters": {}})");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].arguments, R"({"x":1})");
  EXPECT_TRUE(r.content.empty());
  r = P("llama3_json").Parse("<|python_tag|>{\"name\": \"a\", \"arguments\": \"{\\\"q\\\": true}\"}");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments, R"({"q":true})");
  EXPECT_TRUE(P("llama3_json").Parse("Hello {\"name\": \"a\"}").calls.empty());
  EXPECT_TRUE(P("llama3_json").Parse("{\"name\": \"a\"} trailing").calls.empty());
  EXPECT_EQ(P("llama3_json").CallStart("  {"), 0u);
  EXPECT_EQ(P("llama3_json").CallStart("<|py"), 0u);
  EXPECT_EQ(P("llama3_json").CallStart("Hi"), std::string_view::npos);
}

TEST(ToolCallParsers, DeepseekV3AndMistral) {
  const std::string b = "<\xef\xbd\x9ctool\xe2\x96\x81", e = "\xef\xbd\x9c>";
  const std::string text = "ok" + b +
                           "calls\xe2\x96\x81"
                           "begin" +
                           e + b +
                           "call\xe2\x96\x81"
                           "begin" +
                           e + "function" + b + "sep" + e +
                           "get_weather\n```json\n{\"city\": \"Lima\"}\n```" + b +
                           "call\xe2\x96\x81"
                           "end" +
                           e + b +
                           "calls\xe2\x96\x81"
                           "end" +
                           e;
  auto r = P("deepseek_v3").Parse(text);
  EXPECT_EQ(r.content, "ok");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments, R"({"city":"Lima"})");
  r = P("mistral").Parse(
      R"(x[TOOL_CALLS][{"name": "a", "arguments": {"k": [1, 2]}}, {"name": "b", "arguments": {}}])");
  EXPECT_EQ(r.content, "x");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[0].arguments, R"({"k":[1,2]})");
}

// Every byte is a token (id = byte), then EOS.
std::vector<std::string> ByteVocab() {
  std::vector<std::string> v;
  for (int b = 0; b < 256; ++b) v.push_back(std::string(1, static_cast<char>(b)));
  v.push_back("");
  return v;
}

std::vector<ToolFunction> Tools() {
  return {{"get_weather", ojson::parse(R"({"type": "object", "properties": {
              "city": {"type": "string", "enum": ["Paris", "Lima"]}, "days": {"type": "integer", "minimum": 1, "maximum": 7},
              "note": {"type": "string", "maxLength": 3}}, "required": ["city", "days"], "additionalProperties": false})")},
          {"get_time",
           ojson::parse(R"({"type": "object", "properties": {"tz": {"type": "string", "maxLength": 4}},
                                      "additionalProperties": false})")}};
}

void ExpectValid(const ParsedToolCall& call, const std::string& where) {
  const ojson args = ojson::parse(call.arguments, nullptr, false);
  ASSERT_TRUE(args.is_object()) << where << ": " << call.arguments;
  if (call.name == "get_time") return;
  ASSERT_EQ(call.name, "get_weather") << where;
  EXPECT_TRUE(args["city"] == "Paris" || args["city"] == "Lima") << where << call.arguments;
  EXPECT_TRUE(args["days"].is_number_integer() && args["days"] >= 1 && args["days"] <= 7)
      << where << call.arguments;
  for (auto it = args.begin(); it != args.end(); ++it) {
    EXPECT_TRUE(it.key() == "city" || it.key() == "days" || it.key() == "note") << where << call.arguments;
  }
}

TEST(ToolCallParsers, EveryForcedOutputParsesToValidCalls) {
  const std::vector<std::string> vocab = ByteVocab();
  const auto eos = static_cast<int32_t>(vocab.size() - 1);
  auto so = StructuredOutput::Create(vocab, {eos});
  ASSERT_TRUE(so.ok());
  for (const char* family : {"hermes", "llama3_json", "deepseek_v3", "mistral"}) {
    for (bool parallel : {false, true}) {
      StructuredOutputSpec spec;
      spec.kind = StructuredOutputSpec::Kind::kTaggedJson;
      spec.tagged = P(family).CallFormat(Tools(), parallel);
      size_t most_calls = 0;
      for (uint32_t seed = 0; seed < 25; ++seed) {
        auto c = (*so)->MakeConstraint(spec);
        ASSERT_TRUE(c.ok()) << family << ": " << c.status().ToString();
        std::mt19937 rng(seed);
        std::string text;
        TokenBitmask mask(vocab.size());
        bool ended = false;  // EOS was allowed (the grammar allows it only where the output is complete)
        for (int step = 0; step < 4000 && !ended; ++step) {
          if ((*c)->IsComplete()) {
            ended = true;
            break;
          }
          (*c)->FillAllowedMask(&mask);
          std::vector<int32_t> allowed;
          mask.ForEachSet([&](int32_t id) { allowed.push_back(id); });
          ASSERT_FALSE(allowed.empty()) << family << " after " << text;
          int32_t pick = allowed[rng() % allowed.size()];
          if (pick == eos) {
            ended = true;
            break;
          }
          ASSERT_TRUE((*c)->Accept(pick));
          text += vocab[static_cast<size_t>(pick)];
        }
        const std::string where = std::string(family) + " seed " + std::to_string(seed) + ": " + text;
        ASSERT_TRUE(ended) << where;
        ToolParseResult r = P(family).Parse(text);
        ASSERT_FALSE(r.calls.empty()) << where;
        if (!parallel) EXPECT_EQ(r.calls.size(), 1u) << where;
        EXPECT_TRUE(r.content.empty()) << where;
        for (const ParsedToolCall& call : r.calls) ExpectValid(call, where);
        most_calls = std::max(most_calls, r.calls.size());
      }
      if (parallel) EXPECT_GT(most_calls, 1u) << family << ": parallel sections never held two calls";
    }
  }
}

// The streaming splitter: content before a call streams, the call comes
// whole at the end; reasoning splits at </think>; chunk boundaries anywhere
// give the same result as one push.
ChatOutputDelta Split(ReasoningFormat reasoning, const ToolCallParser* tools, const std::string& text,
                      size_t chunk, std::vector<std::string>* content_deltas = nullptr) {
  ChatOutputSplitter s(reasoning, tools, 16);
  ChatOutputDelta all;
  auto add = [&](ChatOutputDelta d) {
    all.reasoning += d.reasoning;
    all.content += d.content;
    if (content_deltas && !d.content.empty()) content_deltas->push_back(d.content);
    for (auto& c : d.calls) all.calls.push_back(c);
  };
  for (size_t i = 0; i < text.size(); i += chunk) add(s.Push(text.substr(i, chunk)));
  add(s.Finish());
  return all;
}

TEST(ChatOutputSplitter, SplitsReasoningContentAndCalls) {
  const std::string text =
      "<think>plan it</think>\n\nSure.<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": "
      "1}}\n</tool_call>";
  for (size_t chunk : {1, 2, 3, 7, 1000}) {
    std::vector<std::string> deltas;
    ChatOutputDelta d = Split(ReasoningFormat::kQwen3, &P("hermes"), text, chunk, &deltas);
    EXPECT_EQ(d.reasoning, "plan it") << chunk;
    EXPECT_EQ(d.content, "Sure.") << chunk;
    ASSERT_EQ(d.calls.size(), 1u) << chunk;
    EXPECT_EQ(d.calls[0].arguments, R"({"a":1})");
    for (const std::string& c : deltas)
      EXPECT_EQ(c.find('<'), std::string::npos) << "held text leaked: " << c;
  }
  // qwen3 needs the opening tag; deepseek_r1 does not.
  EXPECT_EQ(Split(ReasoningFormat::kQwen3, nullptr, "no think</think>x", 3).content, "no think</think>x");
  ChatOutputDelta r1 = Split(ReasoningFormat::kDeepseekR1, nullptr, "thinking</think>answer", 2);
  EXPECT_EQ(r1.reasoning, "thinking");
  EXPECT_EQ(r1.content, "answer");
  EXPECT_EQ(Split(ReasoningFormat::kDeepseekR1, nullptr, "<think>unclosed", 4).reasoning, "unclosed");
  // A would-be marker that is not a call is released as content at the end.
  ChatOutputDelta d = Split(ReasoningFormat::kNone, &P("hermes"), "a <tool_call> b", 2);
  EXPECT_EQ(d.content, "a <tool_call> b");
  EXPECT_TRUE(d.calls.empty());
  // Calls past max_calls are dropped.
  ChatOutputSplitter one(ReasoningFormat::kNone, &P("llama3_json"), 1);
  one.Push(R"({"name": "a", "parameters": {}}; {"name": "b", "parameters": {}})");
  EXPECT_EQ(one.Finish().calls.size(), 1u);
}

// Streamed arguments: with stream_arguments each family's calls arrive as a
// first fragment (name) and argument fragments while the text grows, and
// the fragments add up to the arguments a non-streamed split reports —
// the generated object without blanks outside strings — whatever the chunking.
TEST(ChatOutputSplitter, StreamsArgumentFragmentsThatAddUpToTheCall) {
  const std::string ds_calls =
      "<\xef\xbd\x9ctool\xe2\x96\x81"
      "calls\xe2\x96\x81"
      "begin\xef\xbd\x9c>";
  const std::string ds_calls_end =
      "<\xef\xbd\x9ctool\xe2\x96\x81"
      "calls\xe2\x96\x81"
      "end\xef\xbd\x9c>";
  const std::string ds_call =
      "<\xef\xbd\x9ctool\xe2\x96\x81"
      "call\xe2\x96\x81"
      "begin\xef\xbd\x9c>";
  const std::string ds_call_end =
      "<\xef\xbd\x9ctool\xe2\x96\x81"
      "call\xe2\x96\x81"
      "end\xef\xbd\x9c>";
  const std::string ds_sep =
      "<\xef\xbd\x9ctool\xe2\x96\x81"
      "sep\xef\xbd\x9c>";
  const std::string args = R"({"city": "Paris, FR", "days": [1, 2], "q": "a \"b\" }"})";
  const std::string want = R"({"city":"Paris, FR","days":[1,2],"q":"a \"b\" }"})";
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"hermes", "Sure.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " + args +
                     "}\n</tool_call>\n<tool_call>\n{\"name\": \"t\", \"arguments\": {}}\n</tool_call>"},
      {"llama3_json", "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": " + args +
                          "}; {\"name\": \"t\", \"parameters\": {}}"},
      {"mistral", "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": " + args +
                      "}, {\"name\": \"t\", \"arguments\": {}}]"},
      {"deepseek_v3", ds_calls + ds_call + "function" + ds_sep + "get_weather\n```json\n" + args + "\n```" +
                          ds_call_end + "\n" + ds_call + "function" + ds_sep + "t\n```json\n{}\n```" +
                          ds_call_end + ds_calls_end},
  };
  for (const auto& [family, text] : cases) {
    // The non-streamed split: whole calls.
    ChatOutputDelta whole = Split(ReasoningFormat::kNone, &P(family), text, 1000);
    ASSERT_EQ(whole.calls.size(), 2u) << family;
    EXPECT_EQ(whole.calls[0].arguments, want) << family;
    EXPECT_EQ(whole.calls[1].arguments, "{}") << family;
    for (size_t chunk : {1, 2, 3, 5, 1000}) {
      const std::string where = std::string(family) + ", chunks of " + std::to_string(chunk);
      ChatOutputSplitter s(ReasoningFormat::kNone, &P(family), 16, /*stream_arguments=*/true);
      std::vector<std::string> names, arguments;
      size_t fragments_before_finish = 0;
      auto add = [&](const ChatOutputDelta& d, bool finishing) {
        EXPECT_TRUE(d.calls.empty()) << where << ": every call here is streamable";
        for (const ToolCallFragment& f : d.fragments) {
          if (f.first) {
            ASSERT_EQ(f.index, names.size()) << where;
            names.push_back(f.name);
            arguments.push_back(f.arguments);
          } else {
            ASSERT_LT(f.index, names.size()) << where << ": a fragment before its call's first";
            arguments[f.index] += f.arguments;
          }
          if (!finishing) ++fragments_before_finish;
        }
      };
      for (size_t i = 0; i < text.size(); i += chunk) add(s.Push(text.substr(i, chunk)), false);
      add(s.Finish(), true);
      ASSERT_EQ(names.size(), 2u) << where;
      EXPECT_EQ(names[0], "get_weather") << where;
      EXPECT_EQ(names[1], "t") << where;
      EXPECT_EQ(arguments[0], whole.calls[0].arguments) << where;
      EXPECT_EQ(arguments[1], whole.calls[1].arguments) << where;
      EXPECT_EQ(ojson::parse(arguments[0]), ojson::parse(P(family).Parse(text).calls[0].arguments)) << where;
      if (chunk == 1) {
        EXPECT_GT(fragments_before_finish, 10u) << where << ": arguments were not streamed";
      }
    }
  }
}

}  // namespace
}  // namespace deepinfer::server
