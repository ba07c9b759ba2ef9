// The shape of one model step: many sequences, each contributing a run of
// consecutive tokens at consecutive positions (a prefill chunk or a decode
// step), flattened into one token batch. This is the contract between the
// scheduler/runner and the model: the model never knows which request a
// sequence belongs to.
//
// KV layout (paged): the cache is a pool of blocks of `block_size` tokens;
// a sequence's block_table lists, in order, the blocks that hold its
// positions 0, 1, ... (position p lives in block_table[p / block_size] at
// slot p % block_size). Before Forward, the caller makes sure the table
// covers positions [0, start_pos + tokens.size()). Forward writes K/V for the
// new tokens, then attends over positions [0, start_pos + n) (or the window).
//
// Per-layer tables (hybrid sliding-window KV, docs/kv-cache.md): when
// layer_block_tables is set (then on every sequence of the batch), the cache
// is one layer of single-layer blocks ("pages") and KV layer l keeps its
// positions in layer_block_tables[l]. A windowed layer's table may hold
// kNoBlock (-1) for blocks wholly older than any of its queries reads.
#pragma once

#include <cstdint>
#include <vector>

namespace deepinfer {

struct SequenceChunk {
  std::vector<int32_t> tokens;       // new tokens, at positions start_pos, start_pos+1, ...
  int64_t start_pos = 0;             // tokens before this chunk are already in the KV cache
  std::vector<int32_t> block_table;  // KV blocks of this sequence, in position order
  // Which of this chunk's rows produce logits: kLast (the usual prefill/decode
  // case), kAll (score, speculative verification), kNone (mid-prompt chunk).
  enum class Logits { kNone, kLast, kAll } logits = Logits::kLast;
  std::vector<std::vector<int32_t>> layer_block_tables;  // per KV layer, instead of block_table
};

struct ForwardBatch {
  std::vector<SequenceChunk> seqs;

  bool PerLayerTables() const { return !seqs.empty() && !seqs.front().layer_block_tables.empty(); }
  int64_t NumTokens() const {
    int64_t n = 0;
    for (const auto& s : seqs) n += static_cast<int64_t>(s.tokens.size());
    return n;
  }
  // Number of logit rows Forward produces, in sequence order then position order.
  int64_t NumLogitRows() const {
    int64_t n = 0;
    for (const auto& s : seqs) {
      if (s.logits == SequenceChunk::Logits::kLast && !s.tokens.empty()) n += 1;
      if (s.logits == SequenceChunk::Logits::kAll) n += static_cast<int64_t>(s.tokens.size());
    }
    return n;
  }
};

}  // namespace deepinfer
