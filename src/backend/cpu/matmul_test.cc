// Conformance of the matmul kernels: the scalar reference against a
// double-precision dot product of the dequantized weights, and every SIMD
// level this CPU supports against the scalar reference, on random shapes
// (K not a multiple of the SIMD width or of an even number of blocks, odd N,
// 1..67 tokens). Plus the batch-invariance contract: a token's output is
// bit-identical alone, batched, and at any thread count.
#include "backend/cpu/matmul.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/cpu/amx.h"
#include "backend/cpu/isa.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/kernels_amx.h"
#include "backend/cpu/packed_weights.h"
#include "tensor/dequant.h"

namespace deepinfer::cpu {
namespace {

struct Shape {
  int64_t n_rows, k, n_tokens;
};

struct Matrix {
  std::vector<uint8_t> bytes;
  TensorView view;                       // the file layout, or (after UsePacked) the packed copy
  const PackedLayout* packed = nullptr;  // the packed copy's layout, else null
  std::vector<float> dense;              // dequantized, [n_rows, k]
  // Q4_K / Q5_K: a bound on the per-row minimum term dmin * m (0 for other types),
  // which enters the error scale because it can cancel against d * sc * q.
  std::vector<float> min_bound;
};

std::vector<float> RandomFloats(std::mt19937& rng, int64_t n, float scale) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = dist(rng);
  return v;
}

void StoreHalf(uint8_t* p, float f) {
  const uint16_t h = F32ToF16(f);
  std::memcpy(p, &h, 2);
}

Matrix RandomMatrix(std::mt19937& rng, DType t, int64_t n_rows, int64_t k) {
  Matrix m;
  const int64_t row_bytes = RowBytes(t, k);
  EXPECT_GT(row_bytes, 0);
  m.bytes.resize(static_cast<size_t>(row_bytes * n_rows));
  m.min_bound.assign(static_cast<size_t>(n_rows), 0.0f);
  if (BlockElems(t) == 256) {
    // No quantizer for the k-quants: random bytes with finite, positive
    // f16 super-block scales.
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_real_distribution<float> scale(0.002f, 0.02f);
    for (auto& b : m.bytes) b = static_cast<uint8_t>(byte(rng));
    for (int64_t r = 0; r < n_rows; ++r) {
      for (int64_t sb = 0; sb < k / 256; ++sb) {
        uint8_t* blk = m.bytes.data() + r * row_bytes + sb * BlockBytes(t);
        if (t == DType::kQ4_K || t == DType::kQ5_K || t == DType::kQ2_K) {
          const int64_t at = t == DType::kQ2_K ? 80 : 0;  // d, then dmin
          const float dmin = scale(rng);
          StoreHalf(blk + at, scale(rng));
          StoreHalf(blk + at + 2, dmin);
          const float max_m = t == DType::kQ2_K ? 15.0f : 63.0f;
          m.min_bound[r] = std::max(m.min_bound[r], F16ToF32(F32ToF16(dmin)) * max_m);
        } else {
          StoreHalf(blk + (t == DType::kQ3_K ? 108 : 208), scale(rng));
        }
      }
    }
  } else {
    for (int64_t r = 0; r < n_rows; ++r) {
      const std::vector<float> row = RandomFloats(rng, k, 0.5f);
      EXPECT_TRUE(QuantizeRow(t, row.data(), m.bytes.data() + r * row_bytes, k));
    }
  }
  m.dense.resize(static_cast<size_t>(n_rows * k));
  for (int64_t r = 0; r < n_rows; ++r) {
    DequantizeRow(t, m.bytes.data() + r * row_bytes, m.dense.data() + r * k, k);
  }
  m.view.dtype = t;
  m.view.shape = {n_rows, k};
  m.view.data = m.bytes.data();
  m.view.nbytes = static_cast<int64_t>(m.bytes.size());
  return m;
}

std::vector<Shape> ShapesFor(DType t) {
  if (BlockElems(t) == 256) {
    return {{1, 256, 1}, {7, 512, 3}, {33, 256, 67}, {18, 768, 5}};
  }
  if (IsQuantized(t)) {
    return {{1, 32, 1}, {3, 96, 2}, {17, 160, 67}, {33, 64, 5}, {8, 352, 9}, {5, 1024, 1}};
  }
  std::vector<Shape> shapes = {{1, 1, 1}, {3, 15, 2}, {17, 33, 67}, {33, 100, 5}, {8, 257, 9}, {5, 1024, 1}};
  if (t == DType::kBF16) {
    // The AVX-512 kernel works in 32-element chunks with a masked tail (K =
    // 40, 72, 1000, 31), 8-row GEMV tiles, 4 x 6 GEMM tiles and one tile of
    // the 1..5 leftover tokens (4, 10, 11, 25 tokens), 16-row tasks (37, 21 rows).
    shapes.insert(shapes.end(),
                  {{7, 40, 4},
                   {21, 72, 10},
                   {13, 1000, 11},
                   {37, 64, 25},
                   {9, 31, 1},
                   {21, 2048, 1},
                   {37, 4100, 13}});  // K > 2048: the K-blocked GEMM (1024-element parts, tail in the last)
  }
  return shapes;
}

// f32 -> bf16 (8 significant bits) to nearest, ties to even, written
// independently of the kernels' bit trick: scale the mantissa to an 8-bit
// integer and let nearbyint (default rounding mode) round it. Normal,
// finite inputs only (what RandomFloats gives).
float RoundToBf16Reference(float x) {
  if (x == 0.0f) return x;
  int e = 0;
  const double m = std::frexp(static_cast<double>(x), &e);  // |m| in [0.5, 1)
  return static_cast<float>(std::ldexp(std::nearbyint(std::ldexp(m, 8)), e - 8));
}

const DType kKernelTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16,
                              DType::kQ8_0, DType::kQ4_0, DType::kQ4_K};

