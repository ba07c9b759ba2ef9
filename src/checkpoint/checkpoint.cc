// LoadModel: a .gguf file or an HF directory -> config, weights, model, tokenizer.
#include "checkpoint/checkpoint.h"

#include <sys/stat.h>

#include <cstdio>
#include <map>
#include <string>

#include "core/log.h"
#include "io/gguf.h"
#include "io/safetensors.h"
#include "model/config_loader.h"
#include "model/registry.h"
#include "model/weights.h"
#include "tokenizer/tokenizer.h"

namespace deepinfer {

namespace {

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool IsFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Every layer has tensors of its own: a layer count the checkpoint cannot
// hold is refused before the model sizes anything per layer. (A file with no
// tensors at all is left to the weight binder, which names the first missing.)
Status CheckLayersFitTensors(const ModelConfig& config, const WeightStore& weights,
                             const std::string& where) {
  const int64_t layers = config.num_layers + config.num_nextn_predict_layers;
  const int64_t tensors = static_cast<int64_t>(weights.All().size());
  if (tensors > 0 && layers > tensors) {
    return InvalidArgument(where + ": the config declares " + std::to_string(layers) +
                           " layers, but the checkpoint holds only " + std::to_string(tensors) + " tensors");
  }
  return Status::Ok();
}

// --tokenizer PATH: a .gguf file, a tokenizer.json[.gz] or a folder with one.
StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizerFrom(const std::string& path) {
  if (IsDirectory(path)) return Tokenizer::FromHfDir(path);
  if (!IsFile(path)) return NotFound("--tokenizer: no such file or folder: " + path);
  if (path.ends_with(".json") || path.ends_with(".json.gz")) return Tokenizer::FromHfFile(path);
  DI_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> gguf, GgufFile::Open(path));
  if (gguf->Find("tokenizer.ggml.model") == nullptr) {
    return InvalidArgument("--tokenizer " + path + ": the GGUF file holds no tokenizer.ggml.* metadata");
  }
  return Tokenizer::FromGguf(*gguf);
}

StatusOr<LoadedModel> LoadGguf(const std::string& path, const LoadOptions& options) {
  DI_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Open(path));
  std::shared_ptr<const GgufFile> gguf(std::move(file));
  StatusOr<ModelConfig> config = ModelConfigFromGguf(*gguf);
  if (!config.ok()) {
    return config.status().WithContext(path);
  }
  LoadedModel loaded;
  loaded.format = "gguf";
  loaded.path = path;
  loaded.weights = MakeGgufWeightStore(gguf);
  DI_RETURN_IF_ERROR(CheckLayersFitTensors(*config, *loaded.weights, path));
  DI_ASSIGN_OR_RETURN(loaded.model, CreateModel(*config, loaded.weights, options.num_threads));
  loaded.num_threads = options.num_threads;
  if (!options.load_tokenizer) {
    // The caller works on token ids only.
  } else if (gguf->Find("tokenizer.ggml.model") != nullptr) {
    StatusOr<std::unique_ptr<Tokenizer>> tok = Tokenizer::FromGguf(*gguf);
    if (!tok.ok()) {
      return tok.status().WithContext(path);
    }
    loaded.tokenizer = std::move(tok).value();
  } else {
    DI_LOG_WARN("%s: no tokenizer.ggml.* metadata; loading without a tokenizer", path.c_str());
  }
  return loaded;
}

StatusOr<LoadedModel> LoadHfDir(const std::string& dir, const LoadOptions& options) {
  DI_ASSIGN_OR_RETURN(ModelConfig config, ModelConfigFromHfDir(dir));
  DI_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsCheckpoint> checkpoint, SafetensorsCheckpoint::Open(dir));
  LoadedModel loaded;
  loaded.format = "hf";
  loaded.path = dir;
  loaded.weights = MakeHfWeightStore(std::move(checkpoint), dir);
  DI_RETURN_IF_ERROR(CheckLayersFitTensors(config, *loaded.weights, dir + "/config.json"));
  DI_ASSIGN_OR_RETURN(loaded.model, CreateModel(config, loaded.weights, options.num_threads));
  loaded.num_threads = options.num_threads;
  if (!options.load_tokenizer) {
    // The caller works on token ids only.
  } else if (IsFile(dir + "/tokenizer.json") || IsFile(dir + "/tokenizer.json.gz")) {
    DI_ASSIGN_OR_RETURN(loaded.tokenizer, Tokenizer::FromHfDir(dir));
  } else {
    // Some test checkpoints (stories260K-mtp) ship weights only.
    DI_LOG_WARN("%s: no tokenizer.json; loading without a tokenizer", dir.c_str());
  }
  return loaded;
}

