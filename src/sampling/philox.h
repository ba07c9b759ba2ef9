// Philox4x32-10: a counter-based random generator (Salmon et al., SC'11).
//
// Output is a pure function of (counter, key): there is no stream state, so a
// request's random draw at token position p depends only on (seed, p, draw
// index) — never on which other requests share the batch, on preemption, or
// on the order of sampling. This is what makes seeded sampling reproducible.
#pragma once

#include <array>
#include <cstdint>

namespace deepinfer {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// One Philox4x32 block with 10 rounds.
PhiloxCounter Philox4x32_10(PhiloxCounter counter, PhiloxKey key);

// A uniform double in [0, 1) with 53 random bits, keyed by the request seed,
// the token position and a draw index (e.g. the draft slot in speculative
// decoding, or a second draw at the same position).
double UniformAt(uint64_t seed, uint64_t position, uint32_t draw = 0);

}  // namespace deepinfer