std::vector<Isa> SupportedIsas() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    if (CpuSupports(isa)) out.push_back(isa);
  }
  return out;
}

// Replaces m's view with a packed copy owned by `packer` (m.packed: its layout).
void UsePacked(PackedWeights& packer, Matrix& m) {
  const PackedMatrix packed = packer.Pack(m.view);
  m.view = packed.view;
  m.packed = packed.layout;
}

std::vector<float> RunMatMul(Isa isa, const Matrix& m, const std::vector<float>& x, int64_t n_tokens,
                             const float* bias, int threads) {
  ThreadPool pool(threads);
  std::vector<float> y(static_cast<size_t>(n_tokens * m.view.rows()), -1.0f);
  MatMulWithIsa(isa, m.view, m.packed, x.data(), n_tokens, bias, y.data(), pool);
  return y;
}

// Runs body once with the AMX kernels off and, where this CPU has AMX, once
// with them on (restoring the setting): on an AMX machine the AVX-512
// kernels (vdpbf16ps, the int8 tiles past 16 tokens) would otherwise never
// run, though they are what a CPU without AMX uses.
template <class Body>
void WithAndWithoutAmx(Body body) {
  const bool was_enabled = SetAmxEnabled(false);
  body("amx off");
  if (AmxInt8Supported() || AmxBf16Supported()) {
    SetAmxEnabled(true);
    body("amx on");
  }
  SetAmxEnabled(was_enabled);
}

// The scalar kernel vs a double-precision dot of the dequantized weights.
// Float types: f32 rounding only, |err| <= 1e-5 * sum|w x| + 1e-6. BF16
// rounds the activations to bf16 first (kernels.h), and so does the
// reference here (RoundToBf16Reference): the bound stays the f32 one.
// Int8 activations: additionally each x is replaced by d * round(x / d) with
// d = max|x_block| / 127, an error of at most d / 2 per element, so
// |err| <= sum_i |w_i| * d_block(i) / 2 (+ the f32 term above).
TEST(MatMulTest, ScalarMatchesDequantizedReference) {
  std::mt19937 rng(1);
  std::vector<DType> types(std::begin(kKernelTypes), std::end(kKernelTypes));
  types.push_back(DType::kQ2_K);  // a scalar kernel only; AVX-512 reads it packed
  types.push_back(DType::kQ3_K);  // likewise
  types.push_back(DType::kQ5_K);  // likewise
  types.push_back(DType::kQ6_K);  // likewise
  for (DType t : types) {
    for (const Shape& s : ShapesFor(t)) {
      const Matrix m = RandomMatrix(rng, t, s.n_rows, s.k);
      const std::vector<float> x = RandomFloats(rng, s.n_tokens * s.k, 1.0f);
      const std::vector<float> bias = RandomFloats(rng, s.n_rows, 1.0f);
      const std::vector<float> y = RunMatMul(Isa::kScalar, m, x, s.n_tokens, bias.data(), 1);
      std::vector<float> x_seen = x;  // the activations the kernel is specified to use
      if (t == DType::kBF16) {
        for (float& v : x_seen) v = RoundToBf16Reference(v);
      }
      for (int64_t tok = 0; tok < s.n_tokens; ++tok) {
        const float* xt = x_seen.data() + tok * s.k;
        for (int64_t r = 0; r < s.n_rows; ++r) {
          const float* w = m.dense.data() + r * s.k;
          double ref = bias[r], magnitude = std::fabs(bias[r]), quant_bound = 0.0;
          for (int64_t i = 0; i < s.k; ++i) {
            ref += static_cast<double>(w[i]) * xt[i];
            magnitude += std::fabs(static_cast<double>(w[i]) * xt[i]) + m.min_bound[r] * std::fabs(xt[i]);
          }
          if (UsesInt8Activations(t)) {
            for (int64_t b = 0; b < s.k / 32; ++b) {
              double amax = 0.0, wsum = 0.0;
              for (int i = 0; i < 32; ++i) {
                amax = std::max(amax, static_cast<double>(std::fabs(xt[b * 32 + i])));
                wsum += std::fabs(w[b * 32 + i]);
              }
              quant_bound += wsum * (amax / 127.0) * 0.5;
            }
          }
          const double tol = 1e-5 * magnitude + 1e-6 + quant_bound * 1.0001;
          ASSERT_NEAR(y[tok * s.n_rows + r], ref, tol)
              << DTypeName(t) << " n=" << s.n_rows << " k=" << s.k << " tokens=" << s.n_tokens << " r=" << r
              << " t=" << tok;
        }
      }
    }
  }
}

