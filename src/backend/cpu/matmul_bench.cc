// Microbenchmark of cpu::MatMul (not a test; numbers go in docs/kernels.md).
//
//   matmul_bench [--rows N] [--k K] [--tokens T] [--threads P] [--isa scalar|avx2|avx512]
//                [--types f32,bf16,q8_0,...] [--seconds S] [--packed 0|1]
//
// For each weight type: GEMV (1 token) as weight GB/s (bytes of W per call /
// time: the decode roofline metric) and GEMM (T tokens) as GFLOP/s
// (2 N K T / time; int8 multiply-adds counted as 2 ops). Median of repeated
// calls over about S seconds each. Random weights; the default shape is
// TinyLlama's FFN up-projection (5632 x 2048).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cpu/backend_config.h"
#include "backend/cpu/isa.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/packed_weights.h"
#include "tensor/dequant.h"

namespace {

using deepinfer::DType;
using namespace deepinfer::cpu;

std::vector<uint8_t> RandomWeights(DType t, int64_t rows, int64_t k, std::mt19937& rng) {
  const int64_t row_bytes = deepinfer::RowBytes(t, k);
  std::vector<uint8_t> bytes(static_cast<size_t>(row_bytes * rows));
  std::uniform_int_distribution<int> byte(0, 255);
  if (t == DType::kQ2_K || t == DType::kQ3_K || t == DType::kQ4_K || t == DType::kQ5_K ||
      t == DType::kQ6_K) {  // random bytes, finite f16 scales
    for (auto& b : bytes) b = static_cast<uint8_t>(byte(rng));
    const uint16_t h = deepinfer::F32ToF16(0.01f);
    const int64_t block = deepinfer::BlockBytes(t);
    for (int64_t off = 0; off < static_cast<int64_t>(bytes.size()); off += block) {
      if (t == DType::kQ2_K) {  // d, dmin
        std::memcpy(&bytes[off + 80], &h, 2);
        std::memcpy(&bytes[off + 82], &h, 2);
      } else if (t == DType::kQ4_K || t == DType::kQ5_K) {
        std::memcpy(&bytes[off], &h, 2);

        std::memcpy(&bytes[off + 2], &h, 2);
      } else {
        std::memcpy(&bytes[off + (t == DType::kQ3_K ? 108 : 208)], &h, 2);
      }
    }
    return bytes;
  }
  std::normal_distribution<float> dist(0.0f, 0.5f);
  std::vector<float> row(static_cast<size_t>(k));
  for (int64_t r = 0; r < rows; ++r) {
    for (float& f : row) f = dist(rng);
    deepinfer::QuantizeRow(t, row.data(), bytes.data() + r * row_bytes, k);
  }
  return bytes;
}

double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Median wall time of one call; *cpu_per_call gets the median process CPU
// time divided by the thread count (close to the wall time on an idle
// machine, and still meaningful on a loaded one where the wall time is not).
template <class F>
double MedianSeconds(F f, double budget, int threads, double* cpu_per_call) {
  std::vector<double> times, cpu;
  const auto start = std::chrono::steady_clock::now();
  f();  // warm-up
  do {
    const double c0 = ProcessCpuSeconds();
    const auto t0 = std::chrono::steady_clock::now();
    f();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    cpu.push_back((ProcessCpuSeconds() - c0) / threads);
  } while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < budget ||
           times.size() < 3);
  std::sort(times.begin(), times.end());
  std::sort(cpu.begin(), cpu.end());
  *cpu_per_call = cpu[cpu.size() / 2];
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  ApplyBackendConfig(BackendConfigFromEnv());
  int64_t rows = 5632, k = 2048, tokens = 64;
  int threads = 1;
  double seconds = 1.0;
  bool packed = true;  // as the model loader does (only where the active ISA reads a packed layout)
  Isa isa = ActiveIsa();
  std::string types = "f32,f16,bf16,q8_0,q4_0,q4_k";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--rows") {
      rows = std::atoll(value.c_str());
    } else if (flag == "--k") {
      k = std::atoll(value.c_str());
    } else if (flag == "--tokens") {
      tokens = std::atoll(value.c_str());
    } else if (flag == "--threads") {
      threads = std::atoi(value.c_str());
    } else if (flag == "--seconds") {
      seconds = std::atof(value.c_str());
    } else if (flag == "--types") {
      types = value;
    } else if (flag == "--packed") {
      packed = value != "0";
    } else if (flag == "--isa") {
      auto parsed = IsaFromName(value);
      if (!parsed || !CpuSupports(*parsed)) {
        std::fprintf(stderr, "unsupported --isa %s\n", value.c_str());
        return 2;
      }
      isa = *parsed;
    } else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  deepinfer::ThreadPool pool(threads);
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(tokens * k));
  for (float& f : x) f = dist(rng);
  std::vector<float> y(static_cast<size_t>(tokens * rows));
  std::printf("isa=%s threads=%d rows=%lld k=%lld tokens=%lld\n", IsaName(isa), threads,
              static_cast<long long>(rows), static_cast<long long>(k), static_cast<long long>(tokens));
  std::printf("%-6s %10s %10s %10s %12s %12s\n", "type", "gemv_ms", "gemv_GB/s", "(cpu)", "gemm_GFLOP/s",
              "(cpu)");
  std::stringstream list(types);
  std::string name;
  while (std::getline(list, name, ',')) {
    auto t = deepinfer::DTypeFromName(name);
    if (!t || deepinfer::RowBytes(*t, k) <= 0) {
      std::fprintf(stderr, "skipping %s (unknown type or k not a multiple of its block)\n", name.c_str());
      continue;
    }
    std::vector<uint8_t> w = RandomWeights(*t, rows, k, rng);
    deepinfer::TensorView view;
    view.dtype = *t;
    view.shape = {rows, k};
    view.data = w.data();
    view.nbytes = static_cast<int64_t>(w.size());
    PackedWeights packer;
    const PackedMatrix matrix = packed && isa == ActiveIsa() ? packer.Pack(view) : PackedMatrix{view};
    double gemv_cpu, gemm_cpu;
    const double gemv = MedianSeconds(
        [&] { MatMulWithIsa(isa, matrix.view, matrix.layout, x.data(), 1, nullptr, y.data(), pool); },
        seconds, threads, &gemv_cpu);
    const double gemm = MedianSeconds(
        [&] { MatMulWithIsa(isa, matrix.view, matrix.layout, x.data(), tokens, nullptr, y.data(), pool); },
        seconds, threads, &gemm_cpu);
    const double bytes = static_cast<double>(w.size()), flops = 2.0 * rows * k * tokens;
    std::printf("%-6s %10.3f %10.1f %10.1f %12.1f %12.1f\n", name.c_str(), gemv * 1e3, bytes / gemv / 1e9,
                bytes / gemv_cpu / 1e9, flops / gemm / 1e9, flops / gemm_cpu / 1e9);
    std::fflush(stdout);
  }
  return 0;
}
