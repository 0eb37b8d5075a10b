// The pass that turns trees of f32 arithmetic in a loop kernel's op list into expression ops
// (superinstructions, expression_ops.h), run on each fused group once its ops are final.
//
// An op can be a tree node if it is one of the expression node ops (f32, but for a select's
// condition and a compare's result). Working from the last op back, each node op not yet
// taken (and not a compare, whose i1 result only a select takes) is a root; its tree grows by the node ops that
// produce its operands and have no other reader (not read twice, not stored, not the
// reduction's input). Of the subtrees hanging from the root, the largest whose signature is
// compiled in (at most kMaxOperands distinct leaves) replaces the root, and its nodes go;
// the nodes left out become roots of their own later. An absorbed op is then evaluated at
// its root's position: its operands are registers written once, still there.
//
// PCP_CPU_EXPRESSIONS=1 in the environment prints each root's largest tree's signature,
// whether it is compiled in and the kernel's element count (to choose the shapes to add).
#ifndef PCP_KERNELS_CPU_EXPRESSION_FUSION_H_
#define PCP_KERNELS_CPU_EXPRESSION_FUSION_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "fused_kernel.h"

namespace pcp::cpu {

// `node[i]`: op i's node name (ExpressionNodeName; empty if it cannot be a node);
// `pinned[r]`: register r must be materialised (stored or reduced). `n` is the kernel's
// element count, for the PCP_CPU_EXPRESSIONS report. Returns the new op list.
std::vector<FusedOp> FuseExpressions(const std::vector<FusedOp>& ops, const std::vector<std::string_view>& node,
                                     const std::vector<bool>& pinned, int64_t n);

}  // namespace pcp::cpu

#endif  // PCP_KERNELS_CPU_EXPRESSION_FUSION_H_
