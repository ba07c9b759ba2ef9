// Helpers the grammar benchmarks share (grammar_bench, heldout_bench): a
// greedy longest-match tokenization of a text over a vocabulary's bytes,
// thread CPU time, and percentiles of timing samples.
#pragma once

#include <time.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/vocabulary.h"

namespace deepinfer::grammar::testing {

// Thread CPU time in microseconds: the mask is single-threaded CPU work, and
// on a shared, overloaded machine wall time mostly measures the scheduler.
inline double ThreadCpuMicros() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

// Token id of each token's bytes (the first id in sorted order wins).
inline std::unordered_map<std::string, int32_t> TokensByBytes(const Vocabulary& v) {
  std::unordered_map<std::string, int32_t> by_bytes;
  for (int32_t id : v.sorted_ids()) by_bytes.emplace(v.token(id), id);
  return by_bytes;
}

// Longest match first at every position; empty when some byte has no token.
inline std::vector<int32_t> GreedyTokenize(const std::unordered_map<std::string, int32_t>& by_bytes,
                                           size_t max_len, const std::string& text) {
  std::vector<int32_t> out;
  for (size_t i = 0; i < text.size();) {
    size_t len = std::min(max_len, text.size() - i);
    for (; len > 0; --len) {
      auto it = by_bytes.find(text.substr(i, len));
      if (it != by_bytes.end()) {
        out.push_back(it->second);
        break;
      }
    }
    if (len == 0) return {};
    i += len;
  }
  return out;
}

// The p-quantile (0..1) of `v`, nearest rank; 0 for no samples.
inline double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(std::lround(p * static_cast<double>(v.size() - 1)))];
}

}  // namespace deepinfer::grammar::testing
