// The ArchitectureSpec entries, one family per file in this folder. Only
// registry.cc reads these names; everything else finds a spec through it.
#pragma once

#include "model/registry.h"

namespace deepinfer::archs {

extern const ArchitectureSpec kLlama, kMistral;                // llama.cc
extern const ArchitectureSpec kQwen2, kQwen3;                  // qwen.cc
extern const ArchitectureSpec kMixtral, kQwen2Moe, kQwen3Moe;  // mixtral_qwen_moe.cc
extern const ArchitectureSpec kDeepseekV2, kDeepseekV3;        // deepseek.cc
extern const ArchitectureSpec kGemma2, kGemma3;                // gemma.cc

}  // namespace deepinfer::archs
