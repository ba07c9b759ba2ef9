// Speculative-decoding flags shared by `deepinfer serve` and `deepinfer
// generate` (docs/speculative.md):
//   --speculative-method mtp|ngram      (draft: not implemented yet, a clear error)
//   --num-speculative-tokens K          (1..16; default 5 when a method is given)
//   --spec-schedule adaptive|fixed      (default adaptive)
// and the seed system's environment switches as aliases:
//   DEEPINFER_ENABLE_MTP_VARLEN=1   = --speculative-method mtp --spec-schedule adaptive
//   DEEPINFER_USE_NEXTN_DECODE=K    caps K.
// Header-only: the CLI globs only cmd_*.cc sources.
#pragma once

#include <cstdlib>
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
      {"speculative-method", "mtp|ngram",
       "speculative decoding: the checkpoint's MTP layers or prompt lookup (draft: not yet)", "off"},
      {"num-speculative-tokens", "K", "drafts verified per step, 1.." + std::to_string(kMaxSpeculativeTokens),
       std::to_string(kDefaultSpeculativeTokens) + " with a method"},
      {"spec-schedule", "adaptive|fixed", "adaptive: draft length chosen per request and load", "adaptive"}};
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
  if (method == "draft") {
    return InvalidArgument(
        "--speculative-method draft is not implemented yet; this build drafts with mtp (the checkpoint's "
        "next-n layers) or ngram (prompt lookup)");
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
  config->speculative.adaptive = schedule == "adaptive";
  config->scheduler.max_num_speculative_tokens = static_cast<int32_t>(k);
  return Status::Ok();
}

}  // namespace deepinfer::tools
