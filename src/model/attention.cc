#include "model/attention.h"

#include <algorithm>

#include "backend/cpu/attention_kernel.h"
#include "model/ops.h"

namespace deepinfer {

namespace {

// The K/V view of one layer and KV head (KvCache's strides).
cpu::PagedKvView KvHeadView(const KvCache& kv, int64_t layer, int64_t kv_head, const std::vector<int32_t>& table) {
  cpu::PagedKvView v;
  v.k = kv.K(layer, 0, 0, kv_head);
  v.v = kv.V(layer, 0, 0, kv_head);
  v.block_table = table.data();
  v.block_size = kv.block_size();
  const KvCache::HeadStrides ks = kv.KStrides(), vs = kv.VStrides();
  v.slot_stride = ks.slot;
  v.block_stride = ks.block;
  v.v_slot_stride = vs.slot;
  v.v_block_stride = vs.block;
  return v;
}

int64_t FirstKey(int64_t pos, int64_t window) { return window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0; }

struct WorkItem {
  int64_t token, kv_head, begin, end;
};

// Per-call plan and partial states, reused across calls of one caller thread.
struct AttentionScratch {
  std::vector<WorkItem> items;
  std::vector<int64_t> first_item;
  std::vector<float> states;
};

}  // namespace

void PagedAttention(const float* q, int64_t n_tokens, const int64_t* positions,
                    const std::vector<const std::vector<int32_t>*>& block_tables, const KvCache& kv,
                    const AttentionParams& p, ThreadPool& pool, float* out) {
  const int64_t hd = p.head_dim, group = p.num_heads / p.num_kv_heads, qd = p.num_heads * hd;
  const int64_t state_floats = group * (hd + 2);  // acc, then max, then sum

  // Plan: items in (token, kv head, split) order; first_item[t * nkv + g] is
  // where a (token, head) pair's splits start.
  // Named references: the pool's workers must see the caller's scratch, not
  // their own thread_local instance.
  thread_local AttentionScratch scratch;
  std::vector<WorkItem>& items = scratch.items;
  std::vector<int64_t>& first_item = scratch.first_item;
  std::vector<float>& states = scratch.states;
  items.clear();
  first_item.clear();
  int64_t cost = 0;
  for (int64_t t = 0; t < n_tokens; ++t) {
    const int64_t lo = FirstKey(positions[t], p.window), hi = positions[t] + 1;
    for (int64_t g = 0; g < p.num_kv_heads; ++g) {
      first_item.push_back(static_cast<int64_t>(items.size()));
      for (int64_t b = lo; b < hi;) {
        const int64_t e = std::min(hi, (b / kAttentionSplitKeys + 1) * kAttentionSplitKeys);
        items.push_back({t, g, b, e});
        b = e;
      }
    }
    cost += (hi - lo) * qd * 2;
  }
  first_item.push_back(static_cast<int64_t>(items.size()));
  states.resize(items.size() * static_cast<size_t>(state_floats));

  const auto state_of = [&](int64_t item) {
    float* base = states.data() + item * state_floats;
    return cpu::AttentionState{base + group * hd, base + group * hd + group, base};
  };
  ops::ParallelForCost(pool, static_cast<int64_t>(items.size()), cost, [&](int64_t b, int64_t e, int) {
    const auto view_of = [&](const WorkItem& w) {
      return KvHeadView(kv, p.layer, w.kv_head, *block_tables[static_cast<size_t>(w.token)]);
    };
    for (int64_t i = b; i < e; ++i) {
      const WorkItem& w = items[static_cast<size_t>(i)];
      if (i + 1 < e) {  // the next item's first tile loads while this one computes
        const WorkItem& next = items[static_cast<size_t>(i + 1)];
        cpu::PrefetchKeys(view_of(next), hd, next.begin, std::min(next.end, next.begin + cpu::kAttentionKeyTile));
      }
      const cpu::AttentionState s = state_of(i);
      cpu::ResetAttentionState(group, hd, s);
      cpu::AttentionQuery query{q + w.token * qd + w.kv_head * group * hd, group, hd, p.scale};
      cpu::AttendKeys(query, view_of(w), w.begin, w.end, s);
    }
  });
  // Merge each (token, head)'s splits in position order, then normalize.
  const int64_t pairs = n_tokens * p.num_kv_heads;
  ops::ParallelForCost(pool, pairs, static_cast<int64_t>(items.size()) * state_floats,
                       [&](int64_t b, int64_t e, int) {
                         for (int64_t pair = b; pair < e; ++pair) {
                           const int64_t first = first_item[pair], last = first_item[pair + 1];
                           const cpu::AttentionState s = state_of(first);
                           for (int64_t i = first + 1; i < last; ++i) cpu::MergeAttentionState(group, hd, s, state_of(i));
                           const int64_t t = pair / p.num_kv_heads, g = pair % p.num_kv_heads;
                           cpu::FinishAttention(group, hd, s, out + t * qd + g * group * hd);
                         }
                       });
}

void AttendOneHead(const float* q, int64_t head, int64_t pos, const std::vector<int32_t>& block_table,
                   const KvCache& kv, const AttentionParams& p, std::vector<float>& scores, float* out) {
  (void)scores;
  const int64_t hd = p.head_dim, kv_head = head / (p.num_heads / p.num_kv_heads);
  std::vector<float> state(static_cast<size_t>(2 * (hd + 2)));
  const cpu::AttentionState a{state.data() + hd, state.data() + hd + 1, state.data()};
  const cpu::AttentionState split{state.data() + 2 * hd + 2, state.data() + 2 * hd + 3, state.data() + hd + 2};
  const cpu::PagedKvView view = KvHeadView(kv, p.layer, kv_head, block_table);
  const cpu::AttentionQuery query{q, 1, hd, p.scale};
  // Same splits as PagedAttention, so both give identical results.
  const int64_t lo = FirstKey(pos, p.window), hi = pos + 1;
  cpu::ResetAttentionState(1, hd, a);
  for (int64_t b = lo; b < hi;) {
    const int64_t e = std::min(hi, (b / kAttentionSplitKeys + 1) * kAttentionSplitKeys);
    if (b == lo) {
      cpu::AttendKeys(query, view, b, e, a);
    } else {
      cpu::ResetAttentionState(1, hd, split);
      cpu::AttendKeys(query, view, b, e, split);
      cpu::MergeAttentionState(1, hd, a, split);
    }
    b = e;
  }
  cpu::FinishAttention(1, hd, a, out);
}

}  // namespace deepinfer
