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
    return AttentionState{base + group * hd, base + group * hd + group, base};
  };
  ParallelForCost(pool, static_cast<int64_t>(items.size()), cost, [&](int64_t b, int64_t e, int) {
    const auto view_of = [&](const WorkItem& w) {
      return KvHeadView(kv, w.kv_head, *block_tables[static_cast<size_t>(w.token)]);
    };
    for (int64_t i = b; i < e; ++i) {
      const WorkItem& w = items[static_cast<size_t>(i)];
      if (i + 1 < e) {  // the next item's first tile loads while this one computes
        const WorkItem& next = items[static_cast<size_t>(i + 1)];
        PrefetchKeys(view_of(next), hd, next.begin, std::min(next.end, next.begin + kAttentionKeyTile));
      }
      const AttentionState s = state_of(i);
      ResetAttentionState(group, hd, s);
      AttentionQuery query{q + w.token * qd + w.kv_head * group * hd, group, hd, p.scale, p.softcap};
      AttendKeys(query, view_of(w), w.begin, w.end, s);
    }
  });
  // Merge each (token, head)'s splits in position order, then normalize.
  const int64_t pairs = n_tokens * p.num_kv_heads;
  ParallelForCost(pool, pairs, static_cast<int64_t>(items.size()) * state_floats,
                  [&](int64_t b, int64_t e, int) {
                    for (int64_t pair = b; pair < e; ++pair) {
                      const int64_t first = first_item[pair], last = first_item[pair + 1];
                      const AttentionState s = state_of(first);
                      for (int64_t i = first + 1; i < last; ++i) {
                        MergeAttentionState(group, hd, s, state_of(i));
                      }
                      const int64_t t = pair / p.num_kv_heads, g = pair % p.num_kv_heads;
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