// Each SIMD level vs the scalar reference: same activations (same int8
// values; for BF16 the same bf16-rounded values, exact products), so only
// the f32 summation order differs:
// |err| <= 1e-5 * sum|w x| (+ the Q4_K minimum terms) + 1e-6.
// The K-quants beyond Q4_K have file-layout kernels at the AVX2 level (the
// AVX-512 level reads them packed: PackedKQuantsMatchScalar).
TEST(MatMulTest, SimdLevelsMatchScalar) {
  std::mt19937 rng(2);
  for (Isa isa : SupportedIsas()) {
    if (isa == Isa::kScalar) continue;
    std::vector<DType> types(std::begin(kKernelTypes), std::end(kKernelTypes));
    if (isa == Isa::kAvx2)
      types.insert(types.end(), {DType::kQ2_K, DType::kQ3_K, DType::kQ5_K, DType::kQ6_K});
    for (DType t : types) {
      ASSERT_TRUE(HasFastKernel(isa, t)) << IsaName(isa) << " " << DTypeName(t);
      for (const Shape& s : ShapesFor(t)) {
        const Matrix m = RandomMatrix(rng, t, s.n_rows, s.k);
        const std::vector<float> x = RandomFloats(rng, s.n_tokens * s.k, 1.0f);
        const std::vector<float> bias = RandomFloats(rng, s.n_rows, 1.0f);
        const std::vector<float> ref = RunMatMul(Isa::kScalar, m, x, s.n_tokens, bias.data(), 1);
        const std::vector<float> y = RunMatMul(isa, m, x, s.n_tokens, bias.data(), 2);
        for (int64_t tok = 0; tok < s.n_tokens; ++tok) {
          for (int64_t r = 0; r < s.n_rows; ++r) {
            double magnitude = std::fabs(bias[r]);
            for (int64_t i = 0; i < s.k; ++i) {
              magnitude += (std::fabs(m.dense[r * s.k + i]) + m.min_bound[r]) * std::fabs(x[tok * s.k + i]);
            }
            const size_t idx = static_cast<size_t>(tok * s.n_rows + r);
            ASSERT_NEAR(y[idx], ref[idx], 1e-5 * magnitude + 1e-6)
                << IsaName(isa) << " " << DTypeName(t) << " n=" << s.n_rows << " k=" << s.k
                << " tokens=" << s.n_tokens << " r=" << r << " t=" << tok;
          }
        }
      }
    }
  }
}

// A token's result must not depend on the batch it is in, on its position
// in the batch, or on the thread count: compared bit for bit.
TEST(MatMulTest, ResultsAreBatchAndThreadInvariant) {
  std::mt19937 rng(3);
  struct Case {
    DType t;
    int64_t k;
  };
  // BF16 also at K = 1000 (31 full 32-element chunks and a masked tail) and
  // K = 4100 (the K-blocked GEMM against GEMV and the unblocked leftover tile).
  const Case cases[] = {{DType::kF32, 45},    {DType::kF16, 45},   {DType::kBF16, 45},  {DType::kBF16, 1000},
                        {DType::kBF16, 4100}, {DType::kQ8_0, 96},  {DType::kQ4_0, 96},  {DType::kQ4_K, 512},
                        {DType::kQ5_K, 768},  {DType::kQ6_K, 512}, {DType::kQ3_K, 768}, {DType::kQ2_K, 768}};
  for (Isa isa : SupportedIsas()) {
    for (const auto [t, k] : cases) {
      const int64_t n_rows = 37, n_tokens = 11;
      const Matrix m = RandomMatrix(rng, t, n_rows, k);
      const std::vector<float> x = RandomFloats(rng, n_tokens * k, 1.0f);
      const std::vector<float> batched = RunMatMul(isa, m, x, n_tokens, nullptr, 1);
      const std::vector<float> threaded = RunMatMul(isa, m, x, n_tokens, nullptr, 3);
      ASSERT_EQ(0, std::memcmp(batched.data(), threaded.data(), batched.size() * 4))
          << IsaName(isa) << " " << DTypeName(t) << " k=" << k;
      for (int64_t tok = 0; tok < n_tokens; ++tok) {
        const std::vector<float> xt(x.begin() + tok * k, x.begin() + (tok + 1) * k);
        const std::vector<float> alone = RunMatMul(isa, m, xt, 1, nullptr, 2);
        ASSERT_EQ(0, std::memcmp(alone.data(), batched.data() + tok * n_rows, n_rows * 4))
            << IsaName(isa) << " " << DTypeName(t) << " k=" << k << " token " << tok;
      }
    }
  }
}

