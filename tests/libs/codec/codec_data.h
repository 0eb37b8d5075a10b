// Inputs for the codec tests: Δ-like values (Gaussian, with a scale that changes from block
// to block and a few outliers), deterministic for a seed.
//
//   std::vector<float> x = DeltaLike(/*n=*/5000, /*seed=*/7);
#ifndef PCP_TESTS_LIBS_CODEC_CODEC_DATA_H_
#define PCP_TESTS_LIBS_CODEC_CODEC_DATA_H_

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace pcp::codec::testing {

inline std::vector<float> DeltaLike(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> log_scale(-12.0f, 2.0f);
  std::vector<float> x(n);
  float scale = 1e-3f;
  for (size_t i = 0; i < n; ++i) {
    if (i % 97 == 0) scale = std::exp2(log_scale(rng));  // changes within and across blocks
    x[i] = scale * normal(rng);
    if (rng() % 1000 == 0) x[i] *= 50.0f;  // an outlier
  }
  return x;
}

}  // namespace pcp::codec::testing

#endif  // PCP_TESTS_LIBS_CODEC_CODEC_DATA_H_
