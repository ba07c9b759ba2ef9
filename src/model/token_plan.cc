#include "model/token_plan.h"

#include <algorithm>
#include <string>

namespace deepinfer {

void TokenPlan::Build(const ForwardBatch& batch) {
  token_ids.clear();
  positions.clear();
  seq_of.clear();
  logit_rows.clear();
  for (size_t s = 0; s < batch.seqs.size(); ++s) {
    const SequenceChunk& seq = batch.seqs[s];
    const int64_t first = static_cast<int64_t>(token_ids.size());
    const int64_t n = static_cast<int64_t>(seq.tokens.size());
    for (int64_t i = 0; i < n; ++i) {
      token_ids.push_back(seq.tokens[static_cast<size_t>(i)]);
      positions.push_back(seq.start_pos + i);
      seq_of.push_back(static_cast<int32_t>(s));
    }
    if (seq.logits == SequenceChunk::Logits::kAll) {
      for (int64_t i = 0; i < n; ++i) logit_rows.push_back(first + i);
    } else if (seq.logits == SequenceChunk::Logits::kLast && n > 0) {
      logit_rows.push_back(first + n - 1);
    }
  }
}

namespace {

// Table entries from the block holding first_read up to `needed` must name blocks of the cache.
Status CheckTable(const std::string& where, const std::vector<int32_t>& table, int64_t needed,
                  int64_t first_read, const KvCache& kv) {
  if (static_cast<int64_t>(table.size()) < needed) {
    return InvalidArgument(where + "block table has " + std::to_string(table.size()) +
                           " blocks; the chunk's positions need " + std::to_string(needed));
  }
  for (int64_t b = first_read / kv.block_size(); b < needed; ++b) {
    const int32_t id = table[static_cast<size_t>(b)];
    if (id < 0 || id >= kv.num_blocks()) {
      return InvalidArgument(where + "block table entry " + std::to_string(b) + " = " + std::to_string(id) +
                             " is out of range [0, " + std::to_string(kv.num_blocks()) + ")");
    }
  }
  return Status::Ok();
}

int64_t FirstRead(int64_t start_pos, int64_t window) {
  return window > 0 ? std::max<int64_t>(0, start_pos - window + 1) : 0;
}

}  // namespace

Status CheckBatch(const ForwardBatch& batch, int64_t vocab_size, const KvCache& kv, int64_t read_window,
                  const std::vector<int64_t>* layer_windows) {
  const int64_t bs = kv.block_size();
  const bool per_layer = batch.PerLayerTables();
  if (per_layer && (layer_windows == nullptr || kv.num_layers() != 1)) {
    return InvalidArgument("per-layer block tables need the layer windows and a one-layer (paged) KV cache");
  }
  for (size_t s = 0; s < batch.seqs.size(); ++s) {
    const SequenceChunk& seq = batch.seqs[s];
    const std::string where = "sequence " + std::to_string(s) + ": ";
    if (seq.start_pos < 0) {
      return InvalidArgument(where + "negative start_pos");
    }
    if (seq.layer_block_tables.empty() == per_layer) {
      return InvalidArgument(where + "either every sequence of a batch has per-layer block tables or none");
    }
    for (size_t i = 0; i < seq.tokens.size(); ++i) {
      if (seq.tokens[i] < 0 || seq.tokens[i] >= vocab_size) {
        return InvalidArgument(where + "token id " + std::to_string(seq.tokens[i]) + " at index " +
                               std::to_string(i) + " is out of range [0, " + std::to_string(vocab_size) +
                               ")");
      }
    }
    if (seq.tokens.empty()) {
      continue;
    }
    const int64_t end = seq.start_pos + static_cast<int64_t>(seq.tokens.size());
    const int64_t needed = (end + bs - 1) / bs;
    if (!per_layer) {
      DI_RETURN_IF_ERROR(
          CheckTable(where, seq.block_table, needed, FirstRead(seq.start_pos, read_window), kv));
      continue;
    }
    if (seq.layer_block_tables.size() != layer_windows->size()) {
      return InvalidArgument(where + "has " + std::to_string(seq.layer_block_tables.size()) +
                             " per-layer block tables; the model has " +
                             std::to_string(layer_windows->size()) + " KV layers");
    }
    for (size_t l = 0; l < layer_windows->size(); ++l) {
      DI_RETURN_IF_ERROR(CheckTable(where + "layer " + std::to_string(l) + ": ", seq.layer_block_tables[l],
                                    needed, FirstRead(seq.start_pos, (*layer_windows)[l]), kv));
    }
  }
  return Status::Ok();
}

}  // namespace deepinfer
