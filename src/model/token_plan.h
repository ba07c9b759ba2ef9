// A ForwardBatch flattened to tokens: ids, positions, owning sequence, and
// which tokens produce logit rows. Shared by the decoder stack and the MTP
// draft.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "model/forward_batch.h"
#include "model/model.h"

namespace deepinfer {

struct TokenPlan {
  std::vector<int32_t> token_ids;   // [T]
  std::vector<int64_t> positions;   // [T]
  std::vector<int32_t> seq_of;      // [T] index into batch.seqs
  std::vector<int64_t> logit_rows;  // [R] token index of each logit row

  int64_t num_tokens() const { return static_cast<int64_t>(token_ids.size()); }
  void Build(const ForwardBatch& batch);
};

// Token ids in [0, vocab), start_pos >= 0, and block tables that cover every
// position a chunk writes, with in-range block ids. InvalidArgument naming
// the sequence otherwise. read_window > 0 when every layer is windowed (the
// largest window): blocks wholly older than any layer reads are not checked.
// A batch with per-layer tables (forward_batch.h) needs `layer_windows` (one
// per KV layer) and a one-layer cache, and each layer's table is checked
// against its own window.
Status CheckBatch(const ForwardBatch& batch, int64_t vocab_size, const KvCache& kv, int64_t read_window = 0,
                  const std::vector<int64_t>* layer_windows = nullptr);

// The block table token t reads and writes in KV layer `layer`: its
// sequence's table for that layer when the batch has per-layer tables.
inline const std::vector<int32_t>& BlockTableOf(const ForwardBatch& batch, const TokenPlan& plan, int64_t t,
                                                int64_t layer) {
  const SequenceChunk& s = batch.seqs[static_cast<size_t>(plan.seq_of[static_cast<size_t>(t)])];
  return s.layer_block_tables.empty() ? s.block_table : s.layer_block_tables[static_cast<size_t>(layer)];
}

// The cache layer that KV layer `layer` is stored in: 0 with per-layer tables
// (the cache is then one layer of pages, and the tables say where).
inline int64_t CacheLayerOf(const ForwardBatch& batch, int64_t layer) {
  return batch.PerLayerTables() ? 0 : layer;
}

}  // namespace deepinfer
