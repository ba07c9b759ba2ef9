// deepinfer synth: writes a random-weight model (see src/synth/synth.h).
#include <cstdio>
#include <utility>

#include "synth/synth.h"
#include "tools/commands.h"
#include "tools/flags.h"

namespace deepinfer::tools {
namespace {

constexpr const char* kUsageLine = "usage: deepinfer synth --out PATH [flags]";
constexpr const char* kSummary =
    "Writes a random-weight model of a named shape. gguf: PATH is the .gguf file (q8_0/q4_0 apply to\n"
    "2-D weights; norms stay f32). hf: PATH is a directory (config.json, model.safetensors, tokenizer\n"
    "files); f32, f16 and bf16 only.";

std::vector<FlagSpec> SynthFlags() {
  return {{"arch", "ARCH", "llama|mistral|qwen2|qwen3|mixtral|qwen2_moe|qwen3_moe|deepseek_v2|deepseek_v3",
           "llama"},
          {"preset", "NAME",
           "tiny|tiny-rope-llama3|tiny-hybrid-swa|swa-bench|llama-110m|tinyllama-1.1b|v2-lite|v3-mini|"
           "qwen3-moe-a3b",

           "tiny"},
          {"max-position", "N", "context length (max_position_embeddings)", "the preset's"},
          {"sliding-window", "W", "window of the sliding layers (every layer slides if the preset has none)",
           "the preset's"},
          {"mtp-layers", "N", "MTP (next-n) layers after the decoder stack, DeepSeek-V3 layout (0..4)",
           "1 for deepseek_v3, else 0"},
          {"dtype", "f32|f16|bf16|q8_0|q4_0", "weight type", "f32"},
          {"seed", "S", "seed of the random weights", "0"},
          {"out", "PATH", "where to write the model", kRequired},
          {"format", "gguf|hf", "file format", "gguf"},
          {"tokenizer", "DIR",
           "a folder with an HF tokenizer.json[.gz] (+ tokenizer_config.json): the model gets its "
           "vocabulary size, tokenizer and chat template",
           "a synthetic tokenizer"}};
}

}  // namespace

int RunSynth(const Args& args) {
  Flags flags(SynthFlags());
  int code = 0;
  if (!ParseOrExit(&flags, args, "synth", kUsageLine, kSummary, &code)) return code;
  SynthOptions o;
  o.arch = flags.GetString("arch", "llama");
  o.preset = flags.GetString("preset", "tiny");
  const std::string dtype = flags.GetString("dtype", "f32");
  const auto dt = DTypeFromName(dtype);
  if (!dt) return Fail("synth", "--dtype: unknown dtype '" + dtype + "' (f32, f16, bf16, q8_0, q4_0)", 2);
  o.dtype = *dt;
  auto seed = flags.GetInt("seed", 0);
  if (!seed.ok()) return Fail("synth", seed.status().message(), 2);
  if (*seed < 0) return Fail("synth", "--seed must be >= 0", 2);
  o.seed = static_cast<uint64_t>(*seed);
  auto out = flags.Required("out");
  if (!out.ok()) return Fail("synth", out.status().message(), 2);
  o.out = *out;
  const std::string format = flags.GetString("format", "gguf");
  if (format == "gguf") {
    o.format = SynthFormat::kGguf;
  } else if (format == "hf") {
    o.format = SynthFormat::kHf;
  } else {
    return Fail("synth", "--format: unknown format '" + format + "' (gguf, hf)", 2);
  }
  o.tokenizer_dir = flags.GetString("tokenizer", "");
  if (flags.Has("mtp-layers")) {
    auto v = flags.GetInt("mtp-layers", 0);
    if (!v.ok()) return Fail("synth", v.status().message(), 2);
    if (*v < 0 || *v > 4) return Fail("synth", "--mtp-layers must be in [0, 4]", 2);
    o.mtp_layers = *v;
  }
  for (auto [name, field] : {std::pair<const char*, int64_t*>{"max-position", &o.max_position},
                             std::pair<const char*, int64_t*>{"sliding-window", &o.sliding_window}}) {
    if (!flags.Has(name)) continue;
    auto v = flags.GetInt(name, 0);
    if (!v.ok()) return Fail("synth", v.status().message(), 2);
    if (*v < 1) return Fail("synth", std::string("--") + name + " must be >= 1", 2);
    *field = *v;
  }
  o.progress = o.preset != "tiny" && o.preset != "tiny-rope-llama3";  // big presets take a while
  if (Status st = WriteSynthModel(o); !st.ok()) {
    return Fail("synth", st.message(), st.code() == StatusCode::kInvalidArgument ? 2 : 1);
  }
  std::fprintf(stderr, "synth: wrote %s\n", o.out.c_str());
  return 0;
}

}  // namespace deepinfer::tools