// Q6_K has no file-layout kernel at the AVX2 / AVX-512 levels (the model's
// path is the packed one): those go through the dequantizing fallback,
// which must still be right (f32 activations, f32 rounding only).
TEST(MatMulTest, FallbackTypeIsCorrect) {
  std::mt19937 rng(4);
  const Matrix m = RandomMatrix(rng, DType::kQ6_K, 9, 512);
  const std::vector<float> x = RandomFloats(rng, 3 * 512, 1.0f);
  EXPECT_TRUE(HasFastKernel(Isa::kScalar, DType::kQ6_K));
  int fallbacks = 0;
  for (Isa isa : SupportedIsas()) {
    if (HasFastKernel(isa, DType::kQ6_K)) continue;
    ++fallbacks;
    const std::vector<float> y = RunMatMul(isa, m, x, 3, nullptr, 2);
    for (int64_t tok = 0; tok < 3; ++tok) {
      for (int64_t r = 0; r < 9; ++r) {
        double ref = 0.0, magnitude = 0.0;
        for (int64_t i = 0; i < 512; ++i) {
          ref += static_cast<double>(m.dense[r * 512 + i]) * x[tok * 512 + i];
          magnitude += std::fabs(static_cast<double>(m.dense[r * 512 + i]) * x[tok * 512 + i]);
        }
        ASSERT_NEAR(y[tok * 9 + r], ref, 1e-5 * magnitude + 1e-6) << IsaName(isa);
      }
    }
  }
  if (fallbacks == 0) GTEST_SKIP() << "no ISA level here falls back for Q6_K";
}

// Packed Q6_K / Q5_K / Q3_K (interleaved, kquant_avx512.cc; with AMX from 16
// tokens, packed_int8_amx.cc) against the scalar kernel on the file layout:
// the same int8 activations (the SIMD quantizer gives the scalar bytes),
// the same exact int32 isum per block and the same f32 product
// float(isum) * (d_w * d_x) per block (Q5_K: and the minimum's product),
// summed in another order: the SimdLevelsMatchScalar bound. A wrong value,
// fifth bit, scale or offset moves a result by about sum / K or more, far
// past it. Shapes: K = 256 (one half group), 512 (one full), 768 (full +
// half), 2048, 5632 (11 full, the TinyLlama down projection); rows around
// the 4-row tile and the 16-row task; tokens around the 2- and 3-token
// tiles and the 16-token AMX tile.
// y (a packed kernel's output) against ref (the scalar kernel's) within the
// f32 summation bound: 1e-5 of the sum of |w * x| (and |bias|) per output.
void ExpectWithinSummationBound(const Matrix& m, const Shape& s, const std::vector<float>& x,
                                const std::vector<float>& bias, const std::vector<float>& y,
                                const std::vector<float>& ref, const std::string& what) {
  for (int64_t tok = 0; tok < s.n_tokens; ++tok) {
    for (int64_t r = 0; r < s.n_rows; ++r) {
      double magnitude = std::fabs(bias[r]);
      for (int64_t i = 0; i < s.k; ++i) {
        magnitude += (std::fabs(m.dense[r * s.k + i]) + m.min_bound[r]) * std::fabs(x[tok * s.k + i]);
      }
      const size_t idx = static_cast<size_t>(tok * s.n_rows + r);
      ASSERT_NEAR(y[idx], ref[idx], 1e-5 * magnitude + 1e-6)
          << what << " n=" << s.n_rows << " k=" << s.k << " tokens=" << s.n_tokens << " r=" << r
          << " t=" << tok;
    }
  }
}

// A random type-t matrix of shape s, packed, against the scalar kernel on
// its file layout (ExpectWithinSummationBound); returns the packed row
// stride (0 when the type was not packed, which fails the test).
int64_t ExpectPackedMatchesScalar(std::mt19937& rng, DType t, const Shape& s, ThreadPool& pool,
                                  const std::string& what) {
  const Matrix m = RandomMatrix(rng, t, s.n_rows, s.k);
  const std::vector<float> x = RandomFloats(rng, s.n_tokens * s.k, 1.0f);
  const std::vector<float> bias = RandomFloats(rng, s.n_rows, 1.0f);
  const std::vector<float> ref = RunMatMul(Isa::kScalar, m, x, s.n_tokens, bias.data(), 1);
  PackedWeights packer;
  const PackedMatrix packed = packer.Pack(m.view);
  EXPECT_NE(packed.view.data, m.view.data) << what;
  if (packed.layout == nullptr) {
    ADD_FAILURE() << what << ": not packed";
    return 0;
  }
  std::vector<float> y(ref.size(), -1.0f);
  MatMulWithIsa(ActiveIsa(), packed.view, packed.layout, x.data(), s.n_tokens, bias.data(), y.data(), pool);
  ExpectWithinSummationBound(m, s, x, bias, y, ref, what);
  return packed.layout->row_stride;
}

