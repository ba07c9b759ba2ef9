// deepinfer score: per-position log-probabilities of a token sequence.
//
//   deepinfer score --model PATH --tokens ID,ID,... [--top K] [--threads N] [--chunk N]
//
// Prints, for i = 0..n-2, one JSON line
//   {"pos": i, "token": tokens[i+1], "logprob": log p(tokens[i+1] | tokens[0..i]),
//    "top": [[id, logprob], ...]}
// with the log-softmax taken in double and printed with 17 significant digits.
// The sequence runs as one prefill chunk (all logit rows), or as chunks of
// --chunk tokens (the same numbers; useful to test chunked prefill).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "core/log.h"
#include "model/model.h"
#include "tools/commands.h"
#include "tools/flags.h"

namespace deepinfer::tools {

namespace {

constexpr const char* kUsageLine = "usage: deepinfer score [--model] MODEL --tokens ID,ID,... [flags]";
constexpr const char* kSummary =
    "Prints one JSON line per position i: the log-prob of tokens[i+1] given tokens[0..i] and the top K.";

std::vector<FlagSpec> ScoreFlags() {
  return {{"model", "PATH", "the checkpoint: a .gguf file or an HF directory (also the first argument)",
           kRequired},
          {"tokens", "ID,ID,...", "comma-separated token ids (at least one)", kRequired},
          {"top", "K", "how many top [id, logprob] pairs to list per position", "5"},
          {"threads", "N", "compute threads", "all CPUs"},
          {"chunk", "N", "run the prefill in chunks of N tokens", "one chunk"},
          {"kv-cache-dtype", "auto|f32|f16|bf16|q8_0",
           "element type of the KV cache (score is the reference tool)", "f32"}};
}

StatusOr<std::vector<int32_t>> ParseTokenIds(const std::string& text) {
  std::vector<int32_t> ids;
  size_t begin = 0;
  while (true) {
    const size_t end = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, end - begin);
    const char* s = item.c_str();
    char* stop = nullptr;
    errno = 0;
    const long long v = std::strtoll(s, &stop, 10);
    if (item.empty() || errno != 0 || stop == s || *stop != '\0' || v < INT32_MIN || v > INT32_MAX) {
      return InvalidArgument("--tokens: '" + item + "' (item " + std::to_string(ids.size()) +
                             ") is not a token id");
    }
    ids.push_back(static_cast<int32_t>(v));
    if (end == text.size()) {
      break;
    }
    begin = end + 1;
  }
  return ids;
}

// log-softmax of one logit row, in double.
std::vector<double> LogSoftmax(const float* logits, int64_t n) {
  double max_logit = -INFINITY;
  for (int64_t i = 0; i < n; ++i) {
    max_logit = std::max(max_logit, static_cast<double>(logits[i]));
  }
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    sum += std::exp(static_cast<double>(logits[i]) - max_logit);
  }
  const double log_z = max_logit + std::log(sum);
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    out[i] = static_cast<double>(logits[i]) - log_z;
  }
  return out;
}

std::string FormatLine(int64_t pos, int32_t token, const std::vector<double>& logprobs, int64_t top) {
  char buf[64];
  std::string line = "{\"pos\": " + std::to_string(pos) + ", \"token\": " + std::to_string(token);
  std::snprintf(buf, sizeof(buf), "%.17g", logprobs[static_cast<size_t>(token)]);
  line += ", \"logprob\": ";
  line += buf;
  line += ", \"top\": [";
  // Highest log-prob first; the lower id wins a tie.
  std::vector<int32_t> ids(logprobs.size());
  std::iota(ids.begin(), ids.end(), 0);
  const size_t k = static_cast<size_t>(std::min<int64_t>(top, static_cast<int64_t>(ids.size())));
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
    return logprobs[a] > logprobs[b] || (logprobs[a] == logprobs[b] && a < b);
  });
  for (size_t i = 0; i < k; ++i) {
    std::snprintf(buf, sizeof(buf), "%.17g", logprobs[static_cast<size_t>(ids[i])]);
    line += (i ? ", [" : "[") + std::to_string(ids[i]) + ", " + buf + "]";
  }
  return line + "]}";
}

struct ScoreRequest {
  std::string model_path;
  std::vector<int32_t> tokens;
  int64_t top = 5;
  int64_t threads = 0;
  int64_t chunk = 0;
  KvCacheDType kv_cache_dtype = KvCacheDType::kF32;
};

