// libFuzzer: SafetensorsFile::Parse on arbitrary bytes; views are touched so
// ASan flags any that leave the input.
#include <cstdint>
#include <vector>

#include "io/safetensors.h"
#include "tensor/dequant.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace deepinfer;
  auto file = SafetensorsFile::Parse(data, size, "fuzz.safetensors");
  if (!file.ok()) return 0;
  volatile uint8_t sink = 0;
  std::vector<float> row;
  for (const TensorView& t : (*file)->tensors()) {
    if (t.nbytes == 0) continue;
    const auto* p = static_cast<const uint8_t*>(t.data);
    sink = sink ^ p[0] ^ p[t.nbytes - 1];
    if (CanDequantize(t.dtype) && t.cols() <= 4096) {
      row.resize(static_cast<size_t>(t.cols()));
      DequantizeRow(t.dtype, p, row.data(), t.cols());
    }
    (void)(*file)->FindTensor(t.name);
  }
  return 0;
}
