// --kv-cache-dtype: the element type the KV cache is asked to store. Plain
// values, so configuration structs (EngineConfig) can carry the choice
// without the cache itself (model/kv_cache.h).
#pragma once

#include <string_view>

#include "core/status.h"
#include "tensor/dtype.h"

namespace deepinfer {

// What --kv-cache-dtype asks for. kAuto is the 16-bit type the active CPU
// kernels read fastest (ResolveKvCacheDType; docs/kv-cache.md has the
// measurement behind the choice). f32 is the reference: the only type whose
// attention is exact with respect to the model's f32 K/V.
enum class KvCacheDType { kAuto, kF32, kF16, kBF16, kQ8_0 };

// "auto" | "f32" | "f16" | "bf16" | "q8_0"; InvalidArgument naming the
// accepted values for anything else.
StatusOr<KvCacheDType> ParseKvCacheDType(std::string_view name);
const char* KvCacheDTypeName(KvCacheDType t);
// The element type a KvCache is built with: kAuto -> the faster 16-bit type
// at the process's ISA level (call after the backend is configured), the
// others one to one.
DType ResolveKvCacheDType(KvCacheDType t);

}  // namespace deepinfer
