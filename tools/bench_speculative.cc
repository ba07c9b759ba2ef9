#include "tools/bench_speculative.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <random>
#include <sstream>

#include "core/stats.h"
#include "tools/plot_png.h"

namespace deepinfer::tools {
namespace {

using Clock = std::chrono::steady_clock;

const char* const kSchedules[] = {"none", "fixed", "adaptive"};

struct RunResult {
  double tokens_per_second = 0.0;
  EngineMetrics metrics;
};

StatusOr<RunResult> RunOnce(const std::string& model_path, const LoadOptions& load, const SpecBenchConfig& c,
                            const std::string& schedule, int64_t concurrency) {
  DI_ASSIGN_OR_RETURN(LoadedModel loaded, LoadModel(model_path, load));
  const int64_t vocab = loaded.model->config().vocab_size;
  std::vector<int32_t> prompt = c.prompt;
  if (prompt.empty()) {
    std::mt19937_64 rng(c.seed);
    std::uniform_int_distribution<int32_t> token(3, static_cast<int32_t>(vocab - 1));
    for (int64_t i = 0; i < c.prompt_tokens; ++i) prompt.push_back(token(rng));
  }
  EngineConfig config = c.engine;
  config.scheduler.max_num_seqs = static_cast<int32_t>(std::max<int64_t>(concurrency, 1));
  config.scheduler.max_model_len = static_cast<int64_t>(prompt.size()) + c.gen_tokens + 16;
  if (schedule == "none") {
    config.speculative = SpeculativeConfig{};
    config.scheduler.max_num_speculative_tokens = 0;
  } else {
    config.speculative.adaptive = schedule == "adaptive";
  }
  DI_ASSIGN_OR_RETURN(auto engine, Engine::Create(std::move(loaded), config));

  std::mutex mu;
  std::condition_variable cv;
  int64_t finished = 0, started = 0, decode_tokens = 0;
  Clock::time_point all_started{}, end{};
  std::string error;
  for (int64_t i = 0; i < concurrency; ++i) {
    GenerationRequest r;
    r.prompt_tokens = prompt;
    r.max_tokens = static_cast<int32_t>(c.gen_tokens);
    r.ignore_eos = true;
    r.sampling.temperature = 0;
    auto submitted = engine->Submit(std::move(r), [&, first = true](const GenerationEvent& ev) mutable {
      std::lock_guard<std::mutex> lock(mu);
      if (first && !ev.token_ids.empty()) {
        first = false;
        if (++started == concurrency) all_started = Clock::now();
      } else if (started == concurrency) {
        decode_tokens += static_cast<int64_t>(ev.token_ids.size());
      }
      if (!ev.error.empty() && error.empty()) error = ev.error;
      if (ev.finish_reason != FinishReason::kNone) {
        end = Clock::now();
        ++finished;
        cv.notify_all();
      }
    });
    DI_RETURN_IF_ERROR(submitted.status());
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return finished == concurrency; });
  }
  if (!error.empty()) return Internal("bench: a request failed: " + error);
  RunResult out;
  const double seconds = std::chrono::duration<double>(end - all_started).count();
  out.tokens_per_second = seconds > 0 ? static_cast<double>(decode_tokens) / seconds : 0.0;
  out.metrics = engine->Metrics();
  return out;
}

const SpecBenchPoint* Find(const std::vector<SpecBenchPoint>& points, const std::string& schedule,
                           int64_t c) {
  for (const SpecBenchPoint& p : points) {
    if (p.schedule == schedule && p.concurrency == c) return &p;
  }
  return nullptr;
}

// The fixed schedule's calibration at the lowest concurrency: it verifies
// every depth, so each depth has the most trials.
const SpecBenchPoint* CalibrationSource(const std::vector<SpecBenchPoint>& points) {
  for (const char* schedule : {"fixed", "adaptive"}) {
    for (const SpecBenchPoint& p : points) {
      if (p.schedule == schedule && !p.predicted.empty()) return &p;
    }
  }
  return nullptr;
}

}  // namespace

StatusOr<std::vector<SpecBenchPoint>> RunSpeculativeBench(const std::string& model_path,
                                                          const LoadOptions& load,
                                                          const SpecBenchConfig& config,
                                                          const SpecBenchProgress& progress) {
  std::vector<SpecBenchPoint> points;
  for (int64_t c : config.concurrency) {
    for (const char* s : kSchedules) points.push_back(SpecBenchPoint{s, c, {}, 0, 0, {}, {}});
  }
  const auto total = static_cast<int64_t>(points.size()) * config.rounds;
  int64_t done = 0;
  for (int64_t round = 0; round < config.rounds; ++round) {
    for (SpecBenchPoint& p : points) {
      DI_ASSIGN_OR_RETURN(RunResult r, RunOnce(model_path, load, config, p.schedule, p.concurrency));
      p.tokens_per_second.push_back(r.tokens_per_second);
      p.draft_tokens += r.metrics.spec_draft_tokens_total;
      p.accepted_tokens += r.metrics.spec_accepted_tokens_total;
      p.predicted = r.metrics.spec_predicted_acceptance;
      p.observed = r.metrics.spec_observed_acceptance;
      if (progress) progress("speculative", ++done, total);
    }
  }
  return points;
}

