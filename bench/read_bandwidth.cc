// The machine's streaming read bandwidth, as a decode roofline should see it:
// the best of several read kernels at a given thread count.
//
//   g++ -O3 -march=native -pthread bench/read_bandwidth.cc -o read_bandwidth
//   ./read_bandwidth THREADS [GiB] [REPS]      prints "read GB/s best X ..."
//
// Why not a plain sum loop: on the project's Zen5 VMs one such loop per
// thread did not scale past ~43 GB/s at 2 threads, while a GEMV streaming a
// DRAM-sized matrix read 48-61 GB/s on the same machine, so the plain loop
// understates the ceiling (and overstates any fraction of it). Here each
// thread reads its contiguous share with AVX-512 / AVX2 loads, either as one
// stream or as 4 interleaved streams, with or without software prefetch; the
// array sits on transparent huge pages (MADV_HUGEPAGE) like deepinfer's packed
// weights. Not part of the tests: bench/vs_llamacpp.sh builds and runs it.
#include <immintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

#if defined(__AVX512F__)
using Vec = __m512i;
inline Vec Load(const char* p) { return _mm512_load_si512(p); }
inline Vec Xor(Vec a, Vec b) { return _mm512_xor_si512(a, b); }
inline uint64_t Fold(Vec v) {
  alignas(64) uint64_t l[8];
  _mm512_store_si512(l, v);
  return l[0] + l[1] + l[2] + l[3] + l[4] + l[5] + l[6] + l[7];
}
#else
using Vec = __m256i;
inline Vec Load(const char* p) { return _mm256_load_si256(reinterpret_cast<const __m256i*>(p)); }
inline Vec Xor(Vec a, Vec b) { return _mm256_xor_si256(a, b); }
inline uint64_t Fold(Vec v) {
  alignas(32) uint64_t l[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(l), v);
  return l[0] + l[1] + l[2] + l[3];
}
#endif
constexpr int64_t kVec = sizeof(Vec);

// Reads [p, p + bytes) (a multiple of 4 KiB) as `streams` interleaved
// streams, each 256 bytes per step, prefetching `ahead` bytes ahead (0: none).
uint64_t ReadRange(const char* p, int64_t bytes, int streams, int64_t ahead) {
  Vec acc[4] = {};
  const int64_t part = bytes / streams;
  for (int64_t off = 0; off < part; off += 256) {
    for (int s = 0; s < streams; ++s) {
      const char* q = p + s * part + off;
      if (ahead > 0) {
        _mm_prefetch(q + ahead, _MM_HINT_T0);
        _mm_prefetch(q + ahead + 128, _MM_HINT_T0);
      }
      for (int64_t b = 0; b < 256; b += 4 * kVec) {
        acc[0] = Xor(acc[0], Load(q + b));
        acc[1] = Xor(acc[1], Load(q + b + kVec));
        acc[2] = Xor(acc[2], Load(q + b + 2 * kVec));
        acc[3] = Xor(acc[3], Load(q + b + 3 * kVec));
      }
    }
  }
  return Fold(Xor(Xor(acc[0], acc[1]), Xor(acc[2], acc[3])));
}

struct Variant {
  const char* name;
  int streams;
  int64_t ahead;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s THREADS [GiB (1)] [REPS (5)]\n", argv[0]);
    return 2;
  }
  const int threads = std::max(1, std::atoi(argv[1]));
  const double gib = argc > 2 ? std::atof(argv[2]) : 1.0;
  const int reps = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
  const int64_t unit = int64_t{4096} * threads * 4;
  const int64_t bytes = std::max<int64_t>(unit, static_cast<int64_t>(gib * (1 << 30)) / unit * unit);

  void* mem = std::aligned_alloc(2 << 20, static_cast<size_t>(bytes));
  if (mem == nullptr) {
    std::fprintf(stderr, "read_bandwidth: cannot allocate %lld bytes\n", static_cast<long long>(bytes));
    return 1;
  }
  madvise(mem, static_cast<size_t>(bytes), MADV_HUGEPAGE);
  char* data = static_cast<char*>(mem);
  for (int64_t i = 0; i < bytes; i += 64) data[i] = static_cast<char>(i >> 6);  // fault every page in

  const Variant variants[] = {{"1 stream", 1, 0},
                              {"1 stream, prefetch 2 KiB", 1, 2048},
                              {"4 streams", 4, 0},
                              {"4 streams, prefetch 1 KiB", 4, 1024}};
  std::atomic<uint64_t> sink{0};
  double best_all = 0;
  std::printf("threads=%d  array=%.2f GiB  reps=%d  (%s loads)\n", threads, bytes / double(1 << 30), reps,
              kVec == 64 ? "AVX-512" : "AVX2");
  for (const Variant& v : variants) {
    double best = 0;
    for (int r = 0; r < reps; ++r) {
      std::atomic<int> ready{0};
      std::atomic<bool> go{false};
      std::vector<double> seconds(static_cast<size_t>(threads));
      std::vector<std::thread> pool;
      const int64_t share = bytes / threads;
      for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
          ++ready;
          while (!go.load(std::memory_order_acquire)) {
          }
          const auto t0 = std::chrono::steady_clock::now();
          sink += ReadRange(data + t * share, share, v.streams, v.ahead);
          seconds[static_cast<size_t>(t)] =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        });
      }
      while (ready.load() < threads) {
      }
      go.store(true, std::memory_order_release);
      for (auto& th : pool) th.join();
      best = std::max(best, bytes / *std::max_element(seconds.begin(), seconds.end()) / 1e9);
    }
    std::printf("%-28s best %7.2f GB/s\n", v.name, best);
    best_all = std::max(best_all, best);
  }
  std::printf("read GB/s best %.2f  (sink %llu)\n", best_all,
              static_cast<unsigned long long>(sink.load() & 1));
  std::free(mem);
  return 0;
}
