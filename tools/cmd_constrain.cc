// deepinfer constrain: checks a text against a structured-output constraint
// with a model's tokenizer, exactly as generation would see it.
//
// The file is tokenized as a continuation (no BOS, no SentencePiece leading
// space) after its trailing whitespace is dropped (editors, `echo` and
// `json.dump(...) + "\n"` end files with a line break that is no part of the
// instance; --exact keeps every byte), then the matcher walks it token by token, computing the full
// vocabulary mask before every token and once more at the end (where the
// end-of-generation token must be allowed). Prints one JSON line:
//   {"compiled", "error", "relaxed", "accepted", "rejected_at_token",
//    "complete", "compile_ms", "mask_us_p50", "mask_us_p99", "mask_us_max",
//    "tokens"}
// relaxed: the JSON Schema assertions not enforced (best effort, the
// default; also printed to stderr as a warning); with --strict such a
// schema is not compiled and error names each keyword and JSON pointer.
// accepted: every token was allowed and the text may end there (it is in the
// constraint's language); rejected_at_token: the first token index not
// allowed, or `tokens` when all were but the end was not; complete: the
// constraint may end after the tokens walked. compile_ms is the wall time of
// the compile (front end + automaton; the vocabulary trie is built before);
// mask times are thread CPU time per full mask (robust on a loaded machine).
// Exit 0 whether or not the text is accepted; 2 for usage errors, 1 when the
// model or file cannot be read.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <vector>

#include "io/gguf.h"
#include "structured/tokenizer_vocabulary.h"
#include "tokenizer/tokenizer.h"
#include "tools/commands.h"
#include "tools/flags.h"
#include "tools/structured_flags.h"

namespace deepinfer::tools {
namespace {

constexpr const char* kUsageLine =
    "usage: deepinfer constrain --model M (--json-schema F | --json-object | --regex R | --grammar F |\n"
    "         --choice A,B) [--any-whitespace] [--strict] [--exact] --check FILE";
constexpr const char* kSummary =
    "Runs the structured-output engine alone over FILE's tokens and prints one JSON line.\n"
    "M: a GGUF file (checkpoint or vocab-only), an HF directory with tokenizer.json(.gz), or a\n"
    "tokenizer.json(.gz) file. --grammar: GBNF (*.gbnf or text with '::=') or Lark.";

StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return NotFound("no such file or directory '" + path + "'");
  if (S_ISDIR(st.st_mode)) return Tokenizer::FromHfDir(path);
  if (EndsWith(path, ".json") || EndsWith(path, ".json.gz")) return Tokenizer::FromHfFile(path);
  DI_ASSIGN_OR_RETURN(auto gguf, GgufFile::Open(path));
  return Tokenizer::FromGguf(*gguf);
}

// Text the model generates continues a prompt: SentencePiece's leading-space
// prefix belongs to the start of a prompt, not to generated text.
StatusOr<std::vector<int32_t>> EncodeContinuation(const Tokenizer& tok, const std::string& text) {
  if (tok.data().kind == TokenizerKind::kSentencePieceBpe && tok.data().add_space_prefix) {
    TokenizerData data = tok.data();
    data.add_space_prefix = false;
    DI_ASSIGN_OR_RETURN(auto plain, Tokenizer::Create(std::move(data)));
    return plain->Encode(text, /*add_special=*/false, /*parse_special=*/false);
  }
  return tok.Encode(text, /*add_special=*/false, /*parse_special=*/false);
}

double ThreadCpuUs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::llround(q * static_cast<double>(v.size() - 1)));
  return v[std::min(i, v.size() - 1)];
}

}  // namespace

