// spec_step_bench: the pieces of a batch-1 speculative step, timed apart
// (docs/speculative.md, "where a batch-1 speculative step's time goes"):
// the target's forward over 1..1+K rows of one sequence after `context`
// tokens (a plain decode step is 1 row, verifying K drafts is 1 + K), and
// the MTP draft's forward over 1 row (a chained draft) and over several (a
// catch-up), with the KV types the engine uses (target: --kv-cache-dtype,
// auto by default as in `deepinfer bench`; MTP: f32).
//
//   spec_step_bench --model DIR [--context 120] [--rows 1,2,3,4,6] [--mtp-rows 1,4]
//                   [--threads 1] [--iters 400] [--kv-cache-dtype auto] [--mtp-weights int8]
//
// --mtp-weights int8 (default, as the engine) | stored: the MTP draft's
// matrices (model/mtp.h, MtpMatrices).
// Prints the median microseconds per call. Run it at --context 0 as well:
// the difference is what attention costs at that context.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/backend_config.h"
#include "checkpoint/checkpoint.h"
#include "model/kv_cache.h"
#include "model/kv_cache_dtype.h"
#include "model/model.h"
#include "model/mtp.h"

namespace deepinfer {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string model;
  int64_t context = 120;
  std::vector<int64_t> rows = {1, 2, 3, 4, 6};
  std::vector<int64_t> mtp_rows = {1, 4};
  int threads = 1;
  int iters = 400;
  KvCacheDType kv_cache_dtype = KvCacheDType::kAuto;
  bool mtp_int8 = true;
};

std::vector<int64_t> ParseList(const std::string& v) {
  std::vector<int64_t> out;
  std::stringstream ss(v);
  for (std::string part; std::getline(ss, part, ',');) out.push_back(std::stoll(part));
  return out;
}

// One chunk of `n` tokens at positions [start, start + n).
ForwardBatch Chunk(int64_t n, int64_t start, const std::vector<int32_t>& blocks,
                   SequenceChunk::Logits logits) {
  ForwardBatch b;
  SequenceChunk s;
  for (int64_t i = 0; i < n; ++i) s.tokens.push_back(static_cast<int32_t>(3 + (start + i) % 250));
  s.start_pos = start;
  s.block_table = blocks;
  s.logits = logits;
  b.seqs.push_back(std::move(s));
  return b;
}

