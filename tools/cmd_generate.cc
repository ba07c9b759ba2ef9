// deepinfer generate: one prompt in, its completion out on stdout.
//
// The request decodes through the engine (one request, no prefix cache), so
// sampling, seeds, penalties, structured-output masks, finish-soon and
// jump-forward are the server's (runner/row_sampler.h): the prompt is
// prefilled in --prefill-chunk token steps, then tokens are decoded one per
// step. Text streams to stdout as the engine detokenizes it, so a multi-byte
// character split across tokens is never printed half-way. Diagnostics go to
// stderr.
//
// Structured output (--json-schema/--json-object/--regex/--grammar/--choice,
// see tools/structured_flags.h): EOS is allowed only where the output may
// end; an output cut short by --max-tokens or the context is checked against
// the constraint and a warning says when it does not match.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "core/log.h"
#include "engine/engine.h"
#include "sampling/sampler.h"
#include "sampling/token_constraint.h"
#include "structured/tokenizer_vocabulary.h"
#include "tokenizer/tokenizer.h"
#include "tools/chat_renderer.h"
#include "tools/commands.h"
#include "tools/flags.h"
#include "tools/speculative_flags.h"
#include "tools/structured_flags.h"

namespace deepinfer::tools {
namespace {

constexpr const char* kUsageLine =
    "usage: deepinfer generate [--model] MODEL (--prompt TEXT | --prompt-file F) [flags]";
constexpr const char* kSummary =
    "Generates one completion for a prompt through the engine; prints only the completion on stdout.";

std::vector<FlagSpec> GenerateFlags() {
  std::vector<FlagSpec> f = {
      {"model", "PATH", "the checkpoint: a .gguf file or an HF directory (also the first argument)",
       kRequired},
      {"tokenizer", "PATH", "tokenizer from elsewhere: a .gguf, a tokenizer.json[.gz] or a folder with one",
       "the checkpoint's"},
      {"prompt", "TEXT", "the prompt (or --prompt-file)", ""},
      {"prompt-file", "F", "read the prompt from a file (or --prompt)", ""},
      {"chat", "", "render the prompt as one user message through the chat template", ""},
      {"chat-template", "FILE", "Jinja2 chat template file for --chat",
       "the checkpoint's, else the fallback"},
      {"max-tokens", "N", "most tokens to generate", "128"},
      {"temperature", "T", "sampling temperature; 0 is greedy", "1"},
      {"top-k", "K", "sample among the K most likely tokens; 0: off", "0"},
      {"top-p", "P", "nucleus sampling mass; 1: off", "1"},
      {"min-p", "P", "drop tokens below P x the top probability; 0: off", "0"},
      {"seed", "S", "sampling seed (reproducible output)", "random"},
      {"ignore-eos", "", "keep generating past end-of-generation tokens", ""},
      {"threads", "N", "compute threads", "all CPUs"},
      {"prefill-chunk", "N", "prompt tokens per prefill step", "512"},
      {"kv-cache-dtype", "auto|f32|f16|bf16|q8_0", "element type of the KV cache", "auto"},
      {"verbose", "", "engine diagnostics on stderr", ""},
  };
  AddFlags(&f, StructuredFlagSpecs());
  AddFlags(&f, SpeculativeFlagSpecs());
  return f;
}

constexpr int32_t kBlockSize = 16;

struct GenerateOptions {
  std::string model_path;
  std::string tokenizer_path;  // --tokenizer: a .gguf / tokenizer.json / folder; "" = the checkpoint's
  std::string prompt;
  int64_t max_tokens = 128;
  int64_t prefill_chunk = 512;
  int threads = 0;
  KvCacheDType kv_cache_dtype = KvCacheDType::kAuto;
  bool ignore_eos = false;
  bool verbose = false;
  bool chat = false;               // --chat: the prompt is one user message, rendered by the template
  std::string chat_template_file;  // --chat-template
  SamplingParams sampling;
  bool constrained = false;
  StructuredOutputSpec structured;
  EngineConfig speculation;  // only .speculative and .scheduler.max_num_speculative_tokens are read
};

StatusOr<GenerateOptions> ParseOptions(const Flags& flags) {
  GenerateOptions o;
  DI_ASSIGN_OR_RETURN(o.model_path, flags.Required("model"));
  o.tokenizer_path = flags.GetString("tokenizer");
  o.chat = flags.Has("chat");
  o.chat_template_file = flags.GetString("chat-template");
  if (!o.chat && !o.chat_template_file.empty()) return InvalidArgument("--chat-template needs --chat");
  if (flags.Has("prompt") == flags.Has("prompt-file")) {
    return InvalidArgument("give exactly one of --prompt or --prompt-file");
  }
  if (flags.Has("prompt")) {
    o.prompt = flags.GetString("prompt");
  } else {
    std::string path = flags.GetString("prompt-file");
    // A directory opens as a stream that reads nothing: check the kind first.
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) return NotFound("cannot read prompt file '" + path + "'");
    if (S_ISDIR(st.st_mode)) return InvalidArgument("--prompt-file '" + path + "' is a directory");
    std::ifstream in(path, std::ios::binary);
    if (!in) return NotFound("cannot read prompt file '" + path + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    if (in.bad()) return NotFound("cannot read prompt file '" + path + "'");
    o.prompt = ss.str();
  }
  DI_ASSIGN_OR_RETURN(o.max_tokens, flags.GetInt("max-tokens", 128));
  if (o.max_tokens < 0) return InvalidArgument("--max-tokens must be >= 0");
  DI_ASSIGN_OR_RETURN(o.prefill_chunk, flags.GetInt("prefill-chunk", 512));
  if (o.prefill_chunk < 1) return InvalidArgument("--prefill-chunk must be >= 1");
  DI_ASSIGN_OR_RETURN(int64_t threads, flags.GetInt("threads", 0));
  if (threads < 0 || threads > 1024) return InvalidArgument("--threads must be in [0, 1024]");
  o.threads = static_cast<int>(threads);
  DI_ASSIGN_OR_RETURN(o.kv_cache_dtype, ParseKvCacheDType(flags.GetString("kv-cache-dtype", "auto")));
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
  DI_RETURN_IF_ERROR(ParseSpeculativeFlags(flags, &o.speculation));
  if (o.constrained && o.ignore_eos) {
    return InvalidArgument("--ignore-eos cannot be combined with a constraint");
  }
  return o;
}

// An engine for one request of up to `context` tokens: one sequence, prefill
// steps of `prefill_chunk` tokens, a KV pool of exactly that context.
StatusOr<std::unique_ptr<Engine>> OneRequestEngine(LoadedModel loaded, int64_t context, int64_t prefill_chunk,
                                                   KvCacheDType kv_cache_dtype,
                                                   const EngineConfig& speculation) {
  EngineConfig config;
  config.kv_cache_dtype = kv_cache_dtype;
  const DType kv_dtype = ResolveKvCacheDType(kv_cache_dtype);
  DI_RETURN_IF_ERROR(KvCache::CheckDType(loaded.model->config(), kv_dtype));
  config.speculative = speculation.speculative;
  config.scheduler.max_num_speculative_tokens = speculation.scheduler.max_num_speculative_tokens;
  config.scheduler.max_num_seqs = 1;
  config.scheduler.max_num_batched_tokens = prefill_chunk;
  config.scheduler.max_model_len = context;
  config.enable_prefix_cache = false;
  const int64_t bytes_per_token = KvCache(loaded.model->config(), 1, 1, kv_dtype).BytesPerToken();
  // Engine::Submit wants the sequence's blocks plus a copy-on-write block.
  config.kv_cache_memory_bytes = ((context + kBlockSize - 1) / kBlockSize + 1) * kBlockSize * bytes_per_token;
  config.block_size = kBlockSize;
  return Engine::Create(std::move(loaded), config);
}

// What a finished request left for the caller.
struct Completion {
  std::vector<int32_t> tokens;
  FinishReason finish_reason = FinishReason::kNone;
  std::string error;
};

// True when `tokens` are a complete output of `constraint`: it is complete
// or may end here (an end-of-generation id is allowed next).
bool MatchesConstraint(TokenConstraint& constraint, const std::vector<int32_t>& tokens,
                       const Tokenizer& tok) {
  for (int32_t t : tokens) {
    if (!constraint.Accept(t)) return false;
  }
  if (constraint.IsComplete()) return true;
  TokenBitmask mask(static_cast<size_t>(tok.vocab_size()));
  constraint.FillAllowedMask(&mask);
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    if (tok.IsEndOfGeneration(id) && mask.Test(id)) return true;
  }
  return false;
}

// Runs the prompt through the engine; streams text to stdout. `checker` is a
// second matcher of the request's constraint (null: unconstrained), used only
// to judge an output cut short.
Status Generate(const GenerateOptions& o, LoadedModel loaded, std::unique_ptr<TokenConstraint> constraint,
                TokenConstraint* checker) {
  const Tokenizer& tok = *loaded.tokenizer;
  const int64_t max_position = loaded.model->config().max_position;
  std::vector<int32_t> prompt = o.chat ? EncodeRenderedChat(tok, o.prompt)
                                       : tok.Encode(o.prompt, /*add_special=*/true, /*parse_special=*/true);
  if (prompt.empty()) return InvalidArgument("the prompt encodes to no tokens (and the model adds no BOS)");
  const auto num_prompt = static_cast<int64_t>(prompt.size());
  if (num_prompt >= max_position) {
    return InvalidArgument("the prompt is " + std::to_string(prompt.size()) +
                           " tokens; the model's context length is " + std::to_string(max_position));
  }
  // Never past --max-tokens or the model's context.
  const int64_t budget = std::min(o.max_tokens, max_position - num_prompt);
  Completion done;
  std::unique_ptr<Engine> engine;  // owns the model and `tok` from here on
  if (budget > 0) {
    DI_ASSIGN_OR_RETURN(engine, OneRequestEngine(std::move(loaded), num_prompt + budget, o.prefill_chunk,
                                                 o.kv_cache_dtype, o.speculation));
    GenerationRequest request;
    request.prompt_tokens = std::move(prompt);
    request.sampling = o.sampling;
    request.seed = o.sampling.seed;
    request.max_tokens = static_cast<int32_t>(budget);
    request.ignore_eos = o.ignore_eos;
    request.constraint = std::move(constraint);
    // Events arrive in order on the engine's output thread; Shutdown(drain)
    // returns after the final one, so `done` is complete then.
    auto on_event = [&done](GenerationEvent ev) {
      std::fwrite(ev.text.data(), 1, ev.text.size(), stdout);
      std::fflush(stdout);
      done.tokens.insert(done.tokens.end(), ev.token_ids.begin(), ev.token_ids.end());
      if (ev.finish_reason != FinishReason::kNone) {
        done.finish_reason = ev.finish_reason;
        done.error = std::move(ev.error);
      }
    };
    DI_RETURN_IF_ERROR(engine->Submit(std::move(request), std::move(on_event)).status());
    engine->Shutdown(/*drain=*/true);
  }
  if (!done.error.empty()) return Internal(done.error);
  if (done.finish_reason == FinishReason::kStop) return Status::Ok();  // end of generation: a complete output
  if (checker != nullptr && !MatchesConstraint(*checker, done.tokens, tok)) {
    DI_LOG_WARN("stopped before the output matched the constraint (raise --max-tokens)");
  }
  if (budget < o.max_tokens && static_cast<int64_t>(done.tokens.size()) == budget) {
    DI_LOG_WARN("stopped at the model's context length (%lld tokens)", static_cast<long long>(max_position));
  }
  return Status::Ok();
}

}  // namespace

