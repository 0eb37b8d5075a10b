// Test-only helpers for tensors: seeded random inputs and tolerance comparisons.
//
//   Tensor x = RandomTensor({DType::kF32, {4, 8}}, /*seed=*/1);          // uniform [-1, 1)
//   Tensor ids = RandomTensor({DType::kI32, {2, 5}}, 2, /*lo=*/0, /*hi=*/65);
//   EXPECT_TRUE(TensorsNear(actual, expected, /*rtol=*/1e-5, /*atol=*/1e-6));
//   double e = MaxRelativeError(a, b);   // max |a-b| / max(|b|, floor)
#ifndef PCP_TESTING_TENSOR_TESTING_H_
#define PCP_TESTING_TENSOR_TESTING_H_

#include <cstdint>
#include <string>

#include "gtest/gtest.h"
#include "pcp/autodiff/ir.h"
#include "pcp/tensor/tensor.h"

namespace pcp::testing {

// Floats uniform in [lo, hi); integers uniform in [lo, hi); bools fair coin. Deterministic
// for a given seed on every platform.
Tensor RandomTensor(const TensorType& type, uint64_t seed, double lo = -1.0, double hi = 1.0);

// Every element satisfies |a - b| <= atol + rtol * |b| (NaNs equal only to NaNs); dtype and
// shape must match. On failure the message names the first offending index and both values.
::testing::AssertionResult TensorsNear(const Tensor& actual, const Tensor& expected, double rtol, double atol);

// max_i |a_i - b_i| / max(max_j |b_j|, floor): the error relative to the tensor's scale,
// as used for gradient parity checks. Infinite when either side holds a NaN or infinity.
double MaxRelativeError(const Tensor& actual, const Tensor& expected, double floor = 1e-12);

// Values of a tensor as doubles (any dtype), for comparisons.
std::vector<double> ToDoubles(const Tensor& t);

}  // namespace pcp::testing

#endif  // PCP_TESTING_TENSOR_TESTING_H_
