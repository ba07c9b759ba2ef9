// Test-only stand-ins for the runner, model, sampler and KV tensors, and a
// small engine loop, so that scheduler tests check real outcomes (the tokens
// a request generates) rather than only counts.
//
// FakeModel keeps one token id per KV slot as the "KV content". A step
// performs the plan's block copies, writes every scheduled token into its slot
// (all sequences first, as a batched forward would), then for each sampling
// row reads the sequence's whole context back *through its block table* and
// returns NextToken(context). Any bookkeeping error — a block reused while
// still needed, a missing copy-on-write, a stale prefix hit — changes the
// context and therefore the generated tokens, which the tests compare with
// ReferenceOutput (the same request run alone on a plain token list).
#pragma once

#include <gtest/gtest.h>

#include <future>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <unordered_map>
#include <vector>

#include "scheduler/scheduler.h"

namespace deepinfer::testing {

inline constexpr int32_t kGarbageToken = -2;

// The fake model's greedy "sampler": a hash of the whole context.
// Prompts: from, from + 1, ..., from + n - 1.
inline std::vector<int32_t> Range(int32_t from, int32_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = from + i;
  return v;
}

// A pool of small blocks (4 tokens), so that short prompts span several.
inline KvConfig Kv(int32_t num_blocks, int32_t block_size = 4, bool prefix_cache = true) {
  return KvConfig{.num_blocks = num_blocks, .block_size = block_size, .enable_prefix_cache = prefix_cache};
}

inline int32_t NextToken(std::span<const int32_t> context, int32_t vocab) {
  uint64_t h = 1469598103934665603ULL;
  for (int32_t t : context) h = (h ^ static_cast<uint32_t>(t)) * 1099511628211ULL;
  h ^= h >> 29;
  return static_cast<int32_t>(h % static_cast<uint64_t>(vocab));
}

// What a request generates when run alone.
inline std::vector<int32_t> ReferenceOutput(std::vector<int32_t> tokens, int32_t max_tokens,
                                            const std::vector<int32_t>& stop_ids, int64_t max_model_len,
                                            int32_t vocab) {
  std::vector<int32_t> out;
  while (true) {
    int32_t t = NextToken(tokens, vocab);
    tokens.push_back(t);
    out.push_back(t);
    if (std::find(stop_ids.begin(), stop_ids.end(), t) != stop_ids.end()) break;
    if (static_cast<int32_t>(out.size()) >= max_tokens) break;
    if (static_cast<int64_t>(tokens.size()) >= max_model_len) break;
  }
  return out;
}

class FakeModel {
 public:
  FakeModel(int32_t num_blocks, int32_t block_size, int32_t vocab)
      : block_size_(block_size),
        vocab_(vocab),
        kv_(static_cast<size_t>(num_blocks),
            std::vector<int32_t>(static_cast<size_t>(block_size), kGarbageToken)) {}

  int32_t vocab() const { return vocab_; }

  // Executes a launched plan. Placeholders left for the runner are replaced by
  // the last token this model sampled for the request (as a device-side
  // runner would). Verification of drafts is greedy.
  StepOutput Execute(StepPlan plan) {
    for (ScheduledSequence& s : plan.seqs) {
      for (int32_t& t : s.tokens) {
        if (t == kPlaceholderToken) {
          EXPECT_TRUE(last_sampled_.count(s.request_id)) << "placeholder without a previous sample";
          t = last_sampled_[s.request_id];
        }
      }
    }
    for (const BlockCopy& c : plan.block_copies) kv_[c.dst] = kv_[c.src];
    for (const ScheduledSequence& seq : plan.seqs) {
      EXPECT_GE(static_cast<int64_t>(seq.block_table.size()) * block_size_,
                seq.start_pos + static_cast<int64_t>(seq.tokens.size()));
      for (size_t j = 0; j < seq.tokens.size(); ++j) {
        Slot(seq, seq.start_pos + static_cast<int64_t>(j)) = seq.tokens[j];
      }
    }
    StepOutput out;
    out.step_id = plan.step_id;
    for (const ScheduledSequence& seq : plan.seqs) {
      if (!seq.samples) continue;
      const int64_t n = static_cast<int64_t>(seq.tokens.size());
      std::vector<int32_t> context;
      for (int64_t p = 0; p < seq.start_pos; ++p) context.push_back(Slot(seq, p));
      SequenceOutput so;
      so.request_id = seq.request_id;
      // Rows (as the runner's ToForwardBatch asks for logits): only the last
      // for a plain decode; all when verifying drafts, stopping at the first
      // rejected draft.
      const int64_t first_row = seq.num_draft_tokens > 0 ? 0 : n - 1;
      for (int64_t row = 0; row < n; ++row) {
        context.push_back(Slot(seq, seq.start_pos + row));
        if (row < first_row) continue;
        int32_t predicted = NextToken(context, vocab_);
        so.tokens.push_back(predicted);
        if (row + 1 < n && seq.tokens[row + 1] != predicted) break;
      }
      last_sampled_[so.request_id] = so.tokens.back();
      out.seqs.push_back(std::move(so));
    }
    return out;
  }

