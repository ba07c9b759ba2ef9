#include "backend/cpu/paged_attention.h"

#include <algorithm>

#include "backend/cpu/attention_kernel.h"
#include "backend/cpu/isa.h"
#include "backend/cpu/parallel_for.h"

namespace deepinfer::cpu {

namespace {

// The K/V view of one KV head.
PagedKvView KvHeadView(const PagedKvLayer& kv, int64_t kv_head, const std::vector<int32_t>& table) {
  PagedKvView v = kv.head0;
  v.k += kv_head * kv.k_head;
  if (v.v != nullptr) v.v += kv_head * kv.v_head;
  v.block_table = table.data();
  return v;
}

int64_t FirstKey(int64_t pos, int64_t window) {
  return window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0;
}

// Consecutive tokens of one sequence share a work item (and so each K/V
// tile: attention_kernel.h's AttendKeysForTokens) up to this many.
constexpr int64_t kMaxTokensPerItem = 8;

// Tokens [token, token + n_tokens) (consecutive positions of one sequence,
// all with the same first key) against one KV head's keys from `begin` to
// the end of begin's split; `split` is that split's index in each token's
// own list of splits (the same for all of them: their splits start alike).
struct WorkItem {
  int64_t token, n_tokens, kv_head, begin, split;
};

// Per-call plan and partial states, reused across calls of one caller thread.
struct AttentionScratch {
  std::vector<WorkItem> items;
  std::vector<int64_t> first_state;  // [token * kv heads + head]: where the pair's split states start
  std::vector<float> states;
};

int64_t SplitEnd(int64_t key) { return (key / kAttentionSplitKeys + 1) * kAttentionSplitKeys; }

}  // namespace

DType FasterHalfKvDType() {
  // AVX-512 widens either in one or two instructions per 16 values and the
  // two measured equal (docs/kv-cache.md): f16, 3 more mantissa bits. The
  // other levels run the portable kernel, whose bf16 decode is a shift and
  // f16 decode a branchy function (measured slower than f32 there).
  return ActiveIsa() == Isa::kAvx512 ? DType::kF16 : DType::kBF16;
}

void PagedAttention(const float* q, int64_t n_tokens, const int64_t* positions,
                    const std::vector<const std::vector<int32_t>*>& block_tables, const PagedKvLayer& kv,
                    const AttentionShape& p, ThreadPool& pool, float* out) {
  const int64_t hd = p.head_dim, group = p.num_heads / p.num_kv_heads, qd = p.num_heads * hd;
  const int64_t nkv = p.num_kv_heads;
  const int64_t state_floats = group * (hd + 2);  // acc, then max, then sum

  // Plan. Each (token, kv head) pair owns one partial state per key split
  // of its range [lo, hi), cut at multiples of kAttentionSplitKeys, in
  // position order from first_state[pair]. Work items cover one split of a
  // run of the batch's rows that are consecutive positions of the same
  // sequence (a prefill chunk, a verification's draft rows) with the same
  // first key; a row's cuts and arithmetic are its own either way, so this
  // grouping never changes a bit of its output.
  // Named references: the pool's workers must see the caller's scratch, not
  // their own thread_local instance.
  thread_local AttentionScratch scratch;
  std::vector<WorkItem>& items = scratch.items;
  std::vector<int64_t>& first_state = scratch.first_state;
  std::vector<float>& states = scratch.states;
  items.clear();
  first_state.clear();
  int64_t cost = 0, n_states = 0;
  for (int64_t t = 0; t < n_tokens; ++t) {
    const int64_t lo = FirstKey(positions[t], p.window), hi = positions[t] + 1;
    const int64_t splits = (hi - 1) / kAttentionSplitKeys - lo / kAttentionSplitKeys + 1;
    for (int64_t g = 0; g < nkv; ++g, n_states += splits) first_state.push_back(n_states);
    cost += (hi - lo) * qd * 2;
  }
  first_state.push_back(n_states);
  for (int64_t t = 0; t < n_tokens;) {
    const int64_t lo = FirstKey(positions[t], p.window);
    int64_t m = 1;
    while (t + m < n_tokens && m < kMaxTokensPerItem && block_tables[t + m] == block_tables[t] &&
           positions[t + m] == positions[t + m - 1] + 1 && FirstKey(positions[t + m], p.window) == lo) {
      ++m;
    }
    const int64_t hi = positions[t + m - 1] + 1;  // the run's last (and largest) range end
    for (int64_t g = 0; g < nkv; ++g) {
      int64_t split = 0;
      for (int64_t b = lo; b < hi; b = SplitEnd(b), ++split) {
        // The run's tokens whose range reaches past b: those at positions >= b.
        const int64_t skip = std::max<int64_t>(0, b - positions[t]);
        items.push_back({t + skip, m - skip, g, b, split});
      }
    }
    t += m;
  }
  states.resize(static_cast<size_t>(n_states * state_floats));

  const auto state_of = [&](int64_t index) {
    float* base = states.data() + index * state_floats;
    return AttentionState{base + group * hd, base + group * hd + group, base};
  };
  ParallelForCost(pool, static_cast<int64_t>(items.size()), cost, [&](int64_t b, int64_t e, int) {
    const auto view_of = [&](const WorkItem& w) {
      return KvHeadView(kv, w.kv_head, *block_tables[static_cast<size_t>(w.token)]);
    };
    // Token t's keys in the split that starts at `begin`.
    const auto key_end = [&](int64_t t, int64_t begin) {
      return std::min(SplitEnd(begin), positions[t] + 1);
    };
    int64_t ends[kMaxTokensPerItem];
    AttentionState item_states[kMaxTokensPerItem];
    for (int64_t i = b; i < e; ++i) {
      const WorkItem& w = items[static_cast<size_t>(i)];
      if (i + 1 < e) {  // the next item's first tile loads while this one computes
        const WorkItem& next = items[static_cast<size_t>(i + 1)];
        // Its keys end with its last (largest) token's.
        const int64_t next_end = key_end(next.token + next.n_tokens - 1, next.begin);
        PrefetchKeys(view_of(next), hd, next.begin, std::min(next_end, next.begin + kAttentionKeyTile));
      }
      for (int64_t k = 0; k < w.n_tokens; ++k) {
        const int64_t t = w.token + k;
        ends[k] = key_end(t, w.begin);
        item_states[k] = state_of(first_state[t * nkv + w.kv_head] + w.split);
        ResetAttentionState(group, hd, item_states[k]);
      }
      const AttentionQuery query{q + w.token * qd + w.kv_head * group * hd, group, hd, p.scale, p.softcap};
      AttendKeysForTokens(query, AttentionTokens{w.n_tokens, qd, ends, item_states}, view_of(w), w.begin);
    }
  });
  // Merge each (token, head)'s splits in position order, then normalize.
  const int64_t pairs = n_tokens * nkv;
  ParallelForCost(pool, pairs, n_states * state_floats, [&](int64_t b, int64_t e, int) {
    for (int64_t pair = b; pair < e; ++pair) {
      const int64_t first = first_state[pair], last = first_state[pair + 1];
      const AttentionState s = state_of(first);
      for (int64_t i = first + 1; i < last; ++i) MergeAttentionState(group, hd, s, state_of(i));
      const int64_t t = pair / nkv, g = pair % nkv;
      FinishAttention(group, hd, s, out + t * qd + g * group * hd);
    }
  });
}

void AttendOneHead(const float* q, int64_t head, int64_t pos, const std::vector<int32_t>& block_table,
                   const PagedKvLayer& kv, const AttentionShape& p, float* out) {
  const int64_t hd = p.head_dim, kv_head = head / (p.num_heads / p.num_kv_heads);
  std::vector<float> state(static_cast<size_t>(2 * (hd + 2)));
  const AttentionState a{state.data() + hd, state.data() + hd + 1, state.data()};
  const AttentionState split{state.data() + 2 * hd + 2, state.data() + 2 * hd + 3, state.data() + hd + 2};
  const PagedKvView view = KvHeadView(kv, kv_head, block_table);
  const AttentionQuery query{q, 1, hd, p.scale, p.softcap};
  // Same splits as PagedAttention, so both give identical results.
  const int64_t lo = FirstKey(pos, p.window), hi = pos + 1;
  ResetAttentionState(1, hd, a);
  for (int64_t b = lo; b < hi;) {
    const int64_t e = std::min(hi, (b / kAttentionSplitKeys + 1) * kAttentionSplitKeys);
    if (b == lo) {
      AttendKeys(query, view, b, e, a);
    } else {
      ResetAttentionState(1, hd, split);
      AttendKeys(query, view, b, e, split);
      MergeAttentionState(1, hd, a, split);
    }
    b = e;
  }
  FinishAttention(1, hd, a, out);
}

}  // namespace deepinfer::cpu