// Median microseconds of `iters` calls of f.
template <class F>
double MedianMicros(int iters, F&& f) {
  std::vector<double> t;
  t.reserve(static_cast<size_t>(iters));
  for (int i = 0; i < iters; ++i) {
    const Clock::time_point start = Clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  std::nth_element(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(t.size() / 2), t.end());
  return t[t.size() / 2];
}

int Run(const Options& o) {
  LoadOptions load;
  load.load_tokenizer = false;
  load.num_threads = o.threads;
  auto loaded = LoadModel(o.model, load);
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s\n", loaded.status().ToString().c_str());
    return 1;
  }
  Model& model = *loaded->model;
  const ModelConfig& c = model.config();
  const int64_t max_rows = std::max(*std::max_element(o.rows.begin(), o.rows.end()),
                                    *std::max_element(o.mtp_rows.begin(), o.mtp_rows.end()));
  constexpr int64_t kBlockSize = 16;
  const int64_t num_blocks = (o.context + max_rows + kBlockSize - 1) / kBlockSize + 1;
  std::vector<int32_t> blocks;
  for (int64_t i = 0; i < num_blocks; ++i) blocks.push_back(static_cast<int32_t>(i));
  const DType kv_dtype = ResolveKvCacheDType(o.kv_cache_dtype);
  KvCache kv(c, num_blocks, kBlockSize, kv_dtype);
  std::vector<float> logits(static_cast<size_t>(std::max(o.context, max_rows) * c.vocab_size));
  std::vector<float> hidden(static_cast<size_t>(std::max(o.context, max_rows) * c.hidden_size));
  if (o.context > 0) {  // the context's K/V, once
    const Status st = model.ForwardWithHidden(Chunk(o.context, 0, blocks, SequenceChunk::Logits::kLast), kv,
                                              logits.data(), hidden.data());
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.ToString().c_str());
      return 1;
    }
  }
  std::printf("%s: context %lld, %d thread(s), target KV %s, median of %d calls\n", o.model.c_str(),
              static_cast<long long>(o.context), o.threads, DTypeName(kv_dtype), o.iters);
  for (int64_t r : o.rows) {
    // Rows at positions context.. overwrite the same slots every call.
    const ForwardBatch b =
        Chunk(r, o.context, blocks, r == 1 ? SequenceChunk::Logits::kLast : SequenceChunk::Logits::kAll);
    const double us =
        MedianMicros(o.iters, [&] { (void)model.ForwardWithHidden(b, kv, logits.data(), hidden.data()); });
    std::printf("  target forward, %lld row(s): %8.1f us\n", static_cast<long long>(r), us);
  }
  if (c.num_nextn_predict_layers <= 0) return 0;
  auto draft = MtpDraft::Create(c, loaded->weights, 0, o.threads,
                                o.mtp_int8 ? MtpMatrices::kInt8 : MtpMatrices::kAsStored);
  if (!draft.ok()) {
    std::fprintf(stderr, "%s\n", draft.status().ToString().c_str());
    return 1;
  }
  std::unique_ptr<KvCache> mtp_kv = (*draft)->NewKvCache(num_blocks, kBlockSize);
  std::vector<float> g(static_cast<size_t>(max_rows * c.hidden_size));
  if (o.context > 0) {
    (void)(*draft)->Forward(Chunk(o.context, 0, blocks, SequenceChunk::Logits::kLast), hidden.data(), *mtp_kv,
                            logits.data(), g.data());
  }
  for (int64_t r : o.mtp_rows) {
    const ForwardBatch b = Chunk(r, o.context, blocks, SequenceChunk::Logits::kLast);
    const double us = MedianMicros(
        o.iters, [&] { (void)(*draft)->Forward(b, hidden.data(), *mtp_kv, logits.data(), g.data()); });
    std::printf("  MTP forward, %lld row(s):    %8.1f us\n", static_cast<long long>(r), us);
  }
  return 0;
}

int Main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--model") {
      o.model = v;
    } else if (k == "--context") {
      o.context = std::stoll(v);
    } else if (k == "--rows") {
      o.rows = ParseList(v);
    } else if (k == "--mtp-rows") {
      o.mtp_rows = ParseList(v);
    } else if (k == "--threads") {
      o.threads = std::stoi(v);
    } else if (k == "--iters") {
      o.iters = std::stoi(v);
    } else if (k == "--mtp-weights" && (v == "int8" || v == "stored")) {
      o.mtp_int8 = v == "int8";
    } else if (k == "--kv-cache-dtype") {
      auto parsed = ParseKvCacheDType(v);
      if (!parsed.ok()) {
        std::fprintf(stderr, "%s\n", parsed.status().ToString().c_str());
        return 2;
      }
      o.kv_cache_dtype = *parsed;
    } else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  if (o.model.empty() || o.rows.empty() || o.mtp_rows.empty() || o.iters <= 0 || o.context < 0) {
    std::fprintf(stderr,
                 "usage: spec_step_bench --model DIR [--context 120] [--rows 1,2,3,4,6] [--mtp-rows 1,4] "
                 "[--threads 1] [--iters 400] [--kv-cache-dtype auto] [--mtp-weights int8|stored]\n");
    return 2;
  }
  return Run(o);
}

}  // namespace
}  // namespace deepinfer

int main(int argc, char** argv) {
  deepinfer::cpu::ApplyBackendConfig(
      deepinfer::cpu::BackendConfigFromEnv());  // DEEPINFER_ISA etc., as the CLI
  return deepinfer::Main(argc, argv);
}