int RunConstrain(const Args& args) {
  std::vector<FlagSpec> specs = {{"model", "M", "where the vocabulary comes from (see above)", kRequired},
                                 {"check", "FILE", "the text to run the constraint over", kRequired},
                                 {"exact", "", "keep FILE's trailing whitespace (dropped by default)", ""}};
  AddFlags(&specs, StructuredFlagSpecs());
  Flags flags(specs);
  int code = 0;
  if (!ParseOrExit(&flags, args, "constrain", kUsageLine, kSummary, &code)) return code;
  if (!flags.Has("model") || !flags.Has("check")) {
    return Fail("constrain", "--model and --check are required (see --help)", 2);
  }
  bool present = false;
  auto spec = ParseStructuredFlags(flags, &present);
  if (!spec.ok()) return Fail("constrain", spec.status().message(), 2);
  if (!present) return Fail("constrain", "give a constraint (see --help)", 2);
  auto text = ReadWholeFile(flags.GetString("check"), "--check file");
  if (!text.ok()) return Fail("constrain", text.status().message(), 2);
  if (!flags.GetBool("exact")) {
    size_t end = text->find_last_not_of(" \t\r\n");
    text->erase(end == std::string::npos ? 0 : end + 1);
  }

  auto tok = LoadTokenizer(flags.GetString("model"));
  if (!tok.ok()) return Fail("constrain", tok.status().message(), 1);
  // No model here: the vocabulary of the tokenizer alone, which is the
  // server's for any model with at least as many logit rows.
  auto so = StructuredOutputFor(**tok, (*tok)->vocab_size());
  if (!so.ok()) return Fail("constrain", so.status().message(), 1);
  auto ids = EncodeContinuation(**tok, *text);
  if (!ids.ok()) return Fail("constrain", ids.status().message(), 1);

  nlohmann::ordered_json out;
  auto t0 = std::chrono::steady_clock::now();
  auto made = (*so)->Make(*spec);
  double compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  out["compiled"] = made.ok();
  out["error"] = made.ok() ? nlohmann::json(nullptr) : nlohmann::json(made.status().ToString());
  // Best effort (no --strict): what the constraint does not enforce.
  nlohmann::json relaxed = nlohmann::json::array();
  if (made.ok()) {
    for (const RelaxedSchemaAssertion& r : made->relaxed) relaxed.push_back(r.keyword + " at " + r.pointer);
    if (!made->relaxed.empty()) std::fprintf(stderr, "constrain: warning: %s\n", made->Warning().c_str());
  }
  out["relaxed"] = relaxed;
  StatusOr<std::unique_ptr<TokenConstraint>> constraint =
      made.ok() ? StatusOr<std::unique_ptr<TokenConstraint>>(std::move(made->constraint))
                : StatusOr<std::unique_ptr<TokenConstraint>>(made.status());
  bool accepted = false, complete = false;
  nlohmann::json rejected_at = nullptr;
  std::vector<double> mask_us;
  if (constraint.ok()) {
    TokenConstraint& c = **constraint;
    TokenBitmask mask(static_cast<size_t>((*so)->vocab_size()));
    const auto vocab = static_cast<int32_t>(mask.size());
    size_t walked = 0;
    for (; walked <= ids->size(); ++walked) {
      double start = ThreadCpuUs();
      c.FillAllowedMask(&mask);
      mask_us.push_back(ThreadCpuUs() - start);
      if (walked == ids->size()) {
        // Complete iff an end-of-generation token is allowed here.
        for (int32_t id = 0; id < vocab && !complete; ++id) {
          complete = (*tok)->IsEndOfGeneration(id) && mask.Test(id);
        }
        break;
      }
      int32_t id = (*ids)[walked];
      bool allowed = id >= 0 && id < vocab && mask.Test(id);
      if (!allowed || !c.Accept(id)) break;
    }
    accepted = walked == ids->size() && complete;
    if (!accepted) rejected_at = walked;
  }
  out["accepted"] = accepted;
  out["rejected_at_token"] = rejected_at;
  out["complete"] = complete;
  out["compile_ms"] = compile_ms;
  out["mask_us_p50"] = Percentile(mask_us, 0.5);
  out["mask_us_p99"] = Percentile(mask_us, 0.99);
  out["mask_us_max"] = mask_us.empty() ? 0.0 : *std::max_element(mask_us.begin(), mask_us.end());
  out["tokens"] = ids->size();
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace deepinfer::tools
