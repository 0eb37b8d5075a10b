// Compares a computed tensor with an expected one the way StableHLO's check dialect does
// (stablehlo/tests/CheckOps.cpp, as stablehlo-translate --interpret runs it):
//   expect_eq        every element equal (floats by IEEE ==: NaN never equals, -0 == +0)
//   expect_almost_eq |a - b| <= tolerance for finite values; NaN matches only NaN, an
//                    infinity only itself. Tolerance: as written, else 1e-4 for the op and
//                    1e-3 for custom_call @check.expect_almost_eq
//   expect_close     min_ulp <= ULP distance <= max_ulp; bitwise-equal values and two NaNs
//                    are 0 ULP apart, any other pair with a non-finite value infinitely far.
//                    Limits: as written, else 0..3 ULP for custom_call @check.expect_close
//                    (what the reference runner uses)
// Integer and i1 tensors compare exactly under every kind.
//
//   CheckOutcome o = CompareCheck(check, actual, expected);
//   if (!o.passed) std::cout << o.detail;  // "3 of 400 elements differ, max 7 ULP at [2, 5]: ..."
#ifndef PCP_CONFORMANCE_CHECK_COMPARE_H_
#define PCP_CONFORMANCE_CHECK_COMPARE_H_

#include <string>

#include "pcp/autodiff/text.h"
#include "pcp/tensor/tensor.h"

namespace pcp::conformance {

struct CheckOutcome {
  bool passed = false;
  std::string detail;  // empty if passed
};

CheckOutcome CompareCheck(const ParsedCheck& check, const Tensor& actual, const Tensor& expected);

}  // namespace pcp::conformance

#endif  // PCP_CONFORMANCE_CHECK_COMPARE_H_
