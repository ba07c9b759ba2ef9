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

Status CheckBatch(const ForwardBatch& batch, int64_t vocab_size, const KvCache& kv, int64_t read_window) {
  const int64_t bs = kv.block_size();
  for (size_t s = 0; s < batch.seqs.size(); ++s) {
    const SequenceChunk& seq = batch.seqs[s];
    const std::string where = "sequence " + std::to_string(s) + ": ";
    if (seq.start_pos < 0) {
      return InvalidArgument(where + "negative start_pos");
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
    if (static_cast<int64_t>(seq.block_table.size()) < needed) {
      return InvalidArgument(where + "block table has " + std::to_string(seq.block_table.size()) +
                             " blocks; positions [0, " + std::to_string(end) + ") need " +
                             std::to_string(needed));
    }
    const int64_t first_read = read_window > 0 ? std::max<int64_t>(0, seq.start_pos - read_window + 1) : 0;
    for (int64_t b = first_read / bs; b < needed; ++b) {
      const int32_t id = seq.block_table[static_cast<size_t>(b)];
      if (id < 0 || id >= kv.num_blocks()) {
        return InvalidArgument(where + "block table entry " + std::to_string(b) + " = " + std::to_string(id) +
                               " is out of range [0, " + std::to_string(kv.num_blocks()) + ")");
      }
    }
  }
  return Status::Ok();
}

}  // namespace deepinfer