int RunGenerate(const Args& args) {
  Flags flags(GenerateFlags(), "model");
  int code = 0;
  if (!ParseOrExit(&flags, args, "generate", kUsageLine, kSummary, &code)) return code;
  auto options = ParseOptions(flags);
  if (!options.ok()) return Fail("generate", options.status().message(), 2);
  if (!options->verbose) SetLogLevel(LogLevel::kWarning);
  LoadOptions load;
  load.num_threads = options->threads;
  load.tokenizer_path = options->tokenizer_path;
  auto loaded = LoadModel(options->model_path, load);
  if (!loaded.ok()) return Fail("generate", loaded.status().message());
  if (!loaded->tokenizer) {
    return Fail("generate", options->model_path +
                                ": checkpoint has no tokenizer (tokenizer.json); pass --tokenizer PATH, or "
                                "use 'score' with token ids");
  }
  if (options->chat) {
    auto chat = MakeChatSetup("generate", options->chat_template_file, *loaded);
    if (!chat.ok()) return Fail("generate", chat.status().message());
    std::vector<ChatMessage> messages(1);
    messages[0].role = "user";
    messages[0].content = options->prompt;
    auto rendered = chat->renderer(messages, ChatRenderOptions{});
    if (!rendered.ok()) return Fail("generate", rendered.status().WithContext("chat template").message());
    options->prompt = std::move(*rendered);
  }
  std::unique_ptr<TokenConstraint> constraint, checker;
  if (options->constrained) {
    auto so = StructuredOutputFor(*loaded->tokenizer, loaded->model->config().vocab_size);
    if (!so.ok()) return Fail("generate", so.status().message());
    auto made = (*so)->Make(options->structured);
    if (!made.ok()) return Fail("generate", "bad constraint: " + made.status().message(), 2);
    if (!made->relaxed.empty()) std::fprintf(stderr, "generate: warning: %s\n", made->Warning().c_str());
    constraint = std::move(made->constraint);
    auto second = (*so)->MakeConstraint(options->structured);  // compiled once: a cache hit
    if (!second.ok()) return Fail("generate", second.status().message());
    checker = std::move(*second);
  }
  Status generated = Generate(*options, std::move(*loaded), std::move(constraint), checker.get());
  if (!generated.ok()) return Fail("generate", generated.message());
  return 0;
}

}  // namespace deepinfer::tools