// Flag values -> request; every error here is a usage error.
StatusOr<ScoreRequest> ParseRequest(const Flags& flags) {
  ScoreRequest r;
  DI_ASSIGN_OR_RETURN(r.model_path, flags.Required("model"));
  DI_ASSIGN_OR_RETURN(std::string token_text, flags.Required("tokens"));
  DI_ASSIGN_OR_RETURN(r.tokens, ParseTokenIds(token_text));
  DI_ASSIGN_OR_RETURN(r.top, flags.GetInt("top", 5));
  DI_ASSIGN_OR_RETURN(r.threads, flags.GetInt("threads", 0));
  DI_ASSIGN_OR_RETURN(r.chunk, flags.GetInt("chunk", static_cast<int64_t>(r.tokens.size())));
  DI_ASSIGN_OR_RETURN(r.kv_cache_dtype, ParseKvCacheDType(flags.GetString("kv-cache-dtype", "f32")));
  if (r.top < 0) {
    return InvalidArgument("--top must be >= 0, got " + std::to_string(r.top));
  }
  if (r.threads < 0 || r.threads > 1024) {
    return InvalidArgument("--threads must be in [0, 1024], got " + std::to_string(r.threads));
  }
  if (r.chunk <= 0) {
    return InvalidArgument("--chunk must be positive, got " + std::to_string(r.chunk));
  }
  return r;
}

Status CheckTokenRange(const std::vector<int32_t>& tokens, int64_t vocab) {
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= vocab) {
      return InvalidArgument("--tokens: id " + std::to_string(tokens[i]) + " (item " + std::to_string(i) +
                             ") is out of range [0, " + std::to_string(vocab) + ") for this model");
    }
  }
  return Status::Ok();
}

// All logit rows f32 [n, vocab] of the sequence, prefilled in chunks.
StatusOr<std::vector<float>> ComputeLogits(Model& model, const ScoreRequest& r) {
  const int64_t n = static_cast<int64_t>(r.tokens.size());
  const int64_t vocab = model.config().vocab_size;
  if (n > model.config().max_position) {
    DI_LOG_WARN("%lld tokens exceed the model's max_position %lld", static_cast<long long>(n),
                static_cast<long long>(model.config().max_position));
  }
  constexpr int64_t kBlockSize = 16;
  const int64_t n_blocks = (n + kBlockSize - 1) / kBlockSize;
  const DType kv_dtype = ResolveKvCacheDType(r.kv_cache_dtype);
  DI_RETURN_IF_ERROR(KvCache::CheckDType(model.config(), kv_dtype));
  KvCache kv(model.config(), n_blocks, kBlockSize, kv_dtype);
  std::vector<int32_t> table(static_cast<size_t>(n_blocks));
  std::iota(table.begin(), table.end(), 0);
  std::vector<float> logits(static_cast<size_t>(n * vocab));
  for (int64_t start = 0; start < n; start += r.chunk) {
    const int64_t end = std::min(n, start + r.chunk);
    ForwardBatch batch;
    SequenceChunk seq;
    seq.tokens.assign(r.tokens.begin() + start, r.tokens.begin() + end);
    seq.start_pos = start;
    seq.block_table = table;
    seq.logits = SequenceChunk::Logits::kAll;
    batch.seqs.push_back(std::move(seq));
    DI_RETURN_IF_ERROR(model.Forward(batch, kv, logits.data() + start * vocab));
  }
  return logits;
}

StatusOr<std::string> FormatScores(const ScoreRequest& r, const std::vector<float>& logits, int64_t vocab) {
  std::string out;
  const int64_t n = static_cast<int64_t>(r.tokens.size());
  for (int64_t i = 0; i + 1 < n; ++i) {
    const float* row = logits.data() + i * vocab;
    for (int64_t v = 0; v < vocab; ++v) {
      if (!std::isfinite(row[v])) {
        return DataLoss(r.model_path + ": the model produced a non-finite logit at position " +
                        std::to_string(i) + " (damaged weights?)");
      }
    }
    out += FormatLine(i, r.tokens[i + 1], LogSoftmax(row, vocab), r.top);
    out += '\n';
  }
  return out;
}

}  // namespace

int RunScore(const Args& args) {
  // Exit 2 for usage errors (flags, token ids), 1 for everything else.
  Flags flags(ScoreFlags(), "model");
  int code = 0;
  if (!ParseOrExit(&flags, args, "score", kUsageLine, kSummary, &code)) return code;
  StatusOr<ScoreRequest> request = ParseRequest(flags);
  if (!request.ok()) {
    return Fail("score", request.status().message(), 2);
  }

  LoadOptions options;
  options.num_threads = static_cast<int>(request->threads);
  options.load_tokenizer = false;  // ids in, log-probs out
  StatusOr<LoadedModel> loaded = LoadModel(request->model_path, options);
  if (!loaded.ok()) {
    return Fail("score", loaded.status().message());
  }
  Model& model = *loaded->model;
  const int64_t vocab = model.config().vocab_size;
  if (Status s = CheckTokenRange(request->tokens, vocab); !s.ok()) {
    return Fail("score", s.message(), 2);
  }

  StatusOr<std::vector<float>> logits = ComputeLogits(model, *request);
  if (!logits.ok()) {
    return Fail("score", logits.status().message());
  }
  StatusOr<std::string> text = FormatScores(*request, *logits, vocab);
  if (!text.ok()) {
    return Fail("score", text.status().message());
  }
  std::fwrite(text->data(), 1, text->size(), stdout);
  return 0;
}

}  // namespace deepinfer::tools