std::string FormatSpecBenchTable(const SpecBenchConfig& config, const std::vector<SpecBenchPoint>& points) {
  std::ostringstream os;
  char line[256];
  std::snprintf(line, sizeof(line),
                "speculative: --speculative-method %s, K = %d, %lld round(s), median decode tok/s\n",
                config.engine.speculative.method.c_str(), config.engine.scheduler.max_num_speculative_tokens,
                static_cast<long long>(config.rounds));
  os << line;
  os << "concurrency      none     fixed (x none)   adaptive (x none)  accepted fixed / adaptive\n";
  for (int64_t c : config.concurrency) {
    const SpecBenchPoint* none = Find(points, "none", c);
    const SpecBenchPoint* fixed = Find(points, "fixed", c);
    const SpecBenchPoint* adaptive = Find(points, "adaptive", c);
    if (none == nullptr || fixed == nullptr || adaptive == nullptr) continue;
    const double n = Median(none->tokens_per_second), f = Median(fixed->tokens_per_second),
                 a = Median(adaptive->tokens_per_second);
    auto rate = [](const SpecBenchPoint* p) {
      return p->draft_tokens > 0 ? static_cast<double>(p->accepted_tokens) / p->draft_tokens : 0.0;
    };
    std::snprintf(line, sizeof(line), "%11lld %9.1f %9.1f (%.2fx) %9.1f (%.2fx)      %.2f / %.2f\n",
                  static_cast<long long>(c), n, f, n > 0 ? f / n : 0.0, a, n > 0 ? a / n : 0.0, rate(fixed),
                  rate(adaptive));
    os << line;
  }
  if (const SpecBenchPoint* cal = CalibrationSource(points)) {
    os << "calibration (" << cal->schedule << ", concurrency " << cal->concurrency
       << "): depth, predicted, observed acceptance\n";
    for (size_t d = 0; d < cal->predicted.size() && d < cal->observed.size(); ++d) {
      std::snprintf(line, sizeof(line), "  %zu  %.3f  %.3f\n", d + 1, cal->predicted[d], cal->observed[d]);
      os << line;
    }
  }
  return os.str();
}

std::string FormatSpecBenchJson(const SpecBenchConfig& config, const std::vector<SpecBenchPoint>& points) {
  std::ostringstream os;
  os.precision(6);
  auto list = [&](const std::vector<double>& v) {
    os << '[';
    for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
    os << ']';
  };
  os << "{\"method\": \"" << config.engine.speculative.method
     << "\", \"num_speculative_tokens\": " << config.engine.scheduler.max_num_speculative_tokens
     << ", \"points\": [";
  for (size_t i = 0; i < points.size(); ++i) {
    const SpecBenchPoint& p = points[i];
    os << (i ? ", " : "") << "{\"schedule\": \"" << p.schedule << "\", \"concurrency\": " << p.concurrency
       << ", \"decode_tokens_per_second\": ";
    list(p.tokens_per_second);
    os << ", \"median_decode_tokens_per_second\": " << Median(p.tokens_per_second)
       << ", \"draft_tokens\": " << p.draft_tokens << ", \"accepted_tokens\": " << p.accepted_tokens
       << ", \"predicted_acceptance\": ";
    list(p.predicted);
    os << ", \"observed_acceptance\": ";
    list(p.observed);
    os << '}';
  }
  os << "]}";
  return os.str();
}

Status WriteSpecBenchPlots(const std::vector<SpecBenchPoint>& points, const std::string& path) {
  std::vector<PlotSeries> throughput;
  for (const char* s : kSchedules) {
    PlotSeries series{s, {}, {}};
    for (const SpecBenchPoint& p : points) {
      if (p.schedule != s) continue;
      series.xs.push_back(static_cast<double>(p.concurrency));
      series.ys.push_back(Median(p.tokens_per_second));
    }
    throughput.push_back(std::move(series));
  }
  DI_RETURN_IF_ERROR(WriteLinePlotPng(path, "decode throughput vs concurrency", "concurrent requests",
                                      "tokens/s", throughput, {.log_x = true}));
  const SpecBenchPoint* cal = CalibrationSource(points);
  if (cal == nullptr) return Status::Ok();
  PlotSeries observed{"observed (per depth)", {}, {}};
  for (size_t d = 0; d < cal->predicted.size() && d < cal->observed.size(); ++d) {
    if (cal->predicted[d] <= 0.0 && cal->observed[d] <= 0.0) continue;  // never verified there
    observed.xs.push_back(cal->predicted[d]);
    observed.ys.push_back(cal->observed[d]);
  }
  if (observed.xs.empty()) return Status::Ok();
  const PlotSeries ideal{"ideal", {0.0, 1.0}, {0.0, 1.0}};
  std::string reliability = path;
  const size_t dot = reliability.rfind(".png");
  reliability = (dot != std::string::npos ? reliability.substr(0, dot) : reliability) + "-reliability.png";
  return WriteLinePlotPng(reliability, "calibration: observed vs predicted acceptance per depth",
                          "predicted acceptance", "observed acceptance", {ideal, observed});
}

}  // namespace deepinfer::tools
