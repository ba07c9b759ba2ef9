// Weight matrices repacked once at load into layouts the AVX-512 kernels read
// with fewer instructions than GGML's file layout: 64-byte aligned rows, the
// int8/int4 values of a block pair contiguous and already in the form the
// VNNI instruction wants, the f16 block scales converted to f32 and moved
// after the values. The arithmetic is unchanged: a packed matrix gives
// bit-identical results to its file-layout original (matmul_test checks).
//
// Layouts (per row; pairs = ceil(K / 64); an odd last block's partner is a
// zero block):
//   Q8_0: [pairs][64] u8 (w + 128), then f32 scales [2 * pairs]
//   Q4_0: [pairs][32] u8: byte j = (w_a[j] + 8) | (w_b[j] + 8) << 4 for the
//         pair's blocks a, b and j < 32, then f32 scales [2 * pairs]
//   Q4_K: [pairs][32] u8 (the file's qs, in file order), then f32 d * sc
//         [2 * pairs], then f32 dmin * m [2 * pairs]
// Row stride rounded up to 64 bytes. Memory: +6% (Q8_0) / +11% (Q4_0) /
// +33% (Q4_K) of the packed matrices; the file's pages are no longer read
// after packing.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "backend/cpu/aligned_buffer.h"
#include "backend/cpu/isa.h"
#include "tensor/tensor_view.h"

namespace deepinfer::cpu {

struct PackedLayout {
  DType dtype = DType::kF32;  // the type the packed bytes encode
  int64_t rows = 0, k = 0;
  int64_t row_stride = 0;  // bytes
};

// Owns packed copies; each is registered (by address) while its owner lives,
// so cpu::MatMul recognizes a view of one and runs the packed kernel.
class PackedWeights {
 public:
  PackedWeights() = default;
  ~PackedWeights();  // unregisters every copy
  PackedWeights(const PackedWeights&) = delete;
  PackedWeights& operator=(const PackedWeights&) = delete;

  // A view of a packed copy of w (same name, dtype and shape; data owned by
  // *this) when the active ISA has a packed kernel for w.dtype, else w itself.
  // Use the result only with MatMul. Not thread-safe; call at load time.
  TensorView Pack(const TensorView& w);

  int64_t packed_bytes() const { return packed_bytes_; }

 private:
  std::vector<std::unique_ptr<AlignedBuffer<uint8_t>>> buffers_;
  int64_t packed_bytes_ = 0;
};

// The layout of the packed copy at `data`, or nullopt when data is not one.
// Thread-safe.
std::optional<PackedLayout> FindPackedLayout(const void* data);

// True when `isa`'s kernel set reads packed matrices of type t.
bool PacksType(Isa isa, DType t);

// Packs rows [0, layout.rows) of w (file layout) into dst (layout.row_stride
// bytes per row). Exposed for tests.
void PackMatrix(const TensorView& w, const PackedLayout& layout, uint8_t* dst);
PackedLayout PackedLayoutFor(DType t, int64_t rows, int64_t k);

}  // namespace deepinfer::cpu
