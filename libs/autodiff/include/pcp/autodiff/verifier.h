// Whole-function checks: SSA form (every value defined exactly once, before its uses), each
// instruction's types against type_inference.h, and well-formed parameters and results.
// Passes are followed by Verify in tests; a failure names the function, instruction and rule.
//
//   PCP_RETURN_IF_ERROR(Verify(function));
#ifndef PCP_AUTODIFF_VERIFIER_H_
#define PCP_AUTODIFF_VERIFIER_H_

#include "absl/status/status.h"
#include "pcp/autodiff/ir.h"

namespace pcp {

absl::Status Verify(const Function& function);
absl::Status Verify(const Module& module);  // also: function names are unique and non-empty

}  // namespace pcp

#endif  // PCP_AUTODIFF_VERIFIER_H_
