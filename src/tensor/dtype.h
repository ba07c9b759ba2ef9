// Element types of weights and activations, including GGML's block-quantized
// formats. A quantized type packs `BlockElems(t)` consecutive elements of a
// row into `BlockBytes(t)` bytes; rows are always a whole number of blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace deepinfer {

enum class DType : uint8_t {
  kF32,
  kF16,
  kBF16,
  kQ8_0,  // 32 elems: f16 scale + 32 x int8
  kQ4_0,  // 32 elems: f16 scale + 16 bytes of 4-bit (offset 8)
  kQ4_K,  // 256 elems super-block (GGML k-quant)
  kQ6_K,  // 256 elems super-block (GGML k-quant)
  kQ5_K,  // 256 elems super-block (GGML k-quant)
  kQ3_K,  // 256 elems super-block (GGML k-quant)
  kQ2_K,  // 256 elems super-block (GGML k-quant)
  kI32,
  kI64,
  kI8,
  kU8,
};

const char* DTypeName(DType t);                          // "f32", "q8_0", ...
std::optional<DType> DTypeFromName(std::string_view s);  // inverse of DTypeName
int64_t BlockElems(DType t);                             // 1 for plain types
int64_t BlockBytes(DType t);                             // bytes of one block
bool IsQuantized(DType t);

// Bytes of a row of `n` elements; n must be a multiple of BlockElems(t)
// (returns -1 when it is not, when n < 0, or when the size overflows int64,
// so callers can report a clear error).
int64_t RowBytes(DType t, int64_t n);

// GGML type ids (ggml.h's enum ggml_type) <-> DType, for GGUF files.
// DTypeFromGgmlType: nullopt for ids this engine does not read (Q5_0, IQ*...).
// GgmlTypeFromDType: kNoGgmlType for U8, which GGUF cannot store.
inline constexpr uint32_t kNoGgmlType = 0xffffffffu;
std::optional<DType> DTypeFromGgmlType(uint32_t ggml_type);
uint32_t GgmlTypeFromDType(DType t);

}  // namespace deepinfer
