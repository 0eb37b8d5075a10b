// Private to the tensor library: the seeded normal draws of DrawInit (init_recipe.h documents
// the generator bit for bit).
//
//   NormalStream normals(/*seed=*/1337);
//   normals.Fill(/*stddev=*/0.02, t);  // t: an f32 tensor, filled in order
//
// SplitMix64 (Steele, Lea, Flood 2014) seeded with `seed`; each uniform is in (0, 1]
// (((x >> 11) + 1) * 2^-53, never 0, so log() is finite); Box-Muller turns each pair (u1, u2)
// into stddev * r * cos(2 pi u2), stddev * r * sin(2 pi u2) with r = sqrt(-2 ln u1), stored
// as floats in that order. A tensor of odd size drops the last sine; the next Fill continues
// the same stream.
#ifndef PCP_TENSOR_SRC_NORMAL_STREAM_H_
#define PCP_TENSOR_SRC_NORMAL_STREAM_H_

#include <cmath>
#include <cstdint>

#include "pcp/tensor/tensor.h"

namespace pcp::tensor_internal {

class NormalStream {
 public:
  explicit NormalStream(uint64_t seed) : state_(seed) {}

  void Fill(double stddev, Tensor& t) {
    float* p = t.data<float>();
    const int64_t n = t.num_elements();
    constexpr double kTwoPi = 6.283185307179586476925286766559;
    for (int64_t i = 0; i < n; i += 2) {
      const double u1 = Uniform(), u2 = Uniform();
      const double r = std::sqrt(-2.0 * std::log(u1));
      p[i] = static_cast<float>(stddev * r * std::cos(kTwoPi * u2));
      if (i + 1 < n) p[i + 1] = static_cast<float>(stddev * r * std::sin(kTwoPi * u2));
    }
  }

 private:
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double Uniform() { return static_cast<double>((Next() >> 11) + 1) * 0x1.0p-53; }

  uint64_t state_;
};

}  // namespace pcp::tensor_internal

#endif  // PCP_TENSOR_SRC_NORMAL_STREAM_H_