TEST(MatMulTest, PackedKQuantsMatchScalar) {
  if (!PacksType(ActiveIsa(), DType::kQ6_K)) GTEST_SKIP() << "the active ISA does not pack Q6_K";
  std::mt19937 rng(9);
  const Shape shapes[] = {{1, 256, 1},    {3, 256, 2},  {5, 512, 3},   {7, 768, 5},
                          {17, 768, 67},  {4, 2048, 1}, {33, 2048, 4}, {9, 5632, 3},
                          {21, 1280, 16}, {2, 256, 7},  {37, 768, 35}, {16, 512, 16}};
  ThreadPool pool(2);
  WithAndWithoutAmx([&](const char* amx) {
    for (DType t : {DType::kQ6_K, DType::kQ5_K, DType::kQ3_K, DType::kQ2_K}) {
      ASSERT_TRUE(PacksType(ActiveIsa(), t)) << DTypeName(t);
      for (const Shape& s : shapes) {
        const int64_t stride =
            ExpectPackedMatchesScalar(rng, t, s, pool, std::string(DTypeName(t)) + ", " + amx);
        // The file's bytes (Q5_K / Q3_K: plus 4 per super-block, the unpacked scales), 64-byte rows.
        const int64_t extra = t == DType::kQ6_K || t == DType::kQ2_K ? 0 : s.k / 256 * 4;
        ASSERT_EQ(stride, (RowBytes(t, s.k) + extra + 63) / 64 * 64) << DTypeName(t);
      }
    }
  });
}

// Shapes for the packed layouts: K / 32 = 1, 3, 5, 7 (Q8_0: row panels), 8 (one half group), 9
// and 11 (a padded full group), 16 and 32 (full groups only), 24 (full +
// half), 25 (two full, the second padded); row counts around the 4-row tile
// and the 16-row task, token counts around the 3-token tile.
std::vector<Shape> PackedShapes(DType t) {
  if (t == DType::kQ4_K) {
    std::vector<Shape> shapes = ShapesFor(t);
    shapes.insert(shapes.end(), {{5, 2048, 2}, {9, 5632, 4}, {17, 1280, 10}, {4, 256, 64}});
    return shapes;
  }
  return {{1, 32, 1},  {3, 96, 2},   {17, 160, 67}, {37, 224, 3}, {5, 256, 4}, {9, 288, 5},
          {8, 352, 9}, {21, 512, 3}, {6, 768, 7},   {19, 800, 8}, {5, 1024, 1}};
}

// Packed Q8_0 / Q4_0 / Q4_K are K-interleaved (Q8_0 below 8 blocks: row
// panels, blocks summed in order per row) (packed_weights.h): the same
// f32 products float(isum_b) * (d_w * d_x) per block b (Q4_K: and the
// minimum's product), summed in another order, so the two differ only by
// f32 summation rounding (the file-layout Q4_K kernel rounds a block's sum
// per 4-element lane, bounded the same way). Each sum is over at most
// K / 64 + 1 terms per lane plus a 16-lane tree (4 levels), so
// |err| <= 2 * (K / 64 + 5) * 2^-24 * sum_b |products| (first order), with
// sum |products| <= sum_i |w_i| * (|x_i| + d_block(i) / 2).
TEST(MatMulTest, PackedWeightsMatchFileLayout) {
  std::mt19937 rng(5);
  int packed_types = 0;
  for (DType t : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K}) {
    if (!PacksType(ActiveIsa(), t)) continue;
    ++packed_types;
    for (const Shape& s : PackedShapes(t)) {
      const Matrix m = RandomMatrix(rng, t, s.n_rows, s.k);
      const std::vector<float> x = RandomFloats(rng, s.n_tokens * s.k, 1.0f);
      const std::vector<float> bias = RandomFloats(rng, s.n_rows, 1.0f);
      const std::vector<float> expected = RunMatMul(ActiveIsa(), m, x, s.n_tokens, bias.data(), 2);
      PackedWeights packer;
      const PackedMatrix packed = packer.Pack(m.view);
      ASSERT_NE(packed.view.data, m.view.data);
      ASSERT_NE(packed.layout, nullptr);
      ThreadPool pool(2);
      std::vector<float> y(expected.size());
      MatMulWithIsa(ActiveIsa(), packed.view, packed.layout, x.data(), s.n_tokens, bias.data(), y.data(),
                    pool);
      for (int64_t tok = 0; tok < s.n_tokens; ++tok) {
        const float* xt = x.data() + tok * s.k;
        for (int64_t r = 0; r < s.n_rows; ++r) {
          double products = std::fabs(bias[r]);
          for (int64_t b = 0; b < s.k / 32; ++b) {
            double amax = 0.0;
            for (int i = 0; i < 32; ++i) {
              amax = std::max(amax, static_cast<double>(std::fabs(xt[b * 32 + i])));
            }
            for (int i = 0; i < 32; ++i) {
              products += (std::fabs(m.dense[r * s.k + b * 32 + i]) + 2.0 * m.min_bound[r]) *
                          (std::fabs(xt[b * 32 + i]) + amax / 254.0);
            }
          }
          const double tol = 2.0 * (static_cast<double>(s.k) / 64.0 + 5.0) * 0x1p-24 * products;
          const size_t idx = static_cast<size_t>(tok * s.n_rows + r);
          ASSERT_NEAR(y[idx], expected[idx], tol) << DTypeName(t) << " n=" << s.n_rows << " k=" << s.k
                                                  << " tokens=" << s.n_tokens << " r=" << r << " t=" << tok;
        }
      }
    }
  }
  if (packed_types == 0) GTEST_SKIP() << "the active ISA reads no packed layout";
}

