// Speculative-decoding flags shared by `deepinfer serve` and `deepinfer
// generate` (docs/speculative.md):
//   --speculative-method mtp|ngram|draft
//   --num-speculative-tokens K          (1..16; default 5 when a method is given)
//   --spec-schedule adaptive|fixed      (default adaptive)
//   --draft-model PATH                  (method draft: a small model with the same vocabulary)
//   --spec-sampling identical|rejection (method draft, sampled requests; default identical)
//   --mtp-weights int8|stored           (method mtp: the drafter's matrices; default int8)
// and the seed system's environment switches as aliases:
//   DEEPINFER_ENABLE_MTP_VARLEN=1   = --speculative-method mtp --spec-schedule adaptive
//   DEEPINFER_USE_NEXTN_DECODE=K    caps K.
// Header-only: the CLI globs only cmd_*.cc sources.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/engine.h"
#include "tools/flags.h"

namespace deepinfer::tools {

inline constexpr int64_t kDefaultSpeculativeTokens = 5;
inline constexpr int64_t kMaxSpeculativeTokens = 16;

inline std::vector<FlagSpec> SpeculativeFlagSpecs() {
  return {
      {"speculative-method", "mtp|ngram|draft",
       "speculative decoding: the checkpoint's MTP layers, prompt lookup, or a draft model", "off"},
      {"num-speculative-tokens", "K", "drafts verified per step, 1.." + std::to_string(kMaxSpeculativeTokens),
       std::to_string(kDefaultSpeculativeTokens) + " with a method"},
      {"spec-schedule", "adaptive|fixed", "adaptive: draft length chosen per request and load", "adaptive"},
      {"draft-model", "PATH", "the draft model of --speculative-method draft (same vocabulary)", "none"},
      {"spec-sampling", "identical|rejection",
       "draft-model drafts of sampled requests: identical output to no speculation, or rejection sampling",
       "identical"},
      {"mtp-weights", "int8|stored",
       "method mtp: the drafter's matrices quantized to int8 at load (faster drafts, same output) or as "
       "stored",
       "int8"}};
}

// Fills config->speculative and config->scheduler.max_num_speculative_tokens.
inline Status ParseSpeculativeFlags(const Flags& flags, EngineConfig* config) {
  std::string method = flags.GetString("speculative-method");
  std::string schedule = flags.GetString("spec-schedule", "adaptive");
  const char* varlen = std::getenv("DEEPINFER_ENABLE_MTP_VARLEN");
  if (method.empty() && varlen != nullptr && std::string(varlen) == "1") method = "mtp";
  if (!method.empty() && method != "ngram" && method != "mtp" && method != "draft") {
    return InvalidArgument("--speculative-method must be ngram, mtp or draft (got '" + method + "')");
  }
  const std::string draft_model = flags.GetString("draft-model");
  const std::string spec_sampling = flags.GetString("spec-sampling", "identical");
  if (method == "draft" && draft_model.empty()) {
    return InvalidArgument("--speculative-method draft needs --draft-model PATH");
  }
  if (!draft_model.empty() && method != "draft") {
    return InvalidArgument("--draft-model needs --speculative-method draft");
  }
  if (!draft_model.empty() && !std::filesystem::exists(draft_model)) {
    return InvalidArgument("--draft-model " + draft_model + ": no such file or directory");
  }
  if (spec_sampling != "identical" && spec_sampling != "rejection") {
    return InvalidArgument("--spec-sampling must be identical or rejection (got '" + spec_sampling + "')");
  }
  if (flags.Has("spec-sampling") && method != "draft") {
    return InvalidArgument("--spec-sampling needs --speculative-method draft");
  }
  const std::string mtp_weights = flags.GetString("mtp-weights", "int8");
  if (mtp_weights != "int8" && mtp_weights != "stored") {
    return InvalidArgument("--mtp-weights must be int8 or stored (got '" + mtp_weights + "')");
  }
  if (flags.Has("mtp-weights") && method != "mtp") {
    return InvalidArgument("--mtp-weights needs --speculative-method mtp");
  }
  if (schedule != "adaptive" && schedule != "fixed") {
    return InvalidArgument("--spec-schedule must be adaptive or fixed (got '" + schedule + "')");
  }
  const bool has_k = flags.Has("num-speculative-tokens");
  DI_ASSIGN_OR_RETURN(int64_t k, flags.GetInt("num-speculative-tokens", kDefaultSpeculativeTokens));
  if (const char* cap = std::getenv("DEEPINFER_USE_NEXTN_DECODE"); cap != nullptr && *cap != '\0') {
    char* end = nullptr;
    const long long v = std::strtoll(cap, &end, 10);
    if (*end != '\0' || v < 0 || v > kMaxSpeculativeTokens) {
      return InvalidArgument("DEEPINFER_USE_NEXTN_DECODE must be an integer in [0, " +
                             std::to_string(kMaxSpeculativeTokens) + "]");
    }
    k = std::min<int64_t>(k, v);
  }
  if (!method.empty() && k == 0 && !has_k) return Status::Ok();  // DEEPINFER_USE_NEXTN_DECODE=0: off
  if (method.empty()) {
    if (has_k) return InvalidArgument("--num-speculative-tokens needs --speculative-method");
    if (flags.Has("spec-schedule")) return InvalidArgument("--spec-schedule needs --speculative-method");
    return Status::Ok();
  }
  if (k < 1 || k > kMaxSpeculativeTokens) {
    return InvalidArgument("--num-speculative-tokens must be in [1, " +
                           std::to_string(kMaxSpeculativeTokens) + "]");
  }
  config->speculative.method = method;
  config->speculative.draft_model = draft_model;
  config->speculative.rejection_sampling = spec_sampling == "rejection";
  config->speculative.mtp_int8 = mtp_weights == "int8";
  config->speculative.adaptive = schedule == "adaptive";
  config->scheduler.max_num_speculative_tokens = static_cast<int32_t>(k);
  return Status::Ok();
}

}  // namespace deepinfer::tools
