// Which reduce-max results carry no gradient because what follows them does not depend on
// them: the max subtracted for numerical safety in a softmax or log-softmax.
//
//   m = reduce_max(x, D); z = y - broadcast(m)                 (y: anything of x's shape)
//   softmax:      exp(z) / broadcast(reduce_sum(exp(z), D))
//   log-softmax:  z - broadcast(log(reduce_sum(exp(z), D)))
//
// Adding c to a row of m multiplies that row of exp(z) and of its row sum by e^-c, and shifts
// z and log of the sum by -c: both forms are the same for every c, so d(output)/dm is exactly
// 0 and the reverse pass need not go through m. That is what JAX (stop_gradient on the max in
// jax.nn.softmax) and PyTorch (softmax's closed-form backward) compute; going through reduce
// max's VJP instead adds masks and a tie count whose mathematical value is zero, only rounding.
//
// The proof is a small abstract interpretation from m forward: every value is "fixed" (does
// not change when m's rows shift by c), "shift k" (changes by k·c per row), "scale k"
// (multiplied by e^(k·c) per row) or "unknown", each shift/scale value either row-shaped
// (m's shape) or full (x's shape, reached only by broadcast_in_dim over m's kept dims):
//   broadcast(row) = full;  reduce_sum over D (full scale) = row scale
//   exp(shift k) = scale k;  log(scale k) = shift k;  negate(shift k) = shift -k
//   shift k1 ± shift k2 = shift k1 ± k2;  shift ± fixed = shift
//   scale k1 × scale k2 = scale k1 + k2;  scale ÷ scale, scale × fixed, scale ÷ fixed, fixed ÷ scale
//   shift 0 and scale 0 are fixed;  anything else that reads a non-fixed value is unknown.
// m is cut when the output is fixed and no unknown value is on a path to the output.
#ifndef PCP_AUTODIFF_SRC_SHIFT_INVARIANCE_H_
#define PCP_AUTODIFF_SRC_SHIFT_INVARIANCE_H_

#include <vector>

#include "pcp/autodiff/ir.h"

namespace pcp {

// Per value of `f`: true for a floating-point reduce max (over at least one dimension) that
// `output` provably does not depend on, by the rules above. `needed[v]`: `output` depends on
// v (through any op, differentiable or not).
std::vector<bool> ShiftInvariantMaxima(const Function& f, ValueId output, const std::vector<bool>& needed);

}  // namespace pcp

#endif  // PCP_AUTODIFF_SRC_SHIFT_INVARIANCE_H_
