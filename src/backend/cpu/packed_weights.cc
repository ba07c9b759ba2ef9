#include "backend/cpu/packed_weights.h"

#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "backend/cpu/kernels.h"
#include "core/check.h"
#include "tensor/dequant.h"

namespace deepinfer::cpu {
namespace {

std::shared_mutex& RegistryMutex() {
  static std::shared_mutex mu;
  return mu;
}
std::unordered_map<const void*, PackedLayout>& Registry() {
  static auto* registry = new std::unordered_map<const void*, PackedLayout>();
  return *registry;
}

float LoadF16(const uint8_t* p) { return F16ToF32(static_cast<uint16_t>(p[0] | (p[1] << 8))); }

void PackQ8_0Row(const uint8_t* src, int64_t blocks, int64_t pairs, uint8_t* dst) {
  float* scales = reinterpret_cast<float*>(dst + pairs * 64);
  std::memset(dst, 0x80, static_cast<size_t>(pairs * 64));  // w = 0 partner of an odd last block
  for (int64_t b = 0; b < 2 * pairs; ++b) scales[b] = 0.0f;
  for (int64_t b = 0; b < blocks; ++b, src += 34) {
    scales[b] = LoadF16(src);
    for (int j = 0; j < 32; ++j) dst[b * 32 + j] = src[2 + j] ^ 0x80;
  }
}

// Element j (0..31) of a Q4_0 block as its stored nibble (w + 8).
int Q4_0Nibble(const uint8_t* block, int j) {
  return j < 16 ? block[2 + j] & 0x0f : block[2 + j - 16] >> 4;
}

void PackQ4_0Row(const uint8_t* src, int64_t blocks, int64_t pairs, uint8_t* dst) {
  float* scales = reinterpret_cast<float*>(dst + pairs * 32);
  for (int64_t p = 0; p < pairs; ++p) {
    const uint8_t* a = src + 2 * p * 18;
    const bool has_b = 2 * p + 1 < blocks;
    const uint8_t* b = a + 18;
    scales[2 * p] = LoadF16(a);
    scales[2 * p + 1] = has_b ? LoadF16(b) : 0.0f;
    for (int j = 0; j < 32; ++j) {
      const int hi = has_b ? Q4_0Nibble(b, j) : 8;
      dst[p * 32 + j] = static_cast<uint8_t>(Q4_0Nibble(a, j) | (hi << 4));
    }
  }
}

// Q4_K: the 4-bit values keep their file order (pair j of a super-block is
// its qs[32j..32j+32): low nibbles = sub-block 2j, high = 2j+1); the 6-bit
// scales and minimums are multiplied out to f32 once.
void PackQ4_KRow(const uint8_t* src, int64_t pairs, uint8_t* dst) {
  float* scales = reinterpret_cast<float*>(dst + pairs * 32);
  float* mins = scales + 2 * pairs;
  for (int64_t sb = 0; sb < pairs / 4; ++sb, src += 144) {
    const float d = LoadF16(src), dmin = LoadF16(src + 2);
    std::memcpy(dst + sb * 128, src + 16, 128);
    for (int s = 0; s < 8; ++s) {
      int sc, m;
      Q4KScaleMin(s, src + 4, &sc, &m);
      scales[sb * 8 + s] = d * static_cast<float>(sc);
      mins[sb * 8 + s] = dmin * static_cast<float>(m);
    }
  }
}

}  // namespace

bool PacksType(Isa isa, DType t) {
  return isa == Isa::kAvx512 && (t == DType::kQ8_0 || t == DType::kQ4_0 || t == DType::kQ4_K);
}

PackedLayout PackedLayoutFor(DType t, int64_t rows, int64_t k) {
  PackedLayout layout;
  layout.dtype = t;
  layout.rows = rows;
  layout.k = k;
  const int64_t pairs = (k / 32 + 1) / 2;
  const int64_t value_bytes = t == DType::kQ8_0 ? 64 : 32;
  const int64_t factor_bytes = t == DType::kQ4_K ? 16 : 8;  // f32 scales (+ f32 minimums)
  layout.row_stride = (pairs * (value_bytes + factor_bytes) + 63) / 64 * 64;
  return layout;
}

void PackMatrix(const TensorView& w, const PackedLayout& layout, uint8_t* dst) {
  const int64_t row_bytes = RowBytes(w.dtype, layout.k);
  const int64_t blocks = layout.k / 32, pairs = (blocks + 1) / 2;
  const auto* src = static_cast<const uint8_t*>(w.data);
  for (int64_t r = 0; r < layout.rows; ++r) {
    uint8_t* out = dst + r * layout.row_stride;
    std::memset(out, 0, static_cast<size_t>(layout.row_stride));
    if (w.dtype == DType::kQ8_0) {
      PackQ8_0Row(src + r * row_bytes, blocks, pairs, out);
    } else if (w.dtype == DType::kQ4_0) {
      PackQ4_0Row(src + r * row_bytes, blocks, pairs, out);
    } else {
      DI_CHECK(w.dtype == DType::kQ4_K);
      PackQ4_KRow(src + r * row_bytes, pairs, out);
    }
  }
}

TensorView PackedWeights::Pack(const TensorView& w) {
  if (!PacksType(ActiveIsa(), w.dtype) || w.shape.size() != 2 || RowBytes(w.dtype, w.cols()) <= 0) return w;
  const PackedLayout layout = PackedLayoutFor(w.dtype, w.rows(), w.cols());
  auto buffer = std::make_unique<AlignedBuffer<uint8_t>>();
  buffer->Resize(static_cast<size_t>(layout.rows * layout.row_stride));
  PackMatrix(w, layout, buffer->data());
  TensorView packed = w;
  packed.data = buffer->data();
  packed.nbytes = layout.rows * layout.row_stride;
  {
    std::unique_lock<std::shared_mutex> lock(RegistryMutex());
    Registry()[buffer->data()] = layout;
  }
  packed_bytes_ += packed.nbytes;
  buffers_.push_back(std::move(buffer));
  return packed;
}

PackedWeights::~PackedWeights() {
  std::unique_lock<std::shared_mutex> lock(RegistryMutex());
  for (const auto& b : buffers_) Registry().erase(b->data());
}

std::optional<PackedLayout> FindPackedLayout(const void* data) {
  std::shared_lock<std::shared_mutex> lock(RegistryMutex());
  const auto& registry = Registry();
  if (registry.empty()) return std::nullopt;
  auto it = registry.find(data);
  if (it == registry.end()) return std::nullopt;
  return it->second;
}

}  // namespace deepinfer::cpu
