#include "tokenizer/chat_template.h"

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

StatusOr<std::string> ChatTemplate::Render(const std::vector<ChatMessage>& messages,
                                           const ChatRenderOptions& options) const {
  if (is_fallback()) {
    std::string out;
    for (const ChatMessage& m : messages) out += "<|" + m.role + "|>\n" + m.content + "\n";
    if (options.add_generation_prompt) out += "<|assistant|>\n";
    return out;
  }
  jinja::ValueList list;
  list.reserve(messages.size());
  for (const ChatMessage& m : messages) {
    list.push_back(jinja::Value::Dict(
        {{"role", jinja::Value::String(m.role)}, {"content", jinja::Value::String(m.content)}}));
  }
  const jinja::Context context = {
      {"messages", jinja::Value::List(std::move(list))},
      {"add_generation_prompt", jinja::Value::Bool(options.add_generation_prompt)},
      {"bos_token", jinja::Value::String(options.bos_token)},
      {"eos_token", jinja::Value::String(options.eos_token)},
  };
  return impl_->tmpl->Render(context);
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
