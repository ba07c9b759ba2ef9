// DraftModelDrafter keeps its KV across steps: after accepted drafts, a
// rejected one, and a rollback to an earlier position, its proposals equal
// bit for bit those of a fresh drafter given the whole sequence at once (the
// forward pass is invariant to how positions are grouped into chunks). And
// Release returns every block.
#include "runner/draft_model_drafter.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "checkpoint/checkpoint.h"

namespace deepinfer {
namespace {

std::unique_ptr<Model> LoadStories() {
  LoadOptions o;
  o.num_threads = 2;
  o.load_tokenizer = false;
  auto m = LoadModel(std::string(DI_SHARED_DIR) + "/models/gguf/stories260K.gguf", o);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::move(m->model);
}

DraftProposal Propose(DraftModelDrafter& d, int64_t id, const std::vector<int32_t>& sequence,
                      const SamplingParams* sampling = nullptr) {
  DraftInput in;
  in.request_id = id;
  in.start_pos = static_cast<int64_t>(sequence.size()) - 1;
  in.sequence = sequence;
  in.tokens = std::span<const int32_t>(sequence).last(1);
  in.num_computed = 1;
  in.max_tokens = 4;
  in.sampling = sampling;
  in.draw_stream = 0;
  in.num_prompt_tokens = 6;
  std::vector<DraftProposal> out = d.ProposeStep(std::span<const DraftInput>(&in, 1));
  EXPECT_EQ(out.size(), 1u);
  return out.empty() ? DraftProposal{} : out[0];
}

void ExpectSame(const DraftProposal& a, const DraftProposal& b, const char* what) {
  EXPECT_EQ(a.tokens, b.tokens) << what;
  ASSERT_EQ(a.confidence.size(), b.confidence.size()) << what;
  EXPECT_EQ(std::memcmp(a.confidence.data(), b.confidence.data(), a.confidence.size() * sizeof(float)), 0)
      << what;
  EXPECT_EQ(a.probs, b.probs) << what;
}

TEST(DraftModelDrafter, IncrementalKvAfterAcceptsRejectsAndRollbacksEqualsAFreshStart) {
  for (auto mode : {DraftModelDrafter::Sampling::kCoupled, DraftModelDrafter::Sampling::kRejection}) {
    SamplingParams sampled;
    sampled.temperature = 0.8;
    sampled.seed = 11;
    const SamplingParams* const kinds[] = {nullptr, &sampled};
    for (const SamplingParams* params : kinds) {
      DraftModelDrafter incremental(LoadStories(), 64, 4, mode);
      std::vector<int32_t> seq = {1, 403, 407, 261, 378, 80};
      const DraftProposal first = Propose(incremental, 7, seq, params);
      ASSERT_EQ(first.tokens.size(), 4u);
      EXPECT_EQ(first.probs.size(),
                mode == DraftModelDrafter::Sampling::kRejection && params != nullptr ? 4u * 512u : 0u);
      // Two drafts accepted, the third replaced by another token.
      seq.insert(seq.end(), first.tokens.begin(), first.tokens.begin() + 2);
      seq.push_back((first.tokens[2] + 1) % 512);
      DraftModelDrafter fresh(LoadStories(), 64, 4, mode);
      ExpectSame(Propose(incremental, 7, seq, params), Propose(fresh, 7, seq, params), "after a rejection");
      // A rollback behind what both hold (preemption), then a new token.
      seq.resize(5);
      seq.push_back(99);
      DraftModelDrafter fresh2(LoadStories(), 64, 4, mode);
      ExpectSame(Propose(incremental, 7, seq, params), Propose(fresh2, 7, seq, params), "after a rollback");
      // All four drafts accepted plus the bonus token.
      const DraftProposal again = Propose(incremental, 7, seq, params);
      seq.insert(seq.end(), again.tokens.begin(), again.tokens.end());
      seq.push_back(42);
      DraftModelDrafter fresh3(LoadStories(), 64, 4, mode);
      ExpectSame(Propose(incremental, 7, seq, params), Propose(fresh3, 7, seq, params),
                 "after a full accept");
      EXPECT_GT(incremental.blocks_in_use(), 0);
      const int64_t ids[] = {7};
      incremental.Release(ids);
      EXPECT_EQ(incremental.blocks_in_use(), 0);
    }
  }
}

TEST(DraftModelDrafter, CoupledDraftsOfTheTargetItselfAreTheTargetsOwnSamples) {
  // Drafting with the target's own weights, a coupled draft at position P is
  // exactly what the target samples there with the same (seed, P, draw).
  auto target = LoadStories();
  DraftModelDrafter d(LoadStories(), 64, 4, DraftModelDrafter::Sampling::kCoupled);
  SamplingParams params;
  params.temperature = 0.9;
  params.seed = 5;
  std::vector<int32_t> seq = {1, 403, 407, 261, 378, 300};
  const DraftProposal p = Propose(d, 1, seq, &params);
  ASSERT_EQ(p.tokens.size(), 4u);
  KvCache kv(target->config(), 8, 4);
  std::vector<int32_t> table = {0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<float> logits(512);
  SequenceChunk c{seq, 0, table, SequenceChunk::Logits::kLast};
  for (int32_t draft : p.tokens) {
    ForwardBatch b;
    b.seqs.push_back(c);
    ASSERT_TRUE(target->Forward(b, kv, logits.data()).ok());
    const int64_t position = c.start_pos + static_cast<int64_t>(c.tokens.size());
    EXPECT_EQ(SampleToken(logits.data(), 512, params, static_cast<uint64_t>(position)), draft);
    c.start_pos = position;
    c.tokens = {draft};
  }
}

}  // namespace
}  // namespace deepinfer
