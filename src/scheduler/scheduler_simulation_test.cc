// Randomized simulation: thousands of steps of random arrivals, lengths,
// shared prefixes, aborts and stop tokens over a tiny KV pool, in every loop
// mode. Invariants are checked at every step (TestEngine); at the end every
// request has finished with exactly the tokens it would generate alone, and
// the pool is fully free.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>

#include "scheduler/scheduler.h"
#include "scheduler/scheduler_test_util.h"

namespace deepinfer {
namespace {

using testing::FakeModel;
using testing::LoopMode;
using testing::ReferenceOutput;
using testing::TestEngine;

constexpr int32_t kVocab = 24;  // token 0 is the stop token: ~1 in 24 per step
constexpr int32_t kStopToken = 0;
constexpr int32_t kBlocks = 20;
constexpr int32_t kBlockSize = 4;
constexpr int64_t kMaxModelLen = 48;

struct SimCase {
  std::string name;
  LoopMode mode = LoopMode::kSync;
  SchedulingPolicy policy = SchedulingPolicy::kFcfs;
  bool prefix_cache = true;
  int32_t spec_tokens = 0;
  bool weak_hash = false;  // force frequent prefix-hash collisions
  uint64_t seed = 1;
};

void PrintTo(const SimCase& c, std::ostream* os) { *os << c.name; }

class SchedulerSimulationTest : public ::testing::TestWithParam<SimCase> {};

TEST_P(SchedulerSimulationTest, InvariantsHoldAndEveryRequestFinishesCorrectly) {
  const SimCase& c = GetParam();
  SchedulerConfig config{.max_num_seqs = 6,
                         .max_num_batched_tokens = 16,
                         .max_model_len = kMaxModelLen,
                         .policy = c.policy,
                         .max_num_speculative_tokens = c.spec_tokens};
  KvConfig kv{.num_blocks = kBlocks, .block_size = kBlockSize, .enable_prefix_cache = c.prefix_cache};
  PrefixCache::HashFn hash = DefaultBlockHash;
  if (c.weak_hash) {
    hash = [](uint64_t parent, std::span<const int32_t> t) {
      return (parent * 31 + static_cast<uint64_t>(t[0])) % 5;
    };
  }
  Scheduler sched(config, kv, hash);
  FakeModel model(kBlocks, kBlockSize, kVocab);
  TestEngine engine(&sched, &model, c.mode);
  std::mt19937_64 rng(c.seed);
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };

  std::vector<std::vector<int32_t>> prefixes;
  for (int64_t len : {4, 8, 11}) {
    std::vector<int32_t> p;
    for (int64_t i = 0; i < len; ++i) p.push_back(static_cast<int32_t>(uniform(1, kVocab - 1)));
    prefixes.push_back(p);
  }
  std::map<RequestId, std::pair<std::vector<int32_t>, int32_t>> submitted;  // prompt, max_tokens
  if (c.spec_tokens > 0) {
    // Draft proposals: the true continuation, corrupted at random.
    engine.after_commit = [&](Scheduler& s) {
      for (const auto& entry : submitted) {
        const Request* r = s.FindRequest(entry.first);
        // (Also while rows are in flight: drafts continue the known tokens, and
        // the scheduler must use them only for a row that starts there.)
        if (r == nullptr || r->state != RequestState::kRunning) continue;
        std::vector<int32_t> context = r->tokens, drafts;
        const int64_t n = uniform(0, 4);
        for (int64_t i = 0; i < n; ++i) {
          int32_t t = testing::NextToken(context, kVocab);
          if (uniform(0, 9) < 3) t = static_cast<int32_t>(uniform(0, kVocab - 1));
          drafts.push_back(t);
          context.push_back(t);
        }
        ASSERT_TRUE(s.SetDraftTokens(entry.first, drafts).ok());
      }
    };
  }