std::string DescribeTensors(const WeightStore& weights) {
  std::map<std::string, int64_t> count_by_dtype;
  int64_t params = 0, bytes = 0, n = 0;
  for (const TensorView* t : weights.All()) {
    ++count_by_dtype[DTypeName(t->dtype)];
    params += t->NumElements();
    bytes += t->nbytes;
    ++n;
  }
  std::string dtypes;
  for (const auto& [name, count] : count_by_dtype) {
    if (!dtypes.empty()) {
      dtypes += ", ";
    }
    dtypes += name + " x" + std::to_string(count);
  }
  char buf[256];
  std::snprintf(buf, sizeof(buf), "tensors: %lld (%s), %lld parameters, %.2f MiB\n",
                static_cast<long long>(n), dtypes.c_str(), static_cast<long long>(params),
                static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

std::string DescribeTokenizer(const Tokenizer* tok) {
  if (tok == nullptr) {
    return "tokenizer: none\n";
  }
  const TokenizerData& d = tok->data();
  std::string s = "tokenizer: ";
  s += d.kind == TokenizerKind::kSentencePieceBpe ? "sentencepiece-bpe" : "byte-level-bpe";
  s += ", " + std::to_string(d.pieces.size()) + " tokens";
  if (!d.pre.empty()) {
    s += ", pre " + d.pre;
  }
  s += ", bos " + std::to_string(d.bos_id) + ", eos " + std::to_string(d.eos_id);
  if (!d.merges.empty()) {
    s += ", " + std::to_string(d.merges.size()) + " merges";
  }
  if (!d.chat_template.empty()) {
    s += ", chat template";
  }
  return s + "\n";
}

}  // namespace

LoadedModel::LoadedModel() = default;
LoadedModel::~LoadedModel() = default;
LoadedModel::LoadedModel(LoadedModel&&) noexcept = default;
LoadedModel& LoadedModel::operator=(LoadedModel&&) noexcept = default;

namespace {

Status CheckVocabularyFits(const LoadedModel& loaded, const std::string& which) {
  if (!loaded.tokenizer || !loaded.model) return Status::Ok();
  const int64_t model_vocab = loaded.model->config().vocab_size;
  if (loaded.tokenizer->vocab_size() > model_vocab) {
    return InvalidArgument(which + ": its vocabulary has " + std::to_string(loaded.tokenizer->vocab_size()) +
                           " tokens, the model's only " + std::to_string(model_vocab));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<ModelConfig> ReadModelConfig(const std::string& path) {
  if (IsDirectory(path)) return ModelConfigFromHfDir(path);
  if (IsFile(path)) {
    DI_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> gguf, GgufFile::Open(path));
    StatusOr<ModelConfig> config = ModelConfigFromGguf(*gguf);
    if (!config.ok()) return config.status().WithContext(path);
    return config;
  }
  struct stat st;
  if (stat(path.c_str(), &st) == 0) {
    return InvalidArgument("model path '" + path + "' is neither a .gguf file nor a directory");
  }
  return NotFound("model path '" + path + "' does not exist");
}

StatusOr<LoadedModel> LoadModel(const std::string& path, const LoadOptions& options) {
  if (options.load_tokenizer && !options.tokenizer_path.empty()) {
    LoadOptions without = options;
    without.load_tokenizer = false;
    DI_ASSIGN_OR_RETURN(LoadedModel loaded, LoadModel(path, without));
    StatusOr<std::unique_ptr<Tokenizer>> tok = LoadTokenizerFrom(options.tokenizer_path);
    if (!tok.ok()) return tok.status().WithContext("--tokenizer " + options.tokenizer_path);
    loaded.tokenizer = std::move(tok).value();
    DI_RETURN_IF_ERROR(CheckVocabularyFits(loaded, "--tokenizer " + options.tokenizer_path));
    return loaded;
  }
  if (IsDirectory(path) || IsFile(path)) {
    DI_ASSIGN_OR_RETURN(LoadedModel loaded,
                        IsDirectory(path) ? LoadHfDir(path, options) : LoadGguf(path, options));
    DI_RETURN_IF_ERROR(CheckVocabularyFits(loaded, path + ": the checkpoint's tokenizer"));
    return loaded;
  }
  struct stat st;
  if (stat(path.c_str(), &st) == 0) {
    return InvalidArgument("model path '" + path + "' is neither a .gguf file nor a directory");
  }
  return NotFound("model path '" + path + "' does not exist");
}

std::string LoadedModel::Describe() const {
  std::string s = "path: " + path + "\nformat: " + format + "\n";
  if (model) {
    s += DescribeModelConfig(model->config());
  }
  if (weights) {
    s += DescribeTensors(*weights);
  }
  s += DescribeTokenizer(tokenizer.get());
  return s;
}

}  // namespace deepinfer
