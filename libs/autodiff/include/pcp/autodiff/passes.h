// Function-to-function rewrites. Each keeps the function's signature and semantics and
// leaves it verified (tests run Verify after every pass).
//
//   PCP_RETURN_IF_ERROR(RunStandardPasses(function));   // fold, CSE, DCE, compact
#ifndef PCP_AUTODIFF_PASSES_H_
#define PCP_AUTODIFF_PASSES_H_

#include <cstdint>

#include "absl/status/status.h"
#include "pcp/autodiff/ir.h"

namespace pcp {

// Removes instructions whose results no function result depends on.
absl::Status EliminateDeadCode(Function& function);
// Replaces an instruction by an earlier identical one (same op, operands, attributes, type).
absl::Status EliminateCommonSubexpressions(Function& function);
// Evaluates instructions whose operands are all constants (results up to `max_elements`
// elements, so folding never materialises huge tensors) and applies algebraic identities
// that are exact in IEEE arithmetic (x*1, 1*x, x/1, x-(+0), x+(-0), (-0)+x with splat
// constants, literal or broadcast; identity transpose/reshape/broadcast_in_dim; convert to the
// same dtype). Iota and broadcast_in_dim stay as they are (their values still feed folding);
// a folded result that is one repeated value becomes scalar constant + broadcast_in_dim.
absl::Status FoldConstants(Function& function, int64_t max_elements = 1 << 16);
// Renumbers values densely in definition order (after passes that remove instructions).
void CompactValues(Function& function);
// FoldConstants, EliminateCommonSubexpressions, EliminateDeadCode, CompactValues, Verify.
absl::Status RunStandardPasses(Function& function);

}  // namespace pcp

#endif  // PCP_AUTODIFF_PASSES_H_
