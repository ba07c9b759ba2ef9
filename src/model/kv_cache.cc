#include "core/check.h"
#include "model/model.h"

namespace deepinfer {

// Layout note: K and V are separate f32 arrays indexed
// [layer][block][slot][kv_head][head_dim], so one block of one layer is a
// contiguous block_size * kv_dim run (what a future block copy/swap moves).
KvCache::KvCache(const ModelConfig& config, int64_t num_blocks, int64_t block_size)
    : KvCache(config.num_layers, num_blocks, block_size, config.cache_k_dim(), config.cache_v_dim()) {}

KvCache::KvCache(int64_t num_layers, int64_t num_blocks, int64_t block_size, int64_t k_dim, int64_t v_dim)
    : num_layers_(num_layers), num_blocks_(num_blocks), block_size_(block_size), kv_dim_(k_dim), v_dim_(v_dim) {
  DI_CHECK(num_layers_ > 0 && num_blocks_ > 0 && block_size_ > 0 && kv_dim_ > 0 && v_dim_ >= 0);
  k_.assign(static_cast<size_t>(num_layers_ * num_blocks_ * block_size_ * kv_dim_), 0.0f);
  v_.assign(static_cast<size_t>(num_layers_ * num_blocks_ * block_size_ * v_dim_), 0.0f);
}

namespace {
inline int64_t Offset(int64_t layer, int64_t block, int64_t slot, int64_t num_blocks, int64_t block_size,
                      int64_t kv_dim) {
  return ((layer * num_blocks + block) * block_size + slot) * kv_dim;
}
}  // namespace

float* KvCache::K(int64_t layer, int64_t block, int64_t slot) {
  return k_.data() + Offset(layer, block, slot, num_blocks_, block_size_, kv_dim_);
}
float* KvCache::V(int64_t layer, int64_t block, int64_t slot) {
  return v_.data() + Offset(layer, block, slot, num_blocks_, block_size_, v_dim_);
}
const float* KvCache::K(int64_t layer, int64_t block, int64_t slot) const {
  return k_.data() + Offset(layer, block, slot, num_blocks_, block_size_, kv_dim_);
}
const float* KvCache::V(int64_t layer, int64_t block, int64_t slot) const {
  return v_.data() + Offset(layer, block, slot, num_blocks_, block_size_, v_dim_);
}

int64_t KvCache::BytesPerToken() const {
  return num_layers_ * (kv_dim_ + v_dim_) * static_cast<int64_t>(sizeof(float));
}

}  // namespace deepinfer
