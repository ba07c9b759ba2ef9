// Microbenchmark of decode attention per KV cache dtype (not a test; numbers
// go in docs/kv-cache.md).
//
//   attention_bench [--depth D] [--batch B] [--layers L] [--rounds R] [--threads P]
//                   [--dtypes f32,f16,bf16,q8_0] [--k-layout dim|rows] [--head-dim 64] [--heads 32]
// --k-layout rows stores K as rows for every dtype; by default f32 / f16 /
// bf16 K is dim-major, as KvCache stores it (q8_0 is rows either way).
//   (DEEPINFER_ISA=scalar|avx2|avx512 picks the kernel level)
//
// One decode step's attention: B sequences, each its own D cached positions
// (no sharing, so every step streams B * D rows per layer from memory), for
// L layers of 4 KV heads and --heads query heads of --head-dim (default the
// TinyLlama shape: 32 query heads, head_dim 64; stories260K: --heads 8 --head-dim 8).
// The dtypes are timed alternately, round after round, in one process, so a
// noisy shared machine slows them alike; prints the median and min ms per step.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/attention_kernel.h"
#include "backend/cpu/backend_config.h"
#include "backend/cpu/isa.h"
#include "backend/cpu/paged_attention.h"
#include "tensor/dequant.h"

namespace {

using deepinfer::DType;
using namespace deepinfer::cpu;

constexpr int64_t kKvHeads = 4, kBlock = 16;

// One dtype's cache: [layer][block][kv_head][slot][row], B * D / kBlock blocks.
struct Cache {
  DType dtype;
  std::vector<uint8_t> k, v;
  int64_t row_bytes, num_blocks;
  PagedKvLayer Layer(int64_t layer) const {
    PagedKvLayer l;
    const int64_t block_bytes = kKvHeads * kBlock * row_bytes;
    l.head0.dtype = dtype;
    l.head0.k = k.data() + layer * num_blocks * block_bytes;
    l.head0.v = v.data() + layer * num_blocks * block_bytes;
    l.head0.block_size = kBlock;
    l.head0.slot_stride = row_bytes;
    l.head0.block_stride = block_bytes;
    l.head0.v_slot_stride = row_bytes;
    l.head0.v_block_stride = block_bytes;
    l.k_head = kBlock * row_bytes;
    l.v_head = kBlock * row_bytes;
    if (dim_major) {  // the same bytes per head and block, element d of every slot side by side
      l.head0.slot_stride = deepinfer::BlockBytes(dtype);
      l.head0.k_dim_stride = kBlock * l.head0.slot_stride;
    }
    return l;
  }
  bool dim_major = false;  // K stored dim-major (as KvCache stores f32 / f16 / bf16 GQA caches)
};

// K's values are random either way, so dim-major needs no transposition.
Cache MakeCache(DType dtype, int64_t head_dim, int64_t layers, int64_t num_blocks, std::mt19937& rng,
                bool rows_k) {
  Cache c{dtype, {}, {}, deepinfer::RowBytes(dtype, head_dim), num_blocks};
  c.dim_major = !rows_k && dtype != DType::kQ8_0;
  const int64_t rows = layers * num_blocks * kKvHeads * kBlock;
  c.k.resize(static_cast<size_t>(rows * c.row_bytes));
  c.v.resize(c.k.size());
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> row(static_cast<size_t>(head_dim));
  for (int64_t r = 0; r < rows; ++r) {
    for (auto& x : row) x = n(rng);
    deepinfer::QuantizeRow(dtype, row.data(), c.k.data() + r * c.row_bytes, head_dim);
    for (auto& x : row) x = n(rng);
    deepinfer::QuantizeRow(dtype, row.data(), c.v.data() + r * c.row_bytes, head_dim);
  }
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  ApplyBackendConfig(BackendConfigFromEnv());
  int64_t depth = 2048, batch = 1, layers = 22, rounds = 7, threads = 2;
  int64_t head_dim = 64, heads = 32;  // query heads over kKvHeads; TinyLlama's shape
  std::vector<DType> dtypes = {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0};
  bool rows_k = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int64_t value = std::atoll(argv[i + 1]);
    if (flag == "--k-layout") {
      rows_k = std::string(argv[i + 1]) == "rows";
      if (!rows_k && std::string(argv[i + 1]) != "dim") {
        std::fprintf(stderr, "--k-layout: rows or dim\n");
        return 2;
      }
    } else if (flag == "--dtypes") {
      dtypes.clear();
      std::stringstream names(argv[i + 1]);
      for (std::string name; std::getline(names, name, ',');) {
        const std::optional<DType> t = deepinfer::DTypeFromName(name);
        if (!t || !IsKvCacheDType(*t)) {
          std::fprintf(stderr, "--dtypes: %s is not a KV cache dtype (f32, f16, bf16, q8_0)\n", name.c_str());
          return 2;
        }
        dtypes.push_back(*t);
      }
    } else if (flag == "--depth")
      depth = value;
    else if (flag == "--batch")
      batch = value;
    else if (flag == "--layers")
      layers = value;
    else if (flag == "--rounds")
      rounds = value;
    else if (flag == "--threads")
      threads = value;
    else if (flag == "--head-dim")
      head_dim = value;
    else if (flag == "--heads")
      heads = value;
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  if (depth < 1 || batch < 1 || layers < 1 || rounds < 1 || threads < 1 || dtypes.empty() || head_dim < 1 ||
      heads < 1) {
    std::fprintf(stderr, "flags must be >= 1\n");
    return 2;
  }
  if (heads % kKvHeads != 0) {
    std::fprintf(stderr, "--heads must be a multiple of the %lld KV heads\n",
                 static_cast<long long>(kKvHeads));
    return 2;
  }
  const int64_t per_seq = (depth + kBlock - 1) / kBlock, num_blocks = batch * per_seq;
  std::mt19937 rng(1);
  std::vector<Cache> caches;
  for (DType t : dtypes) caches.push_back(MakeCache(t, head_dim, layers, num_blocks, rng, rows_k));
  std::vector<std::vector<int32_t>> tables(static_cast<size_t>(batch));
  std::vector<int32_t> all(static_cast<size_t>(num_blocks));
  for (int64_t b = 0; b < num_blocks; ++b) all[static_cast<size_t>(b)] = static_cast<int32_t>(b);
  std::shuffle(all.begin(), all.end(), rng);
  std::vector<const std::vector<int32_t>*> table_of;
  for (int64_t s = 0; s < batch; ++s) {
    tables[static_cast<size_t>(s)].assign(all.begin() + s * per_seq, all.begin() + (s + 1) * per_seq);
    table_of.push_back(&tables[static_cast<size_t>(s)]);
  }
  const std::vector<int64_t> positions(static_cast<size_t>(batch), depth - 1);
  std::vector<float> q(static_cast<size_t>(batch * heads * head_dim)), out(q.size());
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (auto& x : q) x = n(rng);
  AttentionShape shape{heads, kKvHeads, head_dim, 0, 1.0f / std::sqrt(static_cast<float>(head_dim))};
  deepinfer::ThreadPool pool(static_cast<int>(threads));
  // Wall time, and the process's CPU time: on a shared machine the CPU time
  // of a 1-thread run is the steadier measure of the kernel's own cost.
  std::vector<std::vector<double>> ms(dtypes.size()), cpu_ms(dtypes.size());
  const auto cpu_now = [] {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return 1e3 * static_cast<double>(ts.tv_sec) + 1e-6 * static_cast<double>(ts.tv_nsec);
  };
  for (int64_t r = 0; r <= rounds; ++r) {  // round 0 warms up
    for (size_t d = 0; d < dtypes.size(); ++d) {
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = cpu_now();
      for (int64_t l = 0; l < layers; ++l) {
        PagedAttention(q.data(), batch, positions.data(), table_of, caches[d].Layer(l), shape, pool,
                       out.data());
      }
      const double t =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (r > 0) {
        ms[d].push_back(t);
        cpu_ms[d].push_back(cpu_now() - c0);
      }
    }
  }
  std::printf(
      "isa=%s threads=%lld depth=%lld batch=%lld layers=%lld rounds=%lld (ms per step of attention)\n",
      IsaName(ActiveIsa()), static_cast<long long>(threads), static_cast<long long>(depth),
      static_cast<long long>(batch), static_cast<long long>(layers), static_cast<long long>(rounds));
  for (size_t d = 0; d < dtypes.size(); ++d) {
    std::vector<double> v = ms[d], c = cpu_ms[d];
    std::sort(v.begin(), v.end());
    std::sort(c.begin(), c.end());
    std::printf("  %-5s median %9.3f  min %9.3f  cpu median %9.3f  KV bytes read/step %.1f MB\n",
                deepinfer::DTypeName(dtypes[d]), v[v.size() / 2], v[0], c[c.size() / 2],
                2.0 * static_cast<double>(layers * batch * depth * kKvHeads * caches[d].row_bytes) / 1e6);
  }
  return 0;
}
