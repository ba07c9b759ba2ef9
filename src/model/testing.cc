#include "model/testing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>

#include "core/check.h"
#include "model/config_loader.h"
#include "model/registry.h"
#include "tensor/dequant.h"

namespace deepinfer::testing {

namespace {

// splitmix64: the same stream on every platform (std distributions are not).
struct Rng {
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1).
  float Uniform() { return static_cast<float>(static_cast<double>(Next() >> 11) * 0x1.0p-52 - 1.0); }
};

std::vector<float> RandomValues(Rng& rng, int64_t n, float center, float spread) {
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) {
    x = center + spread * rng.Uniform();
  }
  return v;
}

void AddMatrix(InMemoryWeightStore& store, Rng& rng, const std::string& name, int64_t rows, int64_t cols,
               DType dtype, float gain = 1.0f) {
  // Uniform with variance gain^2 / cols: activations stay O(1) layer to layer.
  std::vector<float> v =
      RandomValues(rng, rows * cols, 0.0f, gain * std::sqrt(3.0f / static_cast<float>(cols)));
  if (dtype == DType::kF32) {
    store.AddF32(name, {rows, cols}, v);
    return;
  }
  const int64_t row_bytes = RowBytes(dtype, cols);
  DI_CHECK(row_bytes > 0);
  std::vector<uint8_t> bytes(static_cast<size_t>(row_bytes * rows));
  for (int64_t r = 0; r < rows; ++r) {
    DI_CHECK(QuantizeRow(dtype, v.data() + r * cols, bytes.data() + r * row_bytes, cols));
  }
  store.Add(name, dtype, {rows, cols}, std::move(bytes));
}

// Reads a tensor as f64 [rows * cols].
std::vector<double> ReadTensor(const WeightStore& store, const std::string& name) {
  const TensorView* t = store.Find(name);
  DI_CHECK_MSG(t != nullptr, name.c_str());
  const int64_t rows = t->rows(), cols = t->cols(), row_bytes = RowBytes(t->dtype, cols);
  std::vector<float> row(static_cast<size_t>(cols));
  std::vector<double> out;
  out.reserve(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) {
    DequantizeRow(t->dtype, static_cast<const uint8_t*>(t->data) + r * row_bytes, row.data(), cols);
    out.insert(out.end(), row.begin(), row.end());
  }
  return out;
}

using Vec = std::vector<double>;

// y = W x (+ b), W [rows, cols] row-major.
Vec Linear(const Vec& w, const Vec& x, const Vec* b) {
  const size_t cols = x.size(), rows = w.size() / cols;
  Vec y(rows, 0.0);
  for (size_t r = 0; r < rows; ++r) {
    double s = 0;
    for (size_t c = 0; c < cols; ++c) {
      s += w[r * cols + c] * x[c];
    }
    y[r] = s + (b ? (*b)[r] : 0.0);
  }
  return y;
}

Vec RmsNormRef(const Vec& x, const Vec& w, double eps) {
  double ms = 0;
  for (double v : x) {
    ms += v * v;
  }
  ms /= static_cast<double>(x.size());
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    y[i] = x[i] / std::sqrt(ms + eps) * w[i];
  }
  return y;
}

