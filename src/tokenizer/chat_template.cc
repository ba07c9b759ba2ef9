#include "tokenizer/chat_template.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "io/gguf.h"
#include "jinja/eval.h"

namespace deepinfer {

namespace fs = std::filesystem;

struct ChatTemplate::Impl {
  std::optional<jinja::Template> tmpl;  // nullopt: the built-in fallback format
};

ChatTemplate::ChatTemplate(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;
ChatTemplate::~ChatTemplate() = default;

StatusOr<ChatTemplate> ChatTemplate::FromSource(const std::string& source) {
  DI_ASSIGN_OR_RETURN(jinja::Template tmpl, jinja::Template::Parse(source));
  auto impl = std::make_unique<Impl>();
  impl->tmpl.emplace(std::move(tmpl));
  return ChatTemplate(std::move(impl));
}

ChatTemplate ChatTemplate::Fallback() { return ChatTemplate(std::make_unique<Impl>()); }

bool ChatTemplate::is_fallback() const { return !impl_->tmpl.has_value(); }

namespace {

// JSON -> template value, keeping object key order (tojson of a tool's
// parameters must print them as sent).
StatusOr<jinja::Value> ToValue(const nlohmann::ordered_json& j, const std::string& where) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return jinja::Value::None();
    case nlohmann::ordered_json::value_t::boolean:
      return jinja::Value::Bool(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return jinja::Value::Int(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned:
      if (j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
        return InvalidArgument(where + ": integer beyond 64 bits");
      }
      return jinja::Value::Int(static_cast<int64_t>(j.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float:
      return jinja::Value::Float(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return jinja::Value::String(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      jinja::ValueList list;
      list.reserve(j.size());
      for (const auto& item : j) {
        DI_ASSIGN_OR_RETURN(jinja::Value v, ToValue(item, where));
        list.push_back(std::move(v));
      }
      return jinja::Value::List(std::move(list));
    }
    case nlohmann::ordered_json::value_t::object: {
      jinja::ValueDict dict;
      dict.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) {
        DI_ASSIGN_OR_RETURN(jinja::Value v, ToValue(it.value(), where));
        dict.emplace_back(it.key(), std::move(v));
      }
      return jinja::Value::Dict(std::move(dict));
    }
    default:
      return InvalidArgument(where + ": binary values are not supported");
  }
}

StatusOr<jinja::Value> MessageValue(const ChatMessage& m, bool null_as_empty) {
  const bool none = m.content_is_null && !null_as_empty;
  jinja::ValueDict dict = {{"role", jinja::Value::String(m.role)},
                           {"content", none ? jinja::Value::None() : jinja::Value::String(m.content)}};
  if (m.fields.is_object()) {
    for (auto it = m.fields.begin(); it != m.fields.end(); ++it) {
      if (it.key() == "role" || it.key() == "content") continue;
      DI_ASSIGN_OR_RETURN(jinja::Value v, ToValue(it.value(), "messages"));
      dict.emplace_back(it.key(), std::move(v));
    }
  }
  return jinja::Value::Dict(std::move(dict));
}

// HF's continue_final_message: cut the prompt right after the last
// occurrence of the final message's stripped content, keeping its trailing
// whitespace when the template kept it (transformers' apply_chat_template).
// Python's strip() is ASCII whitespace here.
StatusOr<std::string> CutAfterFinalMessage(std::string rendered, const ChatMessage& last) {
  const std::string& text = last.content;
  constexpr const char* kSpace = " \t\n\r\f\v";
  const size_t b = text.find_first_not_of(kSpace);
  const std::string stripped =
      b == std::string::npos ? "" : text.substr(b, text.find_last_not_of(kSpace) - b + 1);
  const size_t at = rendered.rfind(stripped);
  if (at == std::string::npos) {
    return InvalidArgument(
        "continue_final_message: the final message's content does not appear in the rendered prompt");
  }
  const bool kept = rendered.compare(at, text.size(), text) == 0;
  rendered.resize(at + (kept ? text.size() : stripped.size()));
  return rendered;
}

}  // namespace

StatusOr<std::string> ChatTemplate::Render(const std::vector<ChatMessage>& messages,
                                           const ChatRenderOptions& options) const {
  if (options.continue_final_message && options.add_generation_prompt) {
    return InvalidArgument("continue_final_message and add_generation_prompt exclude each other");
  }
  if (options.continue_final_message && messages.empty()) {
    return InvalidArgument("continue_final_message needs a final message");
  }
  const bool generation_prompt = options.add_generation_prompt && !options.continue_final_message;
  std::string out;
  if (is_fallback()) {
    for (const ChatMessage& m : messages) out += "<|" + m.role + "|>\n" + m.content + "\n";
    if (generation_prompt) out += "<|assistant|>\n";
  } else {
    auto render = [&](bool null_as_empty) -> StatusOr<std::string> {
      jinja::ValueList list;
      list.reserve(messages.size());
      for (const ChatMessage& m : messages) {
        DI_ASSIGN_OR_RETURN(jinja::Value v, MessageValue(m, null_as_empty));
        list.push_back(std::move(v));
      }
      jinja::Context context = {
          {"messages", jinja::Value::List(std::move(list))},
          {"add_generation_prompt", jinja::Value::Bool(generation_prompt)},
          {"bos_token", jinja::Value::String(options.bos_token)},
          {"eos_token", jinja::Value::String(options.eos_token)},
      };
      // None when absent, as apply_chat_template passes them.
      DI_ASSIGN_OR_RETURN(jinja::Value tools, ToValue(options.tools, "tools"));
      context.emplace_back("tools", std::move(tools));
      DI_ASSIGN_OR_RETURN(jinja::Value documents, ToValue(options.documents, "documents"));
      context.emplace_back("documents", std::move(documents));
      if (options.variables.is_object()) {
        for (auto it = options.variables.begin(); it != options.variables.end(); ++it) {
          for (const auto& [name, value] : context) {
            if (name == it.key())
              return InvalidArgument("template variable '" + name + "' cannot be replaced");
          }
          DI_ASSIGN_OR_RETURN(jinja::Value v, ToValue(it.value(), it.key()));
          context.emplace_back(it.key(), std::move(v));
        }
      }
      return impl_->tmpl->Render(context);
    };
    StatusOr<std::string> rendered = render(/*null_as_empty=*/false);
    // Templates that read content as a string (Qwen3's `'</think>' in
    // content`) fail on None; vLLM passes "" for null content, so that
    // is the second try. DeepSeek-V3's, which tests `content is none`,
    // succeeds on the first.
    const bool has_null =
        std::any_of(messages.begin(), messages.end(), [](const ChatMessage& m) { return m.content_is_null; });
    if (!rendered.ok() && has_null) rendered = render(/*null_as_empty=*/true);
    DI_ASSIGN_OR_RETURN(out, std::move(rendered));
  }
  if (options.continue_final_message) return CutAfterFinalMessage(std::move(out), messages.back());
  return out;
}

namespace {

constexpr uintmax_t kMaxTemplateFileBytes = 64u << 20;

StatusOr<std::string> ReadSmallFile(const fs::path& path) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) return NotFound(path.string() + ": " + ec.message());
  if (size > kMaxTemplateFileBytes) {
    return InvalidArgument(path.string() + ": file too large for a chat template");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path.string() + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// tokenizer_config.json "chat_template": a string, or a list of
// {"name", "template"} from which "default" is chosen (else the first).
StatusOr<std::optional<std::string>> TemplateFromConfig(const fs::path& path) {
  DI_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(path));
  nlohmann::json config = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) return InvalidArgument(path.string() + ": not valid JSON");
  if (!config.is_object()) return InvalidArgument(path.string() + ": expected a JSON object");
  auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) return std::optional<std::string>();
  if (it->is_string()) return std::optional<std::string>(it->get<std::string>());
  if (!it->is_array()) {
    return InvalidArgument(path.string() +
                           ": chat_template: expected a string or a list of {name, template}");
  }
  std::optional<std::string> chosen;
  for (size_t i = 0; i < it->size(); ++i) {
    const nlohmann::json& entry = (*it)[i];
    if (!entry.is_object() || !entry.contains("template") || !entry["template"].is_string()) {
      return InvalidArgument(path.string() + ": chat_template[" + std::to_string(i) +
                             "]: expected {name, template} with a string template");
    }
    const bool is_default = entry.contains("name") && entry["name"] == "default";
    if (!chosen || is_default) chosen = entry["template"].get<std::string>();
    if (is_default) break;
  }
  return chosen;
}

}  // namespace

StatusOr<std::optional<std::string>> ChatTemplate::SourceFromModelFiles(const std::string& format,
                                                                        const std::string& path) {
  if (format == "gguf") {
    DI_ASSIGN_OR_RETURN(auto gguf, GgufFile::Open(path));
    if (gguf->Find("tokenizer.chat_template") == nullptr) return std::optional<std::string>();
    DI_ASSIGN_OR_RETURN(std::string source, gguf->GetString("tokenizer.chat_template"));
    return std::optional<std::string>(std::move(source));
  }
  if (format == "hf") {
    std::error_code ec;
    const fs::path dir = fs::is_directory(path, ec) ? fs::path(path) : fs::path(path).parent_path();
    // Recent transformers save the template as its own file, which wins.
    const fs::path jinja_file = dir / "chat_template.jinja";
    if (fs::exists(jinja_file, ec)) {
      DI_ASSIGN_OR_RETURN(std::string source, ReadSmallFile(jinja_file));
      return std::optional<std::string>(std::move(source));
    }
    const fs::path config = dir / "tokenizer_config.json";
    if (!fs::exists(config, ec)) return std::optional<std::string>();
    return TemplateFromConfig(config);
  }
  return InvalidArgument("chat template: unknown model format '" + format + "' (expected gguf or hf)");
}

}  // namespace deepinfer
