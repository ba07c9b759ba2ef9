#include <cstring>

#include "core/check.h"
#include "model/model.h"

namespace deepinfer {

// Layout: model.h. A block of one layer is a contiguous block_size * kv_dim
// run of K (block_size * v_dim of V), whatever the number of heads.
KvCache::KvCache(const ModelConfig& config, int64_t num_blocks, int64_t block_size)
    : KvCache(config.num_layers, num_blocks, block_size, config.cache_k_dim(), config.cache_v_dim(),
              config.mla.kv_lora_rank > 0 ? 1 : config.num_kv_heads) {}

KvCache::KvCache(int64_t num_layers, int64_t num_blocks, int64_t block_size, int64_t k_dim, int64_t v_dim,
                 int64_t heads)
    : num_layers_(num_layers),
      num_blocks_(num_blocks),
      block_size_(block_size),
      kv_dim_(k_dim),
      v_dim_(v_dim),
      heads_(heads) {
  DI_CHECK(num_layers_ > 0 && num_blocks_ > 0 && block_size_ > 0 && kv_dim_ > 0 && v_dim_ >= 0);
  DI_CHECK(heads_ > 0 && kv_dim_ % heads_ == 0 && v_dim_ % heads_ == 0);
  k_.assign(static_cast<size_t>(num_layers_ * num_blocks_ * block_size_ * kv_dim_), 0.0f);
  v_.assign(static_cast<size_t>(num_layers_ * num_blocks_ * block_size_ * v_dim_), 0.0f);
}

namespace {
// Start of (layer, block, head, slot) in an array whose rows are `dim`
// floats split into `heads` heads.
inline int64_t Offset(int64_t layer, int64_t block, int64_t slot, int64_t head, int64_t num_blocks,
                      int64_t block_size, int64_t dim, int64_t heads) {
  const int64_t width = dim / heads;
  return (((layer * num_blocks + block) * heads + head) * block_size + slot) * width;
}

// Stores a row of `dim` floats head by head at (layer, block, slot).
void ScatterRow(std::vector<float>& a, int64_t layer, int64_t block, int64_t slot, int64_t num_blocks,
                int64_t block_size, int64_t dim, int64_t heads, const float* row) {
  const int64_t width = dim / heads;
  for (int64_t h = 0; h < heads; ++h) {
    std::memcpy(a.data() + Offset(layer, block, slot, h, num_blocks, block_size, dim, heads), row + h * width,
                sizeof(float) * static_cast<size_t>(width));
  }
}
}  // namespace

float* KvCache::K(int64_t layer, int64_t block, int64_t slot, int64_t head) {
  return k_.data() + Offset(layer, block, slot, head, num_blocks_, block_size_, kv_dim_, heads_);
}
float* KvCache::V(int64_t layer, int64_t block, int64_t slot, int64_t head) {
  return v_.data() + Offset(layer, block, slot, head, num_blocks_, block_size_, v_dim_, heads_);
}
const float* KvCache::K(int64_t layer, int64_t block, int64_t slot, int64_t head) const {
  return k_.data() + Offset(layer, block, slot, head, num_blocks_, block_size_, kv_dim_, heads_);
}
const float* KvCache::V(int64_t layer, int64_t block, int64_t slot, int64_t head) const {
  return v_.data() + Offset(layer, block, slot, head, num_blocks_, block_size_, v_dim_, heads_);
}

void KvCache::WriteK(int64_t layer, int64_t block, int64_t slot, const float* row) {
  ScatterRow(k_, layer, block, slot, num_blocks_, block_size_, kv_dim_, heads_, row);
}
void KvCache::WriteV(int64_t layer, int64_t block, int64_t slot, const float* row) {
  ScatterRow(v_, layer, block, slot, num_blocks_, block_size_, v_dim_, heads_, row);
}

KvCache::HeadStrides KvCache::KStrides() const { return {kv_dim_ / heads_, block_size_ * kv_dim_}; }
KvCache::HeadStrides KvCache::VStrides() const { return {v_dim_ / heads_, block_size_ * v_dim_}; }

int64_t KvCache::BytesPerToken() const {
  return num_layers_ * (kv_dim_ + v_dim_) * static_cast<int64_t>(sizeof(float));
}

}  // namespace deepinfer
