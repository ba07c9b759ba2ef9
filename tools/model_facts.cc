#include "tools/model_facts.h"

#include <cstdio>
#include <map>

#include "model/weights.h"

namespace deepinfer::tools {

LoadedModelFacts FactsOf(const LoadedModel& loaded) {
  LoadedModelFacts f;
  f.format = loaded.format;
  if (loaded.model) {
    f.architecture = loaded.model->config().arch;
    f.context = loaded.model->config().max_position;
  }
  if (loaded.weights) {
    std::map<std::string, int64_t> count_by_dtype;
    for (const TensorView* t : loaded.weights->All()) {
      f.parameters += t->NumElements();
      ++count_by_dtype[DTypeName(t->dtype)];
    }
    for (const auto& [name, count] : count_by_dtype) {
      f.weight_dtypes += (f.weight_dtypes.empty() ? "" : ", ") + name + " x" + std::to_string(count);
    }
  }
  return f;
}

std::string HumanCount(int64_t n) {
  const char* units[] = {"", "K", "M", "B", "T"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1000.0 && u < 4) {
    v /= 1000.0;
    ++u;
  }
  char buf[32];
  if (u == 0) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(n));
  } else {
    std::snprintf(buf, sizeof buf, "%.2f%s", v, units[u]);
  }
  return buf;
}

}  // namespace deepinfer::tools