// HF's inverse frequencies, written as transformers computes them (the
// llama3 branch follows `_compute_llama3_parameters`).
Vec InvFreq(const ModelConfig& c, const Vec& freq_factors) {
  const int64_t d = c.rope_dim;
  Vec inv(static_cast<size_t>(d / 2));
  for (int64_t i = 0; i < d / 2; ++i) {
    inv[i] = 1.0 / std::pow(c.rope_theta, static_cast<double>(2 * i) / static_cast<double>(d));
  }
  const RopeScaling& s = c.rope_scaling;
  if (s.type == "linear") {
    for (double& f : inv) {
      f /= s.factor;
    }
  } else if (s.type == "llama3") {
    const double old_len = static_cast<double>(s.original_max_position);
    for (double& f : inv) {
      const double wavelen = 2 * M_PI / f;
      double scaled = wavelen > old_len / s.low_freq_factor ? f / s.factor : f;
      const double smooth =
          (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      const bool medium =
          !(wavelen < old_len / s.high_freq_factor) && !(wavelen > old_len / s.low_freq_factor);
      if (medium) {
        scaled = (1 - smooth) * scaled / s.factor + smooth * scaled;
      }
      f = scaled;
    }
  }
  for (size_t i = 0; i < freq_factors.size(); ++i) {
    inv[i] /= freq_factors[i];
  }
  return inv;
}

// Rotates one head in place (x has head_dim entries).
void RopeRef(double* x, const ModelConfig& c, const Vec& inv_freq, int64_t pos) {
  const int64_t half = c.rope_dim / 2;
  Vec out(x, x + c.rope_dim);
  for (int64_t i = 0; i < half; ++i) {
    const double a = static_cast<double>(pos) * inv_freq[i];
    if (c.rope_style == RopeStyle::kNeox) {
      // x * cos + rotate_half(x) * sin
      out[i] = x[i] * std::cos(a) - x[i + half] * std::sin(a);
      out[i + half] = x[i + half] * std::cos(a) + x[i] * std::sin(a);
    } else {
      // complex multiply of (x[2i] + i x[2i+1]) by e^{ia}
      out[2 * i] = x[2 * i] * std::cos(a) - x[2 * i + 1] * std::sin(a);
      out[2 * i + 1] = x[2 * i] * std::sin(a) + x[2 * i + 1] * std::cos(a);
    }
  }
  std::copy(out.begin(), out.end(), x);
}

}  // namespace

ModelConfig TinyConfig(const std::string& arch, RopeStyle rope_style) {
  const ArchitectureSpec* spec = FindArchitectureByName(arch);
  DI_CHECK_MSG(spec != nullptr, arch.c_str());
  ModelConfig c;
  c.arch = arch;
  c.vocab_size = 96;
  c.hidden_size = 32;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = spec->qk_norm ? 16 : 8;
  c.rope_dim = c.head_dim;
  c.intermediate_size = 48;
  c.max_position = 512;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 10000.0;
  c.rope_style = rope_style;
  c.attention_bias = spec->qkv_bias;
  c.qk_norm = spec->qk_norm;
  c.sliding_window.assign(static_cast<size_t>(c.num_layers), 0);
  return c;
}

std::shared_ptr<InMemoryWeightStore> MakeRandomWeights(const ModelConfig& c, WeightNaming naming,
                                                       uint64_t seed, DType matrix_dtype) {
  auto store = std::make_shared<InMemoryWeightStore>(naming);
  Rng rng{seed};
  auto name = [naming](TensorRole role, int64_t layer = -1) { return WeightName(naming, role, layer); };
  const int64_t h = c.hidden_size, q = c.q_dim(), kv = c.kv_dim(), ff = c.intermediate_size;
  // A large embedding gain makes the logits spread out (a "sharp" model).
  AddMatrix(*store, rng, name(TensorRole::kTokenEmbedding), c.vocab_size, h, matrix_dtype, 8.0f);
  store->AddF32(name(TensorRole::kOutputNorm), {h}, RandomValues(rng, h, 1.0f, 0.2f));
  if (!c.tie_word_embeddings) {
    AddMatrix(*store, rng, name(TensorRole::kOutput), c.vocab_size, h, matrix_dtype, 4.0f);
  }
  for (int64_t l = 0; l < c.num_layers; ++l) {
    store->AddF32(name(TensorRole::kAttnNorm, l), {h}, RandomValues(rng, h, 1.0f, 0.2f));
    AddMatrix(*store, rng, name(TensorRole::kQ, l), q, h, matrix_dtype, 2.0f);
    AddMatrix(*store, rng, name(TensorRole::kK, l), kv, h, matrix_dtype, 2.0f);
    AddMatrix(*store, rng, name(TensorRole::kV, l), kv, h, matrix_dtype);
    AddMatrix(*store, rng, name(TensorRole::kO, l), h, q, matrix_dtype);
    if (c.attention_bias) {
      store->AddF32(name(TensorRole::kQBias, l), {q}, RandomValues(rng, q, 0.0f, 0.5f));
      store->AddF32(name(TensorRole::kKBias, l), {kv}, RandomValues(rng, kv, 0.0f, 0.5f));
      store->AddF32(name(TensorRole::kVBias, l), {kv}, RandomValues(rng, kv, 0.0f, 0.5f));
    }
    if (c.qk_norm) {
      store->AddF32(name(TensorRole::kQNorm, l), {c.head_dim}, RandomValues(rng, c.head_dim, 1.0f, 0.3f));
      store->AddF32(name(TensorRole::kKNorm, l), {c.head_dim}, RandomValues(rng, c.head_dim, 1.0f, 0.3f));
    }
    store->AddF32(name(TensorRole::kFfnNorm, l), {h}, RandomValues(rng, h, 1.0f, 0.2f));
    AddMatrix(*store, rng, name(TensorRole::kGate, l), ff, h, matrix_dtype);
    AddMatrix(*store, rng, name(TensorRole::kUp, l), ff, h, matrix_dtype);
    AddMatrix(*store, rng, name(TensorRole::kDown, l), h, ff, matrix_dtype);
  }
  return store;
}