  RequestId next_id = 1;
  constexpr int kArrivalSteps = 3000;
  for (int step = 0; step < kArrivalSteps; ++step) {
    if (uniform(0, 99) < 35) {
      std::vector<int32_t> prompt;
      if (uniform(0, 1) == 0) prompt = prefixes[static_cast<size_t>(uniform(0, 2))];
      const int64_t tail = uniform(1, 16);
      for (int64_t i = 0; i < tail; ++i) prompt.push_back(static_cast<int32_t>(uniform(1, kVocab - 1)));
      const auto max_tokens = static_cast<int32_t>(
          uniform(1, std::min<int64_t>(24, kMaxModelLen - static_cast<int64_t>(prompt.size()))));
      const RequestId id = next_id++;
      submitted[id] = {prompt, max_tokens};
      Status s = sched.AddRequest({.id = id,
                                   .prompt_tokens = prompt,
                                   .max_tokens = max_tokens,
                                   .stop_token_ids = {kStopToken},
                                   .priority = static_cast<int32_t>(uniform(0, 3))});
      ASSERT_TRUE(s.ok()) << s.ToString();
    }
    if (uniform(0, 99) < 3) {  // a client disconnects
      std::vector<RequestId> live;
      for (const auto& entry : submitted) {
        if (sched.FindRequest(entry.first) != nullptr) live.push_back(entry.first);
      }
      if (!live.empty()) {
        ASSERT_NO_FATAL_FAILURE(
            engine.Abort(live[static_cast<size_t>(uniform(0, static_cast<int64_t>(live.size()) - 1))]));
      }
    }
    ASSERT_NO_FATAL_FAILURE(engine.Iterate());
  }
  ASSERT_NO_FATAL_FAILURE(engine.RunUntilIdle());

  int aborted = 0;
  ASSERT_EQ(engine.finished().size(), submitted.size());
  for (const auto& [id, spec] : submitted) {
    const Request& r = engine.finished().at(id);
    std::vector<int32_t> out(r.OutputTokens().begin(), r.OutputTokens().end());
    std::vector<int32_t> ref = ReferenceOutput(spec.first, spec.second, {kStopToken}, kMaxModelLen, kVocab);
    if (r.finish_reason == FinishReason::kAbort) {
      ++aborted;
      ASSERT_LE(out.size(), ref.size()) << "request " << id;
      EXPECT_TRUE(std::equal(out.begin(), out.end(), ref.begin())) << "request " << id;
    } else {
      EXPECT_EQ(out, ref) << "request " << id;
      EXPECT_EQ(r.finish_reason, ref.back() == kStopToken ? FinishReason::kStop : FinishReason::kLength);
    }
  }
  EXPECT_GT(aborted, 0);
  EXPECT_GT(sched.stats().num_preemptions, 0) << "the pool is meant to be too small";
  if (c.prefix_cache) {
    EXPECT_GT(sched.kv().prefix_cache().stats().hit_tokens, 0);
  }
  if (c.spec_tokens > 0) {
    EXPECT_GT(sched.stats().spec_accepted_tokens, 0);
  }
  EXPECT_EQ(sched.kv().pool().num_referenced(), 0);
  EXPECT_EQ(sched.kv().NumAvailableBlocks(), kBlocks);
  EXPECT_EQ(sched.NumStepsInFlight(), 0);
  sched.CheckInvariants();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SchedulerSimulationTest,
    ::testing::Values(
        SimCase{.name = "Sync", .mode = LoopMode::kSync, .seed = 1},
        SimCase{.name = "Async", .mode = LoopMode::kAsync, .seed = 2},
        SimCase{.name = "AsyncEarlyLaunch", .mode = LoopMode::kAsyncEarlyLaunch, .seed = 3},
        SimCase{.name = "SyncPriority", .policy = SchedulingPolicy::kPriority, .seed = 4},
        SimCase{.name = "AsyncPriority",
                .mode = LoopMode::kAsync,
                .policy = SchedulingPolicy::kPriority,
                .seed = 5},
        SimCase{.name = "NoPrefixCache", .mode = LoopMode::kAsync, .prefix_cache = false, .seed = 6},
        SimCase{.name = "SyncSpeculative", .spec_tokens = 3, .seed = 7},
        SimCase{.name = "AsyncSpeculative", .mode = LoopMode::kAsync, .spec_tokens = 3, .seed = 8},
        SimCase{.name = "AsyncEarlyLaunchSpeculative",
                .mode = LoopMode::kAsyncEarlyLaunch,
                .spec_tokens = 3,
                .seed = 10},
        SimCase{.name = "AsyncPrioritySpeculative",
                .mode = LoopMode::kAsync,
                .policy = SchedulingPolicy::kPriority,
                .spec_tokens = 3,
                .seed = 11},
        SimCase{.name = "HashCollisions", .weak_hash = true, .seed = 9}),
    [](const ::testing::TestParamInfo<SimCase>& info) { return info.param.name; });

}  // namespace
}  // namespace deepinfer