 private:
  int32_t& Slot(const ScheduledSequence& seq, int64_t pos) {
    BlockId b = seq.block_table.at(static_cast<size_t>(pos / block_size_));
    return kv_.at(static_cast<size_t>(b)).at(static_cast<size_t>(pos % block_size_));
  }

  int32_t block_size_;
  int32_t vocab_;
  std::vector<std::vector<int32_t>> kv_;  // [block][slot] -> token written there
  std::unordered_map<RequestId, int32_t> last_sampled_;
};

enum class LoopMode {
  kSync,              // plan, launch, execute, commit
  kAsync,             // plan N+1 while N executes on another thread; resolve placeholders at launch
  kAsyncEarlyLaunch,  // launch N+1 before committing N; the runner resolves placeholders
};

// A minimal engine loop over Scheduler + FakeModel, checking plan limits and
// scheduler invariants at every step.
class TestEngine {
 public:
  TestEngine(Scheduler* scheduler, FakeModel* model, LoopMode mode)
      : sched_(scheduler), model_(model), mode_(mode) {}

  std::map<RequestId, Request>& finished() { return finished_; }
  int64_t iterations() const { return iterations_; }
  // Called after every commit, e.g. to propose drafts.
  std::function<void(Scheduler&)> after_commit;

  void Abort(RequestId id) {
    auto r = sched_->Abort(id);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    finished_.emplace(id, std::move(*r));
  }

  bool Idle() const { return !sched_->HasUnfinishedRequests() && in_flight_.empty(); }

  // One turn of the loop.
  void Iterate() {
    ++iterations_;
    StepPlan next = sched_->PlanStep();
    CheckPlan(next);
    sched_->CheckInvariants();
    switch (mode_) {
      case LoopMode::kSync:
        ASSERT_TRUE(sched_->PrepareLaunch(&next).ok());
        if (!next.empty()) {
          ++launches_;
          Commit(model_->Execute(std::move(next)));
        }
        break;
      case LoopMode::kAsync:
        if (!in_flight_.empty()) {  // step N ran on the executor thread while N+1 was planned
          StepOutput out = running_.get();
          in_flight_.clear();
          Commit(out);
        }
        {
          Status s = sched_->PrepareLaunch(&next);
          ASSERT_TRUE(s.ok()) << s.ToString();
        }
        if (!next.empty()) {
          ++launches_;
          in_flight_.push_back(next.step_id);
          running_ = std::async(std::launch::async, [model = model_, plan = std::move(next)]() mutable {
            return model->Execute(std::move(plan));
          });
        }
        break;
      case LoopMode::kAsyncEarlyLaunch:
        ASSERT_TRUE(sched_->PrepareLaunch(&next, Scheduler::Placeholders::kLeaveForRunner).ok());
        const bool nothing_new = next.empty();
        if (!nothing_new) {
          ++launches_;
          launched_.push_back(std::move(next));
        }
        // Step N completes (and is committed) only after N+1 was launched.
        if (launched_.size() >= 2 || (nothing_new && !launched_.empty())) {
          StepPlan oldest = std::move(launched_.front());
          launched_.erase(launched_.begin());
          Commit(model_->Execute(std::move(oldest)));
        }
        break;
    }
    sched_->CheckInvariants();
  }

  // Runs until every request finished; fails on a stall.
  void RunUntilIdle(int64_t max_iterations = 100000) {
    int64_t idle_turns = 0;
    while (!Idle() || !launched_.empty()) {
      int64_t before = launches_;
      Iterate();
      if (::testing::Test::HasFatalFailure()) return;
      idle_turns = launches_ == before ? idle_turns + 1 : 0;
      ASSERT_LT(idle_turns, 5) << "scheduler stalled with unfinished requests";
      ASSERT_LT(iterations_, max_iterations);
    }
  }

 private:
  void CheckPlan(const StepPlan& plan) {
    const SchedulerConfig& c = sched_->config();
    EXPECT_LE(plan.NumTokens(), c.max_num_batched_tokens);
    EXPECT_LE(static_cast<int64_t>(plan.seqs.size()), c.max_num_seqs);
    for (const ScheduledSequence& s : plan.seqs) {
      EXPECT_FALSE(s.tokens.empty());
      EXPECT_EQ(static_cast<int64_t>(s.block_table.size()),
                (s.start_pos + static_cast<int64_t>(s.tokens.size()) + sched_->kv().block_size() - 1) /
                    sched_->kv().block_size());
    }
  }

  void Commit(const StepOutput& out) {
    auto result = sched_->OnStepSampled(out);
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    for (Request& r : result->finished) {
      RequestId id = r.id;
      finished_.emplace(id, std::move(r));
    }
    discarded_total += static_cast<int64_t>(result->discarded.size());
    if (after_commit) after_commit(*sched_);
  }

  Scheduler* sched_;
  FakeModel* model_;
  LoopMode mode_;
  std::vector<uint64_t> in_flight_;
  std::future<StepOutput> running_;
  std::vector<StepPlan> launched_;
  std::map<RequestId, Request> finished_;
  int64_t iterations_ = 0;
  int64_t launches_ = 0;

 public:
  int64_t discarded_total = 0;
};

}  // namespace deepinfer::testing
