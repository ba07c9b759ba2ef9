#include "sampling/philox.h"

namespace deepinfer {
namespace {
constexpr uint32_t kMul0 = 0xD2511F53u;
constexpr uint32_t kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;  // golden ratio
constexpr uint32_t kWeyl1 = 0xBB67AE85u;  // sqrt(3) - 1

inline void MulHiLo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  *lo = static_cast<uint32_t>(p);
}
}  // namespace

PhiloxCounter Philox4x32_10(PhiloxCounter c, PhiloxKey k) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {  // the key schedule advances between rounds
      k[0] += kWeyl0;
      k[1] += kWeyl1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    MulHiLo(kMul0, c[0], &hi0, &lo0);
    MulHiLo(kMul1, c[2], &hi1, &lo1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
  }
  return c;
}

double UniformAt(uint64_t seed, uint64_t position, uint32_t draw) {
  PhiloxCounter ctr = {static_cast<uint32_t>(position), static_cast<uint32_t>(position >> 32), draw, 0};
  PhiloxKey key = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  PhiloxCounter out = Philox4x32_10(ctr, key);
  uint64_t bits = (static_cast<uint64_t>(out[0]) << 32 | out[1]) >> 11;  // 53 bits
  return static_cast<double>(bits) * 0x1.0p-53;
}

}  // namespace deepinfer
