// strategy/data/random.h
//
// tpusim's own deterministic PRNG for shuffle and list_files (tpusim choice:
// the order is deterministic for a seed, but not TensorFlow's Philox order).
//
//   Prng rng(MixSeed(seed, epoch));
//   uint64_t k = rng.Uniform(buffer.size());   // in [0, n)

#ifndef TPUSIM_STRATEGY_DATA_RANDOM_H_
#define TPUSIM_STRATEGY_DATA_RANDOM_H_

#include <cstdint>

namespace tpusim::data {

// SplitMix64 step: a good 64-bit mixer, used to derive seeds.
inline uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// A seed derived from `seed` and `stream` (e.g. the epoch); different streams
// give unrelated sequences.
inline uint64_t MixSeed(uint64_t seed, uint64_t stream) {
  uint64_t s = seed;
  uint64_t a = SplitMix64(s);
  uint64_t t = a ^ (stream * 0xD1B54A32D192ED03ULL);
  return SplitMix64(t);
}

// xoshiro256** seeded by SplitMix64.
class Prng {
 public:
  explicit Prng(uint64_t seed) {
    uint64_t s = seed;
    for (uint64_t& w : s_) w = SplitMix64(s);
  }
  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, n) without modulo bias (rejection). Precondition: n > 0.
  uint64_t Uniform(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do {
      x = Next();
    } while (x >= limit);
    return x % n;
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace tpusim::data

#endif  // TPUSIM_STRATEGY_DATA_RANDOM_H_