std::vector<std::vector<double>> ReferenceForward(const ModelConfig& c, const WeightStore& store,
                                                  const std::vector<int32_t>& tokens) {
  auto get = [&](TensorRole role, int64_t layer = -1) {
    return ReadTensor(store, WeightName(store.naming(), role, layer));
  };
  auto has = [&](TensorRole role, int64_t layer = -1) {
    return store.Find(WeightName(store.naming(), role, layer)) != nullptr;
  };
  const size_t n = tokens.size();
  const int64_t h = c.hidden_size, hd = c.head_dim, nh = c.num_heads, nkv = c.num_kv_heads;
  const Vec embedding = get(TensorRole::kTokenEmbedding);
  const Vec inv_freq = InvFreq(c, has(TensorRole::kRopeFreqs) ? get(TensorRole::kRopeFreqs) : Vec());

  std::vector<Vec> x(n);
  for (size_t t = 0; t < n; ++t) {
    x[t].assign(&embedding[tokens[t] * h], &embedding[(tokens[t] + 1) * h]);
  }

  for (int64_t l = 0; l < c.num_layers; ++l) {
    const Vec attn_norm = get(TensorRole::kAttnNorm, l), wq = get(TensorRole::kQ, l);
    const Vec wk = get(TensorRole::kK, l), wv = get(TensorRole::kV, l), wo = get(TensorRole::kO, l);
    Vec bq, bk, bv, bo, qn, kn;
    if (has(TensorRole::kQBias, l)) {
      bq = get(TensorRole::kQBias, l);
    }
    if (has(TensorRole::kKBias, l)) {
      bk = get(TensorRole::kKBias, l);
    }
    if (has(TensorRole::kVBias, l)) {
      bv = get(TensorRole::kVBias, l);
    }
    if (has(TensorRole::kOBias, l)) {
      bo = get(TensorRole::kOBias, l);
    }
    if (c.qk_norm) {
      qn = get(TensorRole::kQNorm, l), kn = get(TensorRole::kKNorm, l);
    }
    std::vector<Vec> q(n), k(n), v(n);
    for (size_t t = 0; t < n; ++t) {
      const Vec xn = RmsNormRef(x[t], attn_norm, c.rms_norm_eps);
      q[t] = Linear(wq, xn, bq.empty() ? nullptr : &bq);
      k[t] = Linear(wk, xn, bk.empty() ? nullptr : &bk);
      v[t] = Linear(wv, xn, bv.empty() ? nullptr : &bv);
      for (int64_t i = 0; i < nh; ++i) {
        if (c.qk_norm) {
          Vec head(&q[t][i * hd], &q[t][(i + 1) * hd]);
          head = RmsNormRef(head, qn, c.rms_norm_eps);
          std::copy(head.begin(), head.end(), &q[t][i * hd]);
        }
        RopeRef(&q[t][i * hd], c, inv_freq, static_cast<int64_t>(t));
      }
      for (int64_t i = 0; i < nkv; ++i) {
        if (c.qk_norm) {
          Vec head(&k[t][i * hd], &k[t][(i + 1) * hd]);
          head = RmsNormRef(head, kn, c.rms_norm_eps);
          std::copy(head.begin(), head.end(), &k[t][i * hd]);
        }
        RopeRef(&k[t][i * hd], c, inv_freq, static_cast<int64_t>(t));
      }
    }
    const int64_t window = c.sliding_window[static_cast<size_t>(l)];
    for (size_t t = 0; t < n; ++t) {
      Vec attn(static_cast<size_t>(nh * hd), 0.0);
      for (int64_t i = 0; i < nh; ++i) {
        const int64_t g = i / (nh / nkv);
        Vec p(t + 1, 0.0);
        double mx = -1e300;
        for (size_t j = 0; j <= t; ++j) {
          const bool masked = window > 0 && static_cast<int64_t>(t - j) >= window;
          if (masked) {
            continue;
          }
          double s = 0;
          for (int64_t d = 0; d < hd; ++d) {
            s += q[t][i * hd + d] * k[j][g * hd + d];
          }
          p[j] = s / std::sqrt(static_cast<double>(hd));
          mx = std::max(mx, p[j]);
        }
        double z = 0;
        for (size_t j = 0; j <= t; ++j) {
          const bool masked = window > 0 && static_cast<int64_t>(t - j) >= window;
          p[j] = masked ? 0.0 : std::exp(p[j] - mx);
          z += p[j];
        }
        for (size_t j = 0; j <= t; ++j) {
          for (int64_t d = 0; d < hd; ++d) {
            attn[i * hd + d] += p[j] / z * v[j][g * hd + d];
          }
        }
      }
      const Vec o = Linear(wo, attn, bo.empty() ? nullptr : &bo);
      for (int64_t d = 0; d < h; ++d) {
        x[t][d] += o[d];
      }
    }
    const Vec ffn_norm = get(TensorRole::kFfnNorm, l), wg = get(TensorRole::kGate, l);
    const Vec wu = get(TensorRole::kUp, l), wd = get(TensorRole::kDown, l);
    for (size_t t = 0; t < n; ++t) {
      const Vec xn = RmsNormRef(x[t], ffn_norm, c.rms_norm_eps);
      Vec g = Linear(wg, xn, nullptr);
      const Vec u = Linear(wu, xn, nullptr);
      for (size_t i = 0; i < g.size(); ++i) {
        g[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
      }
      const Vec d = Linear(wd, g, nullptr);
      for (int64_t i = 0; i < h; ++i) {
        x[t][i] += d[i];
      }
    }
  }
  const Vec out_norm = get(TensorRole::kOutputNorm);
  const Vec w_out = c.tie_word_embeddings ? embedding : get(TensorRole::kOutput);
  std::vector<Vec> logits(n);
  for (size_t t = 0; t < n; ++t) {
    logits[t] = Linear(w_out, RmsNormRef(x[t], out_norm, c.rms_norm_eps), nullptr);
  }
  return logits;
}

std::vector<float> RunChunks(Model& model, const std::vector<int32_t>& tokens,
                             const std::vector<int64_t>& chunk_sizes, int64_t block_size) {
  const ModelConfig& c = model.config();
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t n_blocks = (n + block_size - 1) / block_size;
  // Spare blocks and a reversed table: position order != block id order.
  KvCache kv(c, n_blocks + 3, block_size);
  std::vector<int32_t> table(static_cast<size_t>(n_blocks));
  for (int64_t b = 0; b < n_blocks; ++b) {
    table[b] = static_cast<int32_t>(n_blocks + 2 - b);
  }
  std::vector<float> logits(static_cast<size_t>(n * c.vocab_size));
  int64_t pos = 0;
  for (int64_t size : chunk_sizes) {
    ForwardBatch batch;
    SequenceChunk seq;
    seq.tokens.assign(tokens.begin() + pos, tokens.begin() + pos + size);
    seq.start_pos = pos;
    seq.block_table = table;
    seq.logits = SequenceChunk::Logits::kAll;
    batch.seqs.push_back(seq);
    Status s = model.Forward(batch, kv, logits.data() + pos * c.vocab_size);
    DI_CHECK_MSG(s.ok(), s.ToString().c_str());
    pos += size;
  }
  DI_CHECK(pos == n);
  return logits;
}

std::vector<float> PromptThenTokenLogits(Model& model, const std::vector<int32_t>& prompt, bool with_hidden) {
  const ModelConfig& c = model.config();
  const auto n = static_cast<int64_t>(prompt.size());
  const int64_t block_size = 4, n_blocks = (n + 1 + block_size - 1) / block_size;
  KvCache kv(c, n_blocks, block_size);
  ForwardBatch batch;
  SequenceChunk seq;
  seq.tokens = prompt;
  seq.logits = SequenceChunk::Logits::kLast;
  for (int64_t b = 0; b < n_blocks; ++b) seq.block_table.push_back(static_cast<int32_t>(n_blocks - 1 - b));
  batch.seqs.push_back(seq);
  std::vector<float> logits(static_cast<size_t>(2 * c.vocab_size));
  std::vector<float> hidden(static_cast<size_t>(n * c.hidden_size));
  Status s = model.ForwardWithHidden(batch, kv, logits.data(), with_hidden ? hidden.data() : nullptr);
  DI_CHECK_MSG(s.ok(), s.ToString().c_str());
  batch.seqs[0].start_pos = n;
  batch.seqs[0].tokens = {prompt.front()};
  s = model.ForwardWithHidden(batch, kv, logits.data() + c.vocab_size, with_hidden ? hidden.data() : nullptr);
  DI_CHECK_MSG(s.ok(), s.ToString().c_str());
  return logits;
}

std::vector<int32_t> GreedyGenerate(Model& model, const std::vector<int32_t>& prompt, int n_new,
                                    int64_t block_size) {
  const ModelConfig& c = model.config();
  const int64_t total = static_cast<int64_t>(prompt.size()) + n_new;
  const int64_t n_blocks = (total + block_size - 1) / block_size;
  KvCache kv(c, n_blocks, block_size);
  std::vector<int32_t> table(static_cast<size_t>(n_blocks));
  std::iota(table.begin(), table.end(), 0);
  std::vector<float> logits(static_cast<size_t>(c.vocab_size));
  std::vector<int32_t> out;
  SequenceChunk seq;
  seq.tokens = prompt;
  seq.start_pos = 0;
  seq.block_table = table;
  for (int i = 0; i < n_new; ++i) {
    ForwardBatch batch;
    batch.seqs.push_back(seq);
    Status s = model.Forward(batch, kv, logits.data());
    DI_CHECK_MSG(s.ok(), s.ToString().c_str());
    const int32_t next = ArgMax(logits.data(), c.vocab_size);
    out.push_back(next);
    seq.start_pos += static_cast<int64_t>(seq.tokens.size());
    seq.tokens = {next};
  }
  return out;
}

int32_t ArgMax(const float* logits, int64_t n) {
  return static_cast<int32_t>(std::max_element(logits, logits + n) - logits);
}

double MaxRelativeError(const float* a, const std::vector<double>& b) {
  double max_err = 0, scale = 1;
  for (size_t i = 0; i < b.size(); ++i) {
    max_err = std::max(max_err, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return max_err / scale;
}

std::string PerTestPath(const std::string& dir, const std::string& prefix, const std::string& name) {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string test_name = test != nullptr ? test->name() : "";
  for (char& c : test_name) c = c == '/' ? '_' : c;
  return dir + "/" + prefix + "_" + test_name + "_" + name;
}

}  // namespace deepinfer::testing
