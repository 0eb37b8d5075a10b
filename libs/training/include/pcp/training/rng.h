// Small pseudo-random generators whose output is fully specified here, so that it is the
// same on every platform, compiler and standard library (unlike std::uniform_int_distribution).
//
//   Xoshiro256ss rng = Xoshiro256ss::FromSeed(1337);
//   uint64_t r = rng.Next();                  // 64 random bits
//   uint64_t i = rng.UniformBelow(100);       // uniform in [0, 100), unbiased
//   std::array<uint64_t, 4> saved = rng.state();
//   PCP_ASSIGN_OR_RETURN(Xoshiro256ss resumed, Xoshiro256ss::FromState(saved));
//
// Algorithms: SplitMix64 and xoshiro256** 1.0 (Blackman & Vigna, https://prng.di.unimi.it/),
// exactly as their reference C code; FromSeed fills the state with four SplitMix64 outputs,
// as the authors recommend. UniformBelow(n) is rejection sampling: draw r = Next() until
// r >= (2^64 mod n), then return r mod n.
#ifndef PCP_TRAINING_RNG_H_
#define PCP_TRAINING_RNG_H_

#include <array>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace pcp {

// Advances `*state` by the golden-ratio increment and returns the mixed result.
inline uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A seed for sub-stream `stream` of `seed` (e.g. one per batch index or per worker):
// SplitMix64 applied to (SplitMix64 of seed) XOR stream. Distinct streams of one seed give
// distinct results (SplitMix64 is a bijection of its state).
inline uint64_t MixSeed(uint64_t seed, uint64_t stream) {
  uint64_t s = seed;
  s = SplitMix64(&s) ^ stream;
  return SplitMix64(&s);
}

class Xoshiro256ss {
 public:
  static Xoshiro256ss FromSeed(uint64_t seed) {
    Xoshiro256ss rng;
    uint64_t sm = seed;
    for (uint64_t& word : rng.s_) word = SplitMix64(&sm);
    // Four consecutive SplitMix64 outputs are never all zero (it is a bijection of a counter
    // that takes four distinct values), so the state is valid.
    return rng;
  }
  // Resumes from state(); the all-zero state (a fixed point) is rejected.
  static absl::StatusOr<Xoshiro256ss> FromState(const std::array<uint64_t, 4>& state) {
    if ((state[0] | state[1] | state[2] | state[3]) == 0) {
      return absl::InvalidArgumentError("xoshiro256** state must not be all zero");
    }
    Xoshiro256ss rng;
    rng.s_ = state;
    return rng;
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

  // Uniform in [0, n) for n >= 1 (returns 0 for n == 0).
  uint64_t UniformBelow(uint64_t n) {
    if (n == 0) return 0;
    const uint64_t threshold = (0 - n) % n;  // 2^64 mod n
    for (;;) {
      const uint64_t r = Next();
      if (r >= threshold) return r % n;
    }
  }

  const std::array<uint64_t, 4>& state() const { return s_; }

 private:
  Xoshiro256ss() = default;
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

  std::array<uint64_t, 4> s_{};
};

}  // namespace pcp

#endif  // PCP_TRAINING_RNG_H_
