#include "tools/generation_config.h"

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace deepinfer::tools {
namespace {

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool IsFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string Format(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

StatusOr<GenerationDefaults> ReadGenerationDefaults(const std::string& mode, const std::string& model_path) {
  GenerationDefaults out;
  if (mode == "none") return out;
  std::string path;
  if (mode.empty()) return InvalidArgument("--generation-config must be auto, none or a path");
  if (mode == "auto") {
    if (!IsDirectory(model_path) || !IsFile(model_path + "/generation_config.json")) return out;
    path = model_path + "/generation_config.json";
  } else {
    path = IsDirectory(mode) ? mode + "/generation_config.json" : mode;
    if (!IsFile(path)) return InvalidArgument("--generation-config: cannot read '" + path + "'");
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return InvalidArgument("--generation-config: '" + path + "' is not a JSON object");
  }
  out.source = path;
  SamplingParams& s = out.sampling;
  // The keys vLLM takes from the file; do_sample is ignored, as there.
  struct Field {
    const char* key;
    double* value;
  };
  double top_k = static_cast<double>(s.top_k);
  for (Field f : {Field{"temperature", &s.temperature}, Field{"top_p", &s.top_p}, Field{"min_p", &s.min_p},
                  Field{"repetition_penalty", &s.repetition_penalty}, Field{"top_k", &top_k}}) {
    auto it = j.find(f.key);
    if (it == j.end() || it->is_null()) continue;
    if (!it->is_number()) {
      return InvalidArgument("--generation-config: '" + path + "': " + f.key + " must be a number");
    }
    *f.value = it->get<double>();
    out.summary += std::string(out.summary.empty() ? "" : " ") + f.key + "=" + Format(*f.value);
  }
  if (top_k < 0 || top_k > (1 << 30)) {
    return InvalidArgument("--generation-config: '" + path + "': top_k must be >= 0");
  }
  s.top_k = static_cast<int64_t>(top_k);
  if (Status st = s.Validate(); !st.ok()) {
    return InvalidArgument("--generation-config: '" + path + "': " + st.message());
  }
  return out;
}

}  // namespace deepinfer::tools
