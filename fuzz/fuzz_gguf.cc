// libFuzzer: GgufFile::Parse on arbitrary bytes. Parsing must fail cleanly
// or yield views that lie inside the input (touched below, so ASan sees any
// out-of-bounds view) and metadata that the getters can read.
#include <cstdint>
#include <vector>

#include "io/gguf.h"
#include "tensor/dequant.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace deepinfer;
  auto file = GgufFile::Parse(data, size, "fuzz.gguf");
  if (!file.ok()) return 0;
  const GgufFile& g = **file;
  for (const auto& [key, value] : g.metadata()) {
    (void)g.GetInt(key), (void)g.GetFloat(key), (void)g.GetString(key);
    (void)g.GetIntArray(key), (void)g.GetFloatArray(key), (void)g.GetStringArray(key);
  }
  volatile uint8_t sink = 0;
  std::vector<float> row;
  for (const TensorView& t : g.tensors()) {
    if (t.nbytes == 0) continue;
    const auto* p = static_cast<const uint8_t*>(t.data);
    sink = sink ^ p[0] ^ p[t.nbytes - 1];
    if (CanDequantize(t.dtype) && t.cols() <= 4096) {
      row.resize(static_cast<size_t>(t.cols()));
      DequantizeRow(t.dtype, p, row.data(), t.cols());
    }
  }
  return 0;
}
