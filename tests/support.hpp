// Helpers shared by the suites: a seeded generator and the host's own float types.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>

namespace dql::test {

// A fixed seed: every run checks the same inputs, and a failure names the one that broke.
inline std::mt19937_64& rng() {
  static std::mt19937_64 g(0x5EEDF00Dull);
  return g;
}
inline uint32_t random_u32() { return static_cast<uint32_t>(rng()()); }

inline uint32_t bits_of_float(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float float_of_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t bits_of_half(_Float16 h) {
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}
inline _Float16 half_of_bits(uint32_t u) {
  const uint16_t s = static_cast<uint16_t>(u);
  _Float16 h;
  std::memcpy(&h, &s, 2);
  return h;
}

}  // namespace dql::test