// The BF16 panel layout (packed_weights.h), byte for byte, from its
// definition: panel p, pair i, row r holds elements (16p + r, 2i) and
// (16p + r, 2i + 1), zero past K and past the last row.
TEST(MatMulTest, Bf16PanelLayout) {
  std::mt19937 rng(7);
  for (const auto& [n_rows, k] : {std::pair<int64_t, int64_t>{1, 1}, {17, 5}, {33, 40}, {16, 2}}) {
    const Matrix m = RandomMatrix(rng, DType::kBF16, n_rows, k);
    const PackedLayout layout = PackedLayoutFor(DType::kBF16, n_rows, k);
    const int64_t pairs = (k + 1) / 2, panels = (n_rows + 15) / 16;
    ASSERT_EQ(layout.bytes, panels * pairs * 64);
    ASSERT_EQ(layout.row_stride * 16, pairs * 64);
    std::vector<uint8_t> packed(static_cast<size_t>(layout.bytes), 0xAB);
    PackMatrix(m.view, layout, packed.data());
    for (int64_t p = 0; p < panels; ++p) {
      for (int64_t i = 0; i < pairs; ++i) {
        for (int64_t r = 0; r < 16; ++r) {
          for (int64_t j = 0; j < 2; ++j) {
            const int64_t row = 16 * p + r, col = 2 * i + j;
            uint16_t expected = 0, got = 0;
            if (row < n_rows && col < k) std::memcpy(&expected, m.bytes.data() + (row * k + col) * 2, 2);
            std::memcpy(&got, packed.data() + ((p * pairs + i) * 16 + r) * 4 + j * 2, 2);
            ASSERT_EQ(got, expected) << "n=" << n_rows << " k=" << k << " row " << row << " col " << col;
          }
        }
      }
    }
  }
}

// The Q8_0 row-panel layout (packed_weights.h), byte for byte, from its
// definition: panel p, block b, step s, row r holds bytes 4s..4s+3 of row
// 16p + r's block b (+ 128), then the block's scale as f32; zero bytes and
// scale 0 past the last row. K of 7 blocks is the largest that uses it.
TEST(MatMulTest, Q8_0RowPanelLayout) {
  std::mt19937 rng(12);
  ASSERT_TRUE(Q8_0UsesRowPanels(224));
  ASSERT_FALSE(Q8_0UsesRowPanels(256));
  for (const auto& [n_rows, k] : {std::pair<int64_t, int64_t>{1, 32}, {17, 64}, {33, 224}, {16, 96}}) {
    const Matrix m = RandomMatrix(rng, DType::kQ8_0, n_rows, k);
    const PackedLayout layout = PackedLayoutFor(DType::kQ8_0, n_rows, k);
    const int64_t blocks = k / 32, panels = (n_rows + 15) / 16;
    ASSERT_TRUE(layout.row_panels);
    ASSERT_EQ(layout.bytes, panels * blocks * (8 * 64 + 64));
    ASSERT_EQ(layout.row_stride * 16, blocks * (8 * 64 + 64));
    std::vector<uint8_t> packed(static_cast<size_t>(layout.bytes), 0xAB);
    PackMatrix(m.view, layout, packed.data());
    for (int64_t p = 0; p < panels; ++p) {
      for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* block = packed.data() + (p * blocks + b) * (8 * 64 + 64);
        for (int64_t r = 0; r < 16; ++r) {
          const int64_t row = 16 * p + r;
          const uint8_t* src = m.bytes.data() + (row * blocks + b) * 34;  // f16 d, then 32 int8
          float scale = 0.0f;
          std::memcpy(&scale, block + 512 + r * 4, 4);
          uint16_t d16 = 0;
          if (row < n_rows) std::memcpy(&d16, src, 2);
          ASSERT_EQ(scale, row < n_rows ? F16ToF32(d16) : 0.0f)
              << "k=" << k << " row " << row << " block " << b;
          for (int e = 0; e < 32; ++e) {
            const uint8_t expected =
                row < n_rows ? static_cast<uint8_t>(static_cast<int8_t>(src[2 + e]) + 128) : 0;
            ASSERT_EQ(block[(e / 4) * 64 + r * 4 + e % 4], expected)
                << "k=" << k << " row " << row << " block " << b << " element " << e;
          }
        }
      }
    }
  }
}

