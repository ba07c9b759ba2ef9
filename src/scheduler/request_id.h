// What the world outside the scheduler knows of a request: its id and why it
// ended. Kept apart from request.h so that the engine's public header
// (engine/engine.h) names these two types without the scheduler's request
// state machine.
#pragma once

#include <cstdint>

namespace deepinfer {

using RequestId = int64_t;

enum class FinishReason : uint8_t { kNone, kStop, kLength, kAbort };

// "stop", "length", "abort" (OpenAI's finish_reason names), "" for kNone.
const char* FinishReasonName(FinishReason reason);

}  // namespace deepinfer
