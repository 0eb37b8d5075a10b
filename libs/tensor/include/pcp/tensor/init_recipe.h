// How a model's initial parameters θ₀ are drawn: a seed and one rule per parameter, a few bytes
// where the values are megabytes. The shepherd sends a job's recipe with the Assignment and a
// worker draws θ₀ itself instead of receiving it (protos/pcp/v1/training.proto:
// StartRound.theta_from_init); the CRC-32C of the result is checked as for any θ.
//
//   InitRecipe r{.seed = 1337, .params = {ParamInit::Normal(0.02), ParamInit::Ones(), ParamInit::Zeros()}};
//   PCP_ASSIGN_OR_RETURN(std::vector<Tensor> theta, DrawInit(r, shapes));  // f32, one per rule
//
// Generator (bit for bit, so that every implementation draws the same θ₀): SplitMix64 (Steele,
// Lea, Flood 2014) seeded with `seed`; each uniform u in (0, 1] is ((x >> 11) + 1) * 2^-53 for
// the next 64-bit output x; normals come in Box-Muller pairs from (u1, u2): r = sqrt(-2 ln u1),
// z0 = r cos(2 pi u2), z1 = r sin(2 pi u2), computed in double, both used in order. One stream
// serves every normal rule in parameter order (each tensor's elements in row-major order; a
// leftover odd normal is discarded at the end of a tensor), and each value is std * z rounded to
// f32. Constant rules draw nothing. (libm's log, sin and cos may differ in the last bit between
// C libraries: a worker whose θ₀ differs is caught by the CRC and sent θ₀ in full.)
#ifndef PCP_TENSOR_INIT_RECIPE_H_
#define PCP_TENSOR_INIT_RECIPE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "pcp/tensor/shape.h"
#include "pcp/tensor/tensor.h"

namespace pcp {

// The rule of one parameter.
struct ParamInit {
  enum class Kind { kZeros, kOnes, kNormal };
  Kind kind = Kind::kZeros;
  double std = 0;  // kNormal: the standard deviation (finite, >= 0)

  static ParamInit Zeros() { return {Kind::kZeros, 0}; }
  static ParamInit Ones() { return {Kind::kOnes, 0}; }
  static ParamInit Normal(double std) { return {Kind::kNormal, std}; }
  bool operator==(const ParamInit& o) const { return kind == o.kind && std == o.std; }
};

struct InitRecipe {
  uint64_t seed = 0;
  std::vector<ParamInit> params;  // in parameter order
};

// θ₀: one f32 tensor of `shapes[i]` per rule. InvalidArgument when the counts differ or a
// normal's std is negative or not finite.
absl::StatusOr<std::vector<Tensor>> DrawInit(const InitRecipe& recipe, const std::vector<Shape>& shapes);

}  // namespace pcp

#endif  // PCP_TENSOR_INIT_RECIPE_H_