// Packed BF16 / F16 / F32 (outer-product panels) against the scalar kernel
// on the file layout. Both use the same activations (bf16-rounded for BF16,
// f32 as they are for F16 / F32), so every product is exact (BF16) or
// rounded once the same way, and only the f32 summation differs (sequential over elements vs
// over pairs, vdpbf16ps's own rounding and denormal flushing). Threshold as
// for the SIMD levels, |err| <= 1e-5 * (|bias| + sum|w x|) + 1e-6: the
// summation error is ~2^-24 times that sum, while one wrong, missing or
// misplaced element moves a result by ~sum / K >= 2.4e-4 * sum (K <= 4100).
// Shapes: odd K (1, 5, 31, 33, 1001, 4101: a half-padded last pair), K =
// 4100 in 3 parts (kPairBlock), row counts 1, 17, 33, 37, 130 (partial last
// panel) and 16, 64 (none), 1..13 tokens (every leftover token tile) and 64.
TEST(MatMulTest, PackedPanelsMatchScalar) {
  if (!PacksType(ActiveIsa(), DType::kBF16)) GTEST_SKIP() << "the active ISA does not pack BF16";
  std::mt19937 rng(8);
  std::vector<Shape> shapes = {{1, 1, 1},      {17, 5, 64},    {33, 40, 13},  {16, 72, 64},
                               {37, 1000, 2},  {64, 1001, 64}, {130, 31, 7},  {17, 33, 1},
                               {33, 4100, 64}, {17, 4101, 3},  {1, 2048, 64}, {64, 2048, 12}};
  for (int64_t t = 1; t <= 13; ++t) shapes.push_back({33, 72, t});
  ThreadPool pool(2);
  WithAndWithoutAmx([&](const char* amx) {
    for (DType t : {DType::kBF16, DType::kF16, DType::kF32}) {
      ASSERT_TRUE(PacksType(ActiveIsa(), t)) << DTypeName(t);
      for (const Shape& s : shapes) {
        ExpectPackedMatchesScalar(rng, t, s, pool, std::string(DTypeName(t)) + ", " + amx);
      }
    }
  });
}

// The batch-invariance contract holds for the packed kernels too (they have
// their own tiles): bit-identical alone, batched, and at 1 / 3 threads.
// BF16 at K = 45 (odd), 1000 and 4100 (K in 3 parts in the GEMM, whole in
// the GEMV).
TEST(MatMulTest, PackedResultsAreBatchAndThreadInvariant) {
  std::mt19937 rng(6);
  int packed_types = 0;
  WithAndWithoutAmx([&](const char* amx) {
    for (DType t : {DType::kQ8_0, DType::kQ4_0, DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K,
                    DType::kQ6_K, DType::kBF16, DType::kF16, DType::kF32}) {
      if (!PacksType(ActiveIsa(), t)) continue;
      ++packed_types;
      std::vector<int64_t> ks = {96, 768, 800};
      if (t == DType::kQ4_K || t == DType::kQ5_K) ks = {512, 768};
      if (t == DType::kQ6_K || t == DType::kQ3_K || t == DType::kQ2_K) ks = {256, 768, 2048};
      if (t == DType::kBF16) ks = {45, 1000, 4100};
      if (t == DType::kF16) ks = {45, 2049, 4100};  // 2049: K in 2 parts (F16Step::kPart), odd
      if (t == DType::kF32) ks = {45, 1000, 2500};
      // 10 tokens: the int8 GEMM's last four run as two 2-token tiles; 35:
      // with AMX, two 16-token AMX tiles and 3 tokens (and 5 of the 37 rows)
      // through the AVX-512 tiles, while each token alone is a GEMV.
      for (int64_t k : ks) {
        for (int64_t n_tokens : {10, 11, 35}) {
          const int64_t n_rows = 37;
          Matrix m = RandomMatrix(rng, t, n_rows, k);
          PackedWeights packer;
          UsePacked(packer, m);
          ASSERT_NE(m.packed, nullptr);
          const std::vector<float> x = RandomFloats(rng, n_tokens * k, 1.0f);
          const std::vector<float> batched = RunMatMul(ActiveIsa(), m, x, n_tokens, nullptr, 1);
          const std::vector<float> threaded = RunMatMul(ActiveIsa(), m, x, n_tokens, nullptr, 3);
          ASSERT_EQ(0, std::memcmp(batched.data(), threaded.data(), batched.size() * 4))
              << DTypeName(t) << " k=" << k << ", " << amx;
          for (int64_t tok = 0; tok < n_tokens; ++tok) {
            const std::vector<float> xt(x.begin() + tok * k, x.begin() + (tok + 1) * k);
            const std::vector<float> alone = RunMatMul(ActiveIsa(), m, xt, 1, nullptr, 2);
            ASSERT_EQ(0, std::memcmp(alone.data(), batched.data() + tok * n_rows, n_rows * 4))
                << DTypeName(t) << " k=" << k << " tokens " << n_tokens << " token " << tok << ", " << amx;
          }
        }
      }
    }
  });
  if (packed_types == 0) GTEST_SKIP() << "the active ISA reads no packed layout";
}

