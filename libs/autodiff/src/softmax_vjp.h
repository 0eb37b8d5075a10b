// The reverse pass of a softmax as one rule instead of the chain of its ops.
//
//   e = exp(z); p = e / broadcast(reduce_sum(e, D))        (broadcast over D's kept dims)
//   dz = p ⊙ (g − broadcast(reduce_sum(g ⊙ p, D)))         (g: the gradient of p)
//
// The chain rule through divide, reduce and exp gives the same value in exact arithmetic but
// reads e again (which a backend must store or recompute, exp included) and divides twice
// by the row sum; the closed form reads only p, which the forward pass keeps anyway (the
// attention's P·V product). It is PyTorch's softmax backward. Other uses of e or of the
// row sum still get their gradient through their own rules: the rule covers exactly the
// path through p.
#ifndef PCP_AUTODIFF_SRC_SOFTMAX_VJP_H_
#define PCP_AUTODIFF_SRC_SOFTMAX_VJP_H_

#include <cstdint>
#include <vector>

#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/ir.h"

namespace pcp {

struct SoftmaxMatch {
  ValueId input = kNoValue;   // z
  std::vector<int64_t> dims;  // D, the normalized dimensions
};

// Whether `divide` (an instruction of `f`) is the last op of a softmax; `defining[v]` is the
// index in f.instructions of the instruction defining v (-1 for parameters).
bool MatchSoftmax(const Function& f, const std::vector<int>& defining, const Instruction& divide, SoftmaxMatch* match);

// Emits the gradient of the softmax's input z from p (the divide's result) and g (p's gradient).
ValueId SoftmaxVjp(FunctionBuilder& b, ValueId p, ValueId g, const SoftmaxMatch& match);

}  // namespace pcp

#endif  // PCP_AUTODIFF_SRC_SOFTMAX_VJP_H_
