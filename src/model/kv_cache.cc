#include "model/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/check.h"
#include "model/ops.h"
#include "tensor/dequant.h"

namespace deepinfer {

StatusOr<KvCacheDType> ParseKvCacheDType(std::string_view name) {
  for (KvCacheDType t : {KvCacheDType::kAuto, KvCacheDType::kF32, KvCacheDType::kF16, KvCacheDType::kBF16,
                         KvCacheDType::kQ8_0}) {
    if (name == KvCacheDTypeName(t)) return t;
  }
  return InvalidArgument("--kv-cache-dtype: '" + std::string(name) +
                         "' is not one of auto, f32, f16, bf16, q8_0");
}

const char* KvCacheDTypeName(KvCacheDType t) {
  switch (t) {
    case KvCacheDType::kAuto:
      return "auto";
    case KvCacheDType::kF32:
      return "f32";
    case KvCacheDType::kF16:
      return "f16";
    case KvCacheDType::kBF16:
      return "bf16";
    case KvCacheDType::kQ8_0:
      return "q8_0";
  }
  return "?";
}

DType ResolveKvCacheDType(KvCacheDType t) {
  switch (t) {
    case KvCacheDType::kAuto:
      return ops::FasterHalfKvDType();
    case KvCacheDType::kF32:
      return DType::kF32;
    case KvCacheDType::kF16:
      return DType::kF16;
    case KvCacheDType::kBF16:
      return DType::kBF16;
    case KvCacheDType::kQ8_0:
      return DType::kQ8_0;
  }
  return DType::kF32;
}

namespace {
int64_t CacheHeads(const ModelConfig& config) {
  return config.mla.kv_lora_rank > 0 ? 1 : config.num_kv_heads;
}
}  // namespace

Status KvCache::CheckDType(const ModelConfig& config, DType dtype) {
  if (!ops::IsKvCacheDType(dtype)) {
    return InvalidArgument(std::string("--kv-cache-dtype: ") + DTypeName(dtype) +
                           " is not a KV cache type (f32, f16, bf16, q8_0)");
  }
  const int64_t heads = CacheHeads(config);
  for (int64_t width : {config.cache_k_dim() / heads, config.cache_v_dim() / heads}) {
    if (width > 0 && RowBytes(dtype, width) < 0) {
      return InvalidArgument(std::string("--kv-cache-dtype ") + DTypeName(dtype) +
                             " stores rows in blocks of " + std::to_string(BlockElems(dtype)) +
                             " elements, but this model's KV head rows are " + std::to_string(width) +
                             " wide; use f16 or bf16");
    }
  }
  return Status::Ok();
}

// Layout: kv_cache.h. A block of one layer is a contiguous block_size * heads
// rows of K (of V likewise), whatever the number of heads.
KvCache::KvCache(const ModelConfig& config, int64_t num_blocks, int64_t block_size, DType dtype)
    : KvCache(config.num_layers, num_blocks, block_size, config.cache_k_dim(), config.cache_v_dim(),
              CacheHeads(config), dtype) {}

std::unique_ptr<KvCache> KvCache::Pages(const ModelConfig& config, int64_t num_pages, int64_t block_size,
                                        DType dtype) {
  return std::make_unique<KvCache>(1, num_pages, block_size, config.cache_k_dim(), config.cache_v_dim(),
                                   CacheHeads(config), dtype);
}

KvCache::KvCache(int64_t num_layers, int64_t num_blocks, int64_t block_size, int64_t k_dim, int64_t v_dim,
                 int64_t heads, DType dtype)
    : num_layers_(num_layers),
      num_blocks_(num_blocks),
      block_size_(block_size),
      kv_dim_(k_dim),
      v_dim_(v_dim),
      heads_(heads),
      dtype_(dtype) {
  DI_CHECK(num_layers_ > 0 && num_blocks_ > 0 && block_size_ > 0 && kv_dim_ > 0 && v_dim_ >= 0);
  DI_CHECK(heads_ > 0 && kv_dim_ % heads_ == 0 && v_dim_ % heads_ == 0);
  DI_CHECK_MSG(ops::IsKvCacheDType(dtype_), DTypeName(dtype_));
  k_row_bytes_ = RowBytes(dtype_, kv_dim_ / heads_);
  v_row_bytes_ = RowBytes(dtype_, v_dim_ / heads_);
  DI_CHECK_MSG(k_row_bytes_ > 0 && v_row_bytes_ >= 0, "KV head width is not a whole number of dtype blocks");
  // MLA's latent rows (no V) and q8_0's blocks stay rows.
  const bool dim_major = v_dim_ > 0 && !IsQuantized(dtype_);
  k_slot_stride_ = dim_major ? BlockBytes(dtype_) : k_row_bytes_;
  k_dim_stride_ = dim_major ? block_size_ * BlockBytes(dtype_) : 0;
  const int64_t rows = num_layers_ * num_blocks_ * block_size_ * heads_;
  k_.assign(static_cast<size_t>(rows * k_row_bytes_), 0);
  v_.assign(static_cast<size_t>(rows * v_row_bytes_), 0);
}

namespace {
// Byte offset of (layer, block, head, slot) in an array of `row_bytes` per
// head and token, `slot_stride` bytes between a head block's slots.
inline int64_t Offset(int64_t layer, int64_t block, int64_t slot, int64_t head, int64_t num_blocks,
                      int64_t block_size, int64_t heads, int64_t row_bytes, int64_t slot_stride) {
  return ((layer * num_blocks + block) * heads + head) * block_size * row_bytes + slot * slot_stride;
}

// n values of src into a cache row of `dtype` at dst: element d at dst + d *
// dim_stride bytes for a dim-major K (f32 / f16 / bf16), consecutive when
// dim_stride is 0. f16 is converted in place on the backend (the same bits
// as QuantizeRow); the other dtypes by QuantizeRow, scattered for dim-major.
void StoreRow(DType dtype, const float* src, uint8_t* dst, int64_t n, int64_t dim_stride) {
  if (dtype == DType::kF16) {
    ops::F32ToF16Row(src, dst, n, dim_stride == 0 ? 2 : dim_stride);
    return;
  }
  if (dim_stride == 0) {
    DI_CHECK(QuantizeRow(dtype, src, dst, n));
    return;
  }
  const int64_t elem = BlockBytes(dtype);
  uint8_t converted[512 * sizeof(float)];
  for (int64_t d0 = 0; d0 < n; d0 += 512) {
    const int64_t m = std::min<int64_t>(512, n - d0);
    DI_CHECK(QuantizeRow(dtype, src + d0, converted, m));
    for (int64_t d = 0; d < m; ++d) {
      std::memcpy(dst + (d0 + d) * dim_stride, converted + d * elem, static_cast<size_t>(elem));
    }
  }
}
}  // namespace

const uint8_t* KvCache::KRow(int64_t layer, int64_t block, int64_t slot, int64_t head) const {
  return k_.data() +
         Offset(layer, block, slot, head, num_blocks_, block_size_, heads_, k_row_bytes_, k_slot_stride_);
}
const uint8_t* KvCache::VRow(int64_t layer, int64_t block, int64_t slot, int64_t head) const {
  return v_.data() +
         Offset(layer, block, slot, head, num_blocks_, block_size_, heads_, v_row_bytes_, v_row_bytes_);
}

void KvCache::WriteK(int64_t layer, int64_t block, int64_t slot, const float* row) {
  const int64_t width = kv_dim_ / heads_;
  for (int64_t h = 0; h < heads_; ++h) {
    StoreRow(dtype_, row + h * width,
             k_.data() + Offset(layer, block, slot, h, num_blocks_, block_size_, heads_, k_row_bytes_,
                                k_slot_stride_),
             width, k_dim_stride_);
  }
}
void KvCache::WriteV(int64_t layer, int64_t block, int64_t slot, const float* row) {
  const int64_t width = v_dim_ / heads_;
  for (int64_t h = 0; h < heads_; ++h) {
    StoreRow(dtype_, row + h * width,
             v_.data() +
                 Offset(layer, block, slot, h, num_blocks_, block_size_, heads_, v_row_bytes_, v_row_bytes_),
             width, 0);
  }
}

void KvCache::ReadK(int64_t layer, int64_t block, int64_t slot, float* row) const {
  const int64_t width = kv_dim_ / heads_;
  for (int64_t h = 0; h < heads_; ++h) {
    const uint8_t* src = KRow(layer, block, slot, h);
    if (k_dim_stride_ == 0) {
      DequantizeRow(dtype_, src, row + h * width, width);
      continue;
    }
    for (int64_t d = 0; d < width; ++d)
      DequantizeRow(dtype_, src + d * k_dim_stride_, row + h * width + d, 1);
  }
}
void KvCache::ReadV(int64_t layer, int64_t block, int64_t slot, float* row) const {
  const int64_t width = v_dim_ / heads_;
  for (int64_t h = 0; h < heads_; ++h)
    DequantizeRow(dtype_, VRow(layer, block, slot, h), row + h * width, width);
}

void KvCache::CopyBlock(int64_t src, int64_t dst) {
  DI_CHECK(src >= 0 && src < num_blocks_ && dst >= 0 && dst < num_blocks_);
  if (src == dst) return;
  const int64_t k_block = block_size_ * heads_ * k_row_bytes_, v_block = block_size_ * heads_ * v_row_bytes_;
  for (int64_t layer = 0; layer < num_layers_; ++layer) {
    std::memcpy(k_.data() + (layer * num_blocks_ + dst) * k_block,
                k_.data() + (layer * num_blocks_ + src) * k_block, static_cast<size_t>(k_block));
    if (v_block > 0) {
      std::memcpy(v_.data() + (layer * num_blocks_ + dst) * v_block,
                  v_.data() + (layer * num_blocks_ + src) * v_block, static_cast<size_t>(v_block));
    }
  }
}

KvCache::HeadStrides KvCache::KStrides() const {
  return {k_slot_stride_, block_size_ * heads_ * k_row_bytes_};
}
KvCache::HeadStrides KvCache::VStrides() const { return {v_row_bytes_, block_size_ * heads_ * v_row_bytes_}; }

int64_t KvCache::BytesPerToken() const { return num_layers_ * heads_ * (k_row_bytes_ + v_row_bytes_); }

}  // namespace deepinfer