// The AMX int8 kernel (packed_int8_amx.cc) against the AVX-512 one, bit
// for bit, on the packed Q8_0 / Q4_0 / Q3_K..Q6_K layouts: K with full groups only
// (2048), a half group (768 = 16 + 8 blocks, 160 = one half group of 5
// blocks), a padded full group (288 = 9 blocks, 96 = 3 blocks, 5632 = 176
// blocks), rows that leave a partial 16-row panel (37, 21), tokens that
// leave 1..8 for the AVX-512 tiles or 9..15 for a padded AMX tile (25, 29,
// 31, 45; 24 leaves 8, the last count not padded), with a bias, at 1 and 3
// threads. Q8_0 takes AMX from 32 tokens only (interleaved_avx512.cc), so its
// AMX tiles are the shapes of 33 tokens and more.
TEST(MatMulTest, AmxMatchesAvx512BitForBit) {
  if (!AmxInt8Supported()) GTEST_SKIP() << "no AMX int8 on this machine";
  const bool was_enabled = SetAmxEnabled(true);
  std::mt19937 rng(11);
  const std::vector<Shape> shapes = {{48, 2048, 16}, {37, 768, 33},  {21, 288, 20}, {64, 160, 16},
                                     {32, 5632, 48}, {16, 96, 64},   {37, 800, 17}, {21, 288, 25},
                                     {37, 768, 29},  {48, 2048, 24}, {37, 768, 45}};
  // K-quants (K a multiple of 256): full groups only (2048, 5632 = 11 groups),
  // one full and one half group (768), a half group only (256).
  const std::vector<Shape> kquant_shapes = {{48, 2048, 16}, {37, 768, 33}, {21, 256, 20}, {32, 5632, 48},
                                            {16, 1280, 64}, {37, 512, 17}, {37, 768, 31}, {21, 256, 25}};
  for (DType t :
       {DType::kQ8_0, DType::kQ4_0, DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    const bool kquant = BlockElems(t) == 256;

    for (const Shape& s : kquant ? kquant_shapes : shapes) {
      Matrix m = RandomMatrix(rng, t, s.n_rows, s.k);
      PackedWeights packer;
      UsePacked(packer, m);
      ASSERT_NE(m.packed, nullptr);
      const std::vector<float> x = RandomFloats(rng, s.n_tokens * s.k, 1.0f);
      const std::vector<float> bias = RandomFloats(rng, s.n_rows, 1.0f);
      for (int threads : {1, 3}) {
        SetAmxEnabled(false);
        const std::vector<float> avx512 = RunMatMul(ActiveIsa(), m, x, s.n_tokens, bias.data(), threads);
        SetAmxEnabled(true);
        const uint64_t calls_before = PackedInt8PanelsAmxCalls();
        const std::vector<float> amx = RunMatMul(ActiveIsa(), m, x, s.n_tokens, bias.data(), threads);
        // Every shape here has a whole 16-row panel and enough tokens for
        // the AMX kernel (Q8_0: 32, and K of 8 blocks or more: smaller K
        // is packed in row panels, which have no AMX kernel), so the AMX
        // side must have taken it.
        if (t != DType::kQ8_0 || (s.n_tokens >= 32 && !Q8_0UsesRowPanels(s.k))) {
          ASSERT_GT(PackedInt8PanelsAmxCalls(), calls_before)
              << DTypeName(t) << " n=" << s.n_rows << " k=" << s.k << " tokens=" << s.n_tokens
              << ": the AMX kernel never ran";
        }
        for (size_t i = 0; i < amx.size(); ++i) {
          ASSERT_EQ(std::bit_cast<uint32_t>(amx[i]), std::bit_cast<uint32_t>(avx512[i]))
              << DTypeName(t) << " n=" << s.n_rows << " k=" << s.k << " tokens=" << s.n_tokens
              << " threads=" << threads << " row " << i % s.n_rows << " token " << i / s.n_rows << ": "
              << amx[i] << " vs " << avx512[i];
        }
      }
    }
  }
  SetAmxEnabled(was_enabled);
}

TEST(IsaTest, NamesAndSupport) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    ASSERT_TRUE(IsaFromName(IsaName(isa)).has_value());
    EXPECT_EQ(*IsaFromName(IsaName(isa)), isa);
  }
  EXPECT_FALSE(IsaFromName("sse9").has_value());
  EXPECT_TRUE(CpuSupports(Isa::kScalar));
  EXPECT_TRUE(CpuSupports(BestSupportedIsa()));
  EXPECT_TRUE(CpuSupports(ActiveIsa()));
  if (CpuSupports(Isa::kAvx512)) {
    EXPECT_TRUE(CpuSupports(Isa::kAvx2));
  }
}

}  // namespace
}  // namespace deepinfer::cpu
