// deepinfer generate: one prompt in, its completion out on stdout.
//
// The prompt is prefilled in chunks (bounded scratch memory), then tokens are
// decoded one at a time with the sampler; text streams to stdout through the
// incremental detokenizer, so a multi-byte character split across tokens is
// never printed half-way. Diagnostics go to stderr.
//
// Structured output (--json-schema/--json-object/--regex/--grammar/--choice,
// see tools/structured_flags.h): before each sampled token the constraint's
// mask sets disallowed logits to -inf; when the constraint admits exactly one
// continuation its tokens are appended without sampling (jump-forward, one
// forward pass for all of them); EOS is allowed only where the output may
// end, and generation stops as soon as nothing but EOS may follow.
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "core/log.h"
#include "model/model.h"
#include "sampling/sampler.h"
#include "sampling/token_constraint.h"
#include "structured/tokenizer_vocabulary.h"
#include "tokenizer/tokenizer.h"
#include "tools/commands.h"
#include "tools/flags.h"
#include "tools/structured_flags.h"

namespace deepinfer::tools {
namespace {

constexpr const char* kUsage =
    "usage: deepinfer generate --model PATH (--prompt TEXT | --prompt-file F) [--max-tokens N]\n"
    "         [--temperature T] [--top-k K] [--top-p P] [--min-p P] [--seed S] [--threads N]\n"
    "         [--prefill-chunk N] [--ignore-eos] [--verbose]\n"
    "         [--json-schema F|JSON | --json-object | --regex R | --grammar F | --choice A,B]\n"
    "         [--any-whitespace]\n";

constexpr int64_t kBlockSize = 16;

struct GenerateOptions {
  std::string model_path;
  std::string prompt;
  int64_t max_tokens = 128;
  int64_t prefill_chunk = 512;
  int threads = 0;
  bool ignore_eos = false;
  bool verbose = false;
  SamplingParams sampling;
  bool constrained = false;
  StructuredOutputSpec structured;
};

StatusOr<GenerateOptions> ParseOptions(const Args& args) {
  std::set<std::string> value_flags = {"model", "prompt", "prompt-file", "max-tokens", "temperature", "top-k",
                                       "top-p", "min-p", "seed", "threads", "prefill-chunk"};
  std::set<std::string> bool_flags = {"ignore-eos", "verbose", "help"};
  value_flags.insert(StructuredValueFlags().begin(), StructuredValueFlags().end());
  bool_flags.insert(StructuredBoolFlags().begin(), StructuredBoolFlags().end());
  Flags flags(value_flags, bool_flags);
  DI_RETURN_IF_ERROR(flags.Parse(args));
  if (flags.Has("help")) return InvalidArgument(kUsage);
  GenerateOptions o;
  DI_ASSIGN_OR_RETURN(o.model_path, flags.Required("model"));
  if (flags.Has("prompt") == flags.Has("prompt-file")) {
    return InvalidArgument("give exactly one of --prompt or --prompt-file");
  }
  if (flags.Has("prompt")) {
    o.prompt = flags.GetString("prompt");
  } else {
    std::string path = flags.GetString("prompt-file");
    std::ifstream in(path, std::ios::binary);
    if (!in) return NotFound("cannot read prompt file '" + path + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    o.prompt = ss.str();
  }
  DI_ASSIGN_OR_RETURN(o.max_tokens, flags.GetInt("max-tokens", 128));
  if (o.max_tokens < 0) return InvalidArgument("--max-tokens must be >= 0");
  DI_ASSIGN_OR_RETURN(o.prefill_chunk, flags.GetInt("prefill-chunk", 512));
  if (o.prefill_chunk < 1) return InvalidArgument("--prefill-chunk must be >= 1");
  DI_ASSIGN_OR_RETURN(int64_t threads, flags.GetInt("threads", 0));
  if (threads < 0 || threads > 1024) return InvalidArgument("--threads must be in [0, 1024]");
  o.threads = static_cast<int>(threads);
  DI_ASSIGN_OR_RETURN(o.sampling.temperature, flags.GetDouble("temperature", 1.0));
  DI_ASSIGN_OR_RETURN(o.sampling.top_k, flags.GetInt("top-k", 0));
  DI_ASSIGN_OR_RETURN(o.sampling.top_p, flags.GetDouble("top-p", 1.0));
  DI_ASSIGN_OR_RETURN(o.sampling.min_p, flags.GetDouble("min-p", 0.0));
  if (flags.Has("seed")) {
    DI_ASSIGN_OR_RETURN(int64_t seed, flags.GetInt("seed", 0));
    o.sampling.seed = static_cast<uint64_t>(seed);
  } else {
    o.sampling.seed = std::random_device{}();
  }
  DI_RETURN_IF_ERROR(o.sampling.Validate().WithContext("bad sampling flag"));
  o.ignore_eos = flags.Has("ignore-eos");
  o.verbose = flags.Has("verbose");
  DI_ASSIGN_OR_RETURN(o.structured, ParseStructuredFlags(flags, &o.constrained));
  if (o.constrained && o.ignore_eos) return InvalidArgument("--ignore-eos cannot be combined with a constraint");
  return o;
}

// Runs prefill + decode; streams text to stdout. Returns the number of
// generated tokens.
StatusOr<int64_t> Generate(const GenerateOptions& o, LoadedModel& loaded, TokenConstraint* constraint) {
  Model& model = *loaded.model;
  const Tokenizer& tok = *loaded.tokenizer;
  const ModelConfig& cfg = model.config();

  std::vector<int32_t> prompt = tok.Encode(o.prompt, /*add_special=*/true, /*parse_special=*/true);
  if (prompt.empty()) return InvalidArgument("the prompt encodes to no tokens (and the model adds no BOS)");
  const int64_t context = static_cast<int64_t>(prompt.size()) + o.max_tokens;
  if (static_cast<int64_t>(prompt.size()) >= cfg.max_position) {
    return InvalidArgument("the prompt is " + std::to_string(prompt.size()) +
                           " tokens; the model's context length is " + std::to_string(cfg.max_position));
  }
  const int64_t capacity = std::min(context, cfg.max_position);
  const int64_t num_blocks = (capacity + kBlockSize - 1) / kBlockSize;
  KvCache kv(cfg, num_blocks, kBlockSize);
  std::vector<int32_t> block_table(num_blocks);
  for (int64_t i = 0; i < num_blocks; ++i) block_table[i] = static_cast<int32_t>(i);

  std::vector<float> logits(cfg.vocab_size);
  // Prefill, chunk by chunk; only the last chunk needs logits.
  for (size_t begin = 0; begin < prompt.size(); begin += o.prefill_chunk) {
    size_t end = std::min(prompt.size(), begin + static_cast<size_t>(o.prefill_chunk));
    ForwardBatch batch;
    SequenceChunk chunk;
    chunk.tokens.assign(prompt.begin() + begin, prompt.begin() + end);
    chunk.start_pos = static_cast<int64_t>(begin);
    chunk.block_table = block_table;
    chunk.logits = end == prompt.size() ? SequenceChunk::Logits::kLast : SequenceChunk::Logits::kNone;
    batch.seqs.push_back(std::move(chunk));
    DI_RETURN_IF_ERROR(model.Forward(batch, kv, logits.data()));
  }

  IncrementalDetokenizer detok(tok);
  int64_t pos = static_cast<int64_t>(prompt.size());
  int64_t generated = 0;
  TokenBitmask allowed(static_cast<size_t>(cfg.vocab_size));
  while (generated < o.max_tokens) {
    // Jump-forward: tokens the constraint forces are appended unsampled.
    std::vector<int32_t> step_tokens;
    if (constraint) step_tokens = constraint->ForcedTokens();
    // Finish-soon: with the token budget about to fall short of the shortest
    // valid ending, take that ending's next token (one token of slack).
    const int64_t budget = std::min(o.max_tokens - generated, capacity - pos);
    if (constraint && step_tokens.empty() && budget <= 64 && !constraint->IsComplete()) {
      const std::vector<int32_t> finish = constraint->FinishTokens();
      if (!finish.empty() && static_cast<int64_t>(finish.size()) + 1 >= budget) step_tokens = {finish.front()};
    }
    if (step_tokens.empty()) {
      if (constraint) {
        constraint->FillAllowedMask(&allowed);
        ApplyAllowedMask(allowed, logits.data());
      }
      step_tokens = {SampleToken(logits.data(), cfg.vocab_size, o.sampling, static_cast<uint64_t>(pos))};
    }
    // Never past max-tokens or the context.
    const int64_t room = std::min(o.max_tokens - generated, capacity - pos);
    if (static_cast<int64_t>(step_tokens.size()) > room) step_tokens.resize(static_cast<size_t>(std::max<int64_t>(room, 1)));
    bool end = false;
    for (int32_t next : step_tokens) {
      if (constraint && !constraint->Accept(next)) {
        return Internal("structured output: no token is allowed after " + std::to_string(generated) +
                        " generated tokens");
      }
      if (!o.ignore_eos && tok.IsEndOfGeneration(next)) {
        end = true;
        break;
      }
      ++generated;
      std::string piece = detok.Push(next);
      std::fwrite(piece.data(), 1, piece.size(), stdout);
    }
    std::fflush(stdout);
    if (end || (constraint && constraint->IsComplete())) break;
    if (generated == o.max_tokens || pos + static_cast<int64_t>(step_tokens.size()) >= capacity) break;
    ForwardBatch batch;
    SequenceChunk step;
    step.tokens = step_tokens;
    step.start_pos = pos;
    step.block_table = block_table;
    step.logits = SequenceChunk::Logits::kLast;
    batch.seqs.push_back(std::move(step));
    DI_RETURN_IF_ERROR(model.Forward(batch, kv, logits.data()));
    pos += static_cast<int64_t>(step_tokens.size());
  }
  std::string tail = detok.Flush();
  std::fwrite(tail.data(), 1, tail.size(), stdout);
  std::fflush(stdout);
  if (constraint && !constraint->IsComplete()) {
    TokenBitmask mask(allowed.size());
    constraint->FillAllowedMask(&mask);
    bool may_end = false;
    for (int32_t id = 0; id < cfg.vocab_size && !may_end; ++id) {
      may_end = tok.IsEndOfGeneration(id) && mask.Test(id);
    }
    if (!may_end) DI_LOG_WARN("stopped before the output matched the constraint (raise --max-tokens)");
  }
  if (generated < o.max_tokens && pos + 1 >= capacity) {
    DI_LOG_WARN("stopped at the model's context length (%lld tokens)", static_cast<long long>(cfg.max_position));
  }
  return generated;
}

}  // namespace

int RunGenerate(const Args& args) {
  auto options = ParseOptions(args);
  if (!options.ok()) {
    if (options.status().message() == kUsage) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    return Fail("generate", options.status().message(), 2);
  }
  if (!options->verbose) SetLogLevel(LogLevel::kWarning);
  LoadOptions load;
  load.num_threads = options->threads;
  auto loaded = LoadModel(options->model_path, load);
  if (!loaded.ok()) return Fail("generate", loaded.status().message());
  if (!loaded->tokenizer) {
    return Fail("generate", options->model_path + ": checkpoint has no tokenizer (tokenizer.json); use 'score' with token ids");
  }
  std::unique_ptr<TokenConstraint> constraint;
  if (options->constrained) {
    auto so = StructuredOutputFor(*loaded->tokenizer, loaded->model->config().vocab_size);
    if (!so.ok()) return Fail("generate", so.status().message());
    auto made = (*so)->MakeConstraint(options->structured);
    if (!made.ok()) return Fail("generate", "bad constraint: " + made.status().message(), 2);
    constraint = std::move(*made);
  }
  auto generated = Generate(*options, *loaded, constraint.get());
  if (!generated.ok()) return Fail("generate", generated.status().message());
  return 0;
}

}  // namespace deepinfer::tools
