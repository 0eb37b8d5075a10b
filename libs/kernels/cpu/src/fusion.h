// Which instructions share a kernel, and in which order kernels run.
//
// Views (broadcast_in_dim, transpose, slice), reshapes and sources (constant, iota) never
// become kernels: their consumers read through them. Every other live instruction is a
// kernel node. An elementwise node joins the group of an elementwise producer of one of
// its operands (looking through reshapes), and a reduce joins the group that produces its
// input as the group's one reduction, unless that would create a cycle between groups.
// A reduction over trailing dimensions (rows of at most kBlock elements) also joins the groups
// of elementwise consumers of its broadcast back over the rows: such a row group computes its
// reductions inside each block of whole rows (FusedKernel's row kernels), so a softmax or a
// LayerNorm is one kernel. Elementwise ops on row values (a row reduction's result, one value
// per row, or such an op's: LayerNorm's mean, variance and rstd) join the row group too, and
// so do the consumers of their broadcasts over the rows.
// A group never computes one value twice: an instruction identical to another (same op,
// attributes, type and operands, up to such twins: a copy that a rematerialisation pass made,
// pcp/autodiff/remat.h) does not join the group of its twin, so the copy is computed where its
// late consumers are (typically in the backward kernel that reads the same inputs).
// Groups are then ordered topologically, earliest first. Finally some values are marked
// for recomputation by their consumers (FusionPlan::recompute).
#ifndef PCP_KERNELS_CPU_FUSION_H_
#define PCP_KERNELS_CPU_FUSION_H_

#include <cstdint>
#include <vector>

#include "pcp/autodiff/ir.h"

namespace pcp::cpu {

// Facts about a function that fusion and lowering share.
struct FunctionAnalysis {
  std::vector<int> producer;  // per value: its instruction, -1 for parameters
  std::vector<bool> live;     // per instruction: some result depends on it
  std::vector<ValueId> root;  // per value: the value it is a reshape (chain) of, or itself
  std::vector<int> node;      // per value: the kernel instruction whose output it reads
                              // (through views and reshapes), -1 for parameters/constants
  // Per root value: live instructions other than reshapes that use it or a reshape of it.
  std::vector<std::vector<int>> root_users;
  std::vector<bool> root_is_result;  // per root value: it or a reshape of it is a result
};

// Ops that become kernels (the rest are views, reshapes and sources).
bool IsKernelOp(Op op);

FunctionAnalysis Analyze(const Function& function);

struct FusionPlan {
  std::vector<std::vector<int>> groups;  // in schedule order; members in program order
  std::vector<int> group_of;             // per instruction: index into groups, or -1
  std::vector<int64_t> row_length;       // per group: > 0 for a row group (its rows' length)
  // Per value: computed in its group but needed outside only by elementwise consumers in
  // other groups, which recompute it (and the chain of ops in its group it needs) from that
  // chain's inputs instead of loading it: a stored value less. Typical case: the backward
  // pass needs erf(h) and exp(-h^2/2) of a forward activation h, recomputed from the stored
  // h instead of three more saved tensors. Chosen only where the chain is short and reads at
  // most one full-size tensor, so loads do not grow and memory does not either; a chain with
  // exp, erf, tanh, ... only for consumers far down the schedule, whose loads would miss the
  // cache (next to its producer, reading the value back is cheaper than recomputing it).
  std::vector<bool> recompute;
};

struct FusionOptions {
  // Elementwise ops on row values join row groups (see above); false: only a row reduction's
  // broadcast consumers do (per-row ops are kernels of their own, between row kernels).
  bool row_values = true;
};

FusionPlan PlanFusion(const Function& function, const FunctionAnalysis& analysis, FusionOptions options = {});

// For broadcast_in_dim instruction `b`: how many times each element of its operand is
// repeated, in order, over trailing dimensions of its result (1: none), or -1 if it
// broadcasts any other way (leading dimensions, reordered ones).
int64_t TrailingBroadcastCount(const Function& f, int b);

}  // namespace pcp::cpu

#endif  // PCP_KERNELS_CPU_FUSION_H_
