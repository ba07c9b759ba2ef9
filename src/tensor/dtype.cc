#include "tensor/dtype.h"

#include <limits>

namespace deepinfer {
namespace {

// One row per DType, in enum order. ggml_type ids are ggml.h's enum values
// (they are part of the GGUF file format and never change). U8 has no GGML
// counterpart (GGUF cannot store it), marked with kNoGgml.
constexpr uint32_t kNoGgml = 0xffffffffu;

struct DTypeInfo {
  DType type;
  uint32_t ggml_type;
  const char* name;
  int64_t block_elems;
  int64_t block_bytes;
};

constexpr DTypeInfo kInfo[] = {
    {DType::kF32, 0, "f32", 1, 4},
    {DType::kF16, 1, "f16", 1, 2},
    {DType::kBF16, 30, "bf16", 1, 2},
    {DType::kQ8_0, 8, "q8_0", 32, 2 + 32},
    {DType::kQ4_0, 2, "q4_0", 32, 2 + 16},
    // Q4_K: f16 d, f16 dmin, 12 bytes of packed 6-bit scales/mins, 128 bytes of nibbles.
    {DType::kQ4_K, 12, "q4_k", 256, 2 + 2 + 12 + 128},
    // Q6_K: 128 bytes low nibbles, 64 bytes high 2-bit pairs, 16 int8 scales, f16 d.
    {DType::kQ6_K, 14, "q6_k", 256, 128 + 64 + 16 + 2},
    // Q5_K: Q4_K's d, dmin and scales, then 32 bytes of fifth bits, then 128 bytes of nibbles.
    {DType::kQ5_K, 13, "q5_k", 256, 2 + 2 + 12 + 32 + 128},
    // Q3_K: 32 bytes of third bits, 64 bytes of 2-bit pairs, 12 bytes of 6-bit scales, f16 d.
    {DType::kQ3_K, 11, "q3_k", 256, 32 + 64 + 12 + 2},
    // Q2_K: 16 bytes of 4-bit (scale, min), 64 bytes of 2-bit pairs, f16 d, f16 dmin.
    {DType::kQ2_K, 10, "q2_k", 256, 16 + 64 + 2 + 2},
    {DType::kI32, 26, "i32", 1, 4},
    {DType::kI64, 27, "i64", 1, 8},
    {DType::kI8, 24, "i8", 1, 1},
    {DType::kU8, kNoGgml, "u8", 1, 1},
};

const DTypeInfo& Info(DType t) {
  const auto i = static_cast<size_t>(t);
  static_assert(sizeof(kInfo) / sizeof(kInfo[0]) == static_cast<size_t>(DType::kU8) + 1);
  return kInfo[i < std::size(kInfo) ? i : 0];
}

}  // namespace

const char* DTypeName(DType t) { return Info(t).name; }

std::optional<DType> DTypeFromName(std::string_view s) {
  for (const auto& info : kInfo) {
    if (s == info.name) return info.type;
  }
  return std::nullopt;
}

int64_t BlockElems(DType t) { return Info(t).block_elems; }
int64_t BlockBytes(DType t) { return Info(t).block_bytes; }
bool IsQuantized(DType t) { return Info(t).block_elems > 1; }

int64_t RowBytes(DType t, int64_t n) {
  const int64_t be = BlockElems(t), bb = BlockBytes(t);
  if (n < 0 || n % be != 0) return -1;
  const int64_t blocks = n / be;
  if (blocks > std::numeric_limits<int64_t>::max() / bb) return -1;
  return blocks * bb;
}

std::optional<DType> DTypeFromGgmlType(uint32_t ggml_type) {
  if (ggml_type == kNoGgml) return std::nullopt;
  for (const auto& info : kInfo) {
    if (info.ggml_type == ggml_type) return info.type;
  }
  return std::nullopt;
}

uint32_t GgmlTypeFromDType(DType t) { return Info(t).ggml_type; }

}  // namespace deepinfer
