#include "kernel_groups.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

namespace pcp::vulkan {

bool IsRowReduction(const Function& f, const Instruction& inst, int* reduced_dims) {
  if (inst.op != Op::kReduce || inst.operands.size() != 2) return false;
  const TensorType& in = f.type(inst.operands[0]);
  if (in.dtype != DType::kF32 || inst.attrs.dims.empty() || in.num_elements() == 0) return false;
  if (f.type(inst.operands[1]).num_elements() != 1) return false;
  std::vector<int64_t> dims = inst.attrs.dims;
  std::sort(dims.begin(), dims.end());
  const auto k = static_cast<int64_t>(dims.size());
  for (int64_t i = 0; i < k; ++i) {
    if (dims[static_cast<size_t>(i)] != in.rank() - k + i) return false;
  }
  *reduced_dims = static_cast<int>(k);
  return true;
}

bool IsRowBroadcast(const Function& f, const Instruction& inst, const Shape& rows, const Shape& element) {
  if (inst.op != Op::kBroadcastInDim || f.type(inst.result).shape != element) return false;
  if (f.type(inst.operands[0]).shape != rows || inst.attrs.dims.size() != rows.size()) return false;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (inst.attrs.dims[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

namespace {

enum class Level : uint8_t { kElement = 1, kRow = 2, kOther = 4 };

class KernelGrouper {
 public:
  KernelGrouper(const Function& f, KernelPlan& plan, int max_bindings)
      : f_(f), plan_(plan), max_bindings_(max_bindings) {}

  void Run(bool row_kernels, bool map_groups, bool reduction_groups) {
    const size_t nk = plan_.kernels.size();
    const size_t nv = static_cast<size_t>(f_.num_values());
    kernel_of_value_.assign(nv, -1);
    for (size_t i = 0; i < nk; ++i) kernel_of_value_[static_cast<size_t>(plan_.kernels[i].value)] = static_cast<int>(i);
    value_stamp_.assign(nv, 0);
    visited_.assign(nv, 0);
    role_.assign(nv, 0);
    reads_.resize(nk);
    read_values_.resize(nk);
    readers_.resize(nk);
    for (size_t i = 0; i < nk; ++i) {
      reads_[i] = ConeReads(plan_.kernels[i].instruction, &read_values_[i]);
      for (int r : reads_[i]) readers_[static_cast<size_t>(r)].push_back(static_cast<int>(i));
    }
    is_result_.assign(nk, false);
    for (ValueId r : f_.results) {
      const int k = kernel_of_value_[static_cast<size_t>(r)];
      if (k >= 0) is_result_[static_cast<size_t>(k)] = true;
    }
    in_group_.assign(nk, 0);
    parent_.resize(nk);
    groups_.resize(nk);
    group_stamp_.assign(nk, 0);
    candidate_.assign(nk, false);
    map_candidate_.assign(nk, false);
    for (size_t i = 0; i < nk; ++i) {
      parent_[i] = static_cast<int>(i);
      Group& g = groups_[i];
      g.kernels = {static_cast<int>(i)};
      g.min_pos = static_cast<int>(i);
      const PlannedKernel& k = plan_.kernels[i];
      const Instruction& inst = f_.instructions[static_cast<size_t>(k.instruction)];
      int dims = 0;
      // A split reduction (KernelKind::kSplitReduce, kernel_plan.h) stays apart: it has few,
      // long rows, which a row kernel would run on a work group each.
      if (k.kind == KernelKind::kReduce && IsRowReduction(f_, inst, &dims)) {
        candidate_[i] = row_kernels;
        g.reduced_dims = dims;
        g.element = f_.type(inst.operands[0]).shape;
        g.reductions = 1;
      } else if (k.kind == KernelKind::kMap && (IsElementwise(inst.op) || inst.op == Op::kBroadcastInDim)) {
        // A broadcast joins only as a row broadcast (TryMerge): a row value used by several
        // element ops, materialized by PlanKernels as a value with several uses.
        candidate_[i] = row_kernels;
        map_candidate_[i] = map_groups && inst.op != Op::kBroadcastInDim;
      }
    }
    // Consumers join their producers' groups; a few passes let a merge that needed a
    // reduction in the group happen once one joined. Then map groups, of what is left.
    MergePasses(candidate_, &KernelGrouper::TryMerge);
    MergePasses(map_candidate_, &KernelGrouper::TryMergeMap);
    // Reduction groups: each split reduction joins the group of the one before it, if it can.
    int last = -1;
    for (size_t i = 0; reduction_groups && i < nk; ++i) {
      if (plan_.kernels[i].kind != KernelKind::kSplitReduce) continue;
      if (last < 0 || !TryMergeReductions(Find(last), static_cast<int>(i))) last = static_cast<int>(i);
    }
    Rebuild();
  }

 private:
  struct Group {
    std::vector<int> kernels;  // indices into plan_.kernels, ascending
    int reduced_dims = -1;     // k of its row reductions; -1: none (yet, or another kind)
    Shape element;             // S of its row reductions; a map group's shape
    // What a group of several kernels becomes: kRow, kMapGroup or kSplitReduce (a reduction
    // group).
    KernelKind kind = KernelKind::kRow;
    int reductions = 0;
    int min_pos = 0;  // its first kernel (the schedule's tie-break)
  };

  int Find(int x) {
    while (parent_[static_cast<size_t>(x)] != x) {
      x = parent_[static_cast<size_t>(x)] = parent_[static_cast<size_t>(parent_[static_cast<size_t>(x)])];
    }
    return x;
  }

  const Instruction& Root(int kernel) const {
    return f_.instructions[static_cast<size_t>(plan_.kernels[static_cast<size_t>(kernel)].instruction)];
  }

  // Kernels whose values instruction `inst`'s kernel loads: the materialized values its
  // operands reach through inlined values (all of them, parameters and constants included,
  // in *values).
  std::vector<int> ConeReads(int inst, std::vector<ValueId>* values) {
    ++stamp_;
    std::vector<int> out;
    std::vector<ValueId> stack(f_.instructions[static_cast<size_t>(inst)].operands);
    while (!stack.empty()) {
      const auto v = static_cast<size_t>(stack.back());
      stack.pop_back();
      if (value_stamp_[v] == stamp_) continue;
      value_stamp_[v] = stamp_;
      if (plan_.materialized[v]) {
        if (kernel_of_value_[v] >= 0) out.push_back(kernel_of_value_[v]);
        values->push_back(static_cast<ValueId>(v));
        continue;
      }
      const int p = plan_.producer[v];
      if (p < 0) continue;
      for (ValueId o : f_.instructions[static_cast<size_t>(p)].operands) stack.push_back(o);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // Whether the members of `kernels` (a group of element shape `element`, rows `rows`) read
  // each other only in place (see kernel_groups.h).
  bool InPlace(const std::vector<int>& kernels, const Shape& element, const Shape& rows) {
    ++stamp_;
    for (int k : kernels) {
      const Instruction& inst = Root(k);
      const auto v = static_cast<size_t>(inst.result);
      value_stamp_[v] = stamp_;
      visited_[v] = 0;
      role_[v] = static_cast<uint8_t>(f_.type(inst.result).shape == element && inst.op != Op::kReduce ? Level::kElement
                                                                                                      : Level::kRow);
    }
    std::function<bool(ValueId, Level)> visit = [&](ValueId value, Level level) -> bool {
      const auto v = static_cast<size_t>(value);
      if (value_stamp_[v] != stamp_) {
        value_stamp_[v] = stamp_;
        visited_[v] = 0;
        role_[v] = 0;
      }
      if (role_[v] != 0) return role_[v] == static_cast<uint8_t>(level);
      if ((visited_[v] & static_cast<uint8_t>(level)) != 0) return true;
      visited_[v] |= static_cast<uint8_t>(level);
      if (plan_.materialized[v]) return true;
      const int p = plan_.producer[v];
      if (p < 0) return true;
      const Instruction& inst = f_.instructions[static_cast<size_t>(p)];
      for (ValueId o : inst.operands) {
        const Shape& os = f_.type(o).shape;
        Level next = Level::kOther;
        if (level == Level::kElement && IsElementwise(inst.op) && os == element) next = Level::kElement;
        if (level == Level::kElement && IsRowBroadcast(f_, inst, rows, element)) next = Level::kRow;
        if (level == Level::kRow && IsElementwise(inst.op) && os == rows) next = Level::kRow;
        if (!visit(o, next)) return false;
      }
      return true;
    };
    for (int k : kernels) {
      const Instruction& inst = Root(k);
      const bool element_op = inst.op != Op::kReduce && f_.type(inst.result).shape == element;
      for (size_t i = 0; i < inst.operands.size(); ++i) {
        const ValueId o = inst.operands[i];
        Level level = Level::kOther;
        if (inst.op == Op::kReduce) {
          level = i == 0 ? Level::kElement : Level::kOther;
        } else if (inst.op == Op::kBroadcastInDim) {
          level = Level::kRow;  // a row broadcast (TryMerge checked)
        } else if (element_op) {
          level = f_.type(o).shape == element ? Level::kElement : Level::kOther;
        } else {
          level = f_.type(o).shape == rows ? Level::kRow : Level::kOther;
        }
        if (!visit(o, level)) return false;
      }
    }
    return true;
  }

  // The storage buffers a row kernel of `kernels` binds: the values it loads, and the values
  // of its members that a result is or another kernel reads.
  int Bindings(const std::vector<int>& kernels) {
    ++group_generation_;
    for (int k : kernels) in_group_[static_cast<size_t>(k)] = group_generation_;
    ++stamp_;
    int n = 0;
    for (int k : kernels) {
      for (ValueId v : read_values_[static_cast<size_t>(k)]) {
        const int producer = kernel_of_value_[static_cast<size_t>(v)];
        if (value_stamp_[static_cast<size_t>(v)] == stamp_ ||
            (producer >= 0 && in_group_[static_cast<size_t>(producer)] == group_generation_)) {
          continue;
        }
        value_stamp_[static_cast<size_t>(v)] = stamp_;
        ++n;
      }
      bool read_outside = is_result_[static_cast<size_t>(k)];
      for (int r : readers_[static_cast<size_t>(k)]) {
        read_outside = read_outside || in_group_[static_cast<size_t>(r)] != group_generation_;
      }
      n += read_outside ? 1 : 0;
    }
    return n;
  }

  // Groups whose kernels must run before group g's.
  template <typename Fn>
  void ForEachPred(int g, Fn&& fn) {
    for (int k : groups_[static_cast<size_t>(g)].kernels) {
      for (int r : reads_[static_cast<size_t>(k)]) {
        const int h = Find(r);
        if (h != g) fn(h);
      }
    }
  }

  // Whether group `to` depends on group `from` through a third group.
  bool PathViaOthers(int from, int to) {
    ++group_generation_;
    std::vector<int> stack;
    auto push = [&](int h) {
      if (group_stamp_[static_cast<size_t>(h)] == group_generation_) return;
      group_stamp_[static_cast<size_t>(h)] = group_generation_;
      stack.push_back(h);
    };
    ForEachPred(to, [&](int h) {
      if (h != from) push(h);
    });
    while (!stack.empty()) {
      const int h = stack.back();
      stack.pop_back();
      if (h == from) return true;
      // No pruning by position: a merged group's members span the program, so a group that
      // ends before `from` begins may still depend on it through another group.
      ForEachPred(h, push);
    }
    return false;
  }

  // Merges, in a few passes over the kernels, each `candidates` kernel's group with the groups of
  // the `candidates` kernels it reads, where `try_merge` agrees.
  void MergePasses(const std::vector<bool>& candidates, bool (KernelGrouper::*try_merge)(int, int)) {
    for (int pass = 0; pass < 4; ++pass) {
      bool changed = false;
      for (size_t i = 0; i < candidates.size(); ++i) {
        if (!candidates[i]) continue;
        for (int r : reads_[i]) {
          if (!candidates[static_cast<size_t>(r)]) continue;
          const int x = Find(r), y = Find(static_cast<int>(i));
          if (x != y && (this->*try_merge)(x, y)) changed = true;
        }
      }
      if (!changed) break;
    }
  }

  // The kernels of groups a and b, ascending.
  static std::vector<int> UnionOf(const Group& a, const Group& b) {
    std::vector<int> kernels = a.kernels;
    kernels.insert(kernels.end(), b.kernels.begin(), b.kernels.end());
    std::sort(kernels.begin(), kernels.end());
    return kernels;
  }

  // Replaces groups x and y by their union (kept at the lower index), with `merged`'s fields.
  void Join(int x, int y, Group merged) {
    const int keep = std::min(x, y), gone = std::max(x, y);
    merged.min_pos = std::min(groups_[static_cast<size_t>(x)].min_pos, groups_[static_cast<size_t>(y)].min_pos);
    groups_[static_cast<size_t>(keep)] = std::move(merged);
    groups_[static_cast<size_t>(gone)] = Group{};
    parent_[static_cast<size_t>(gone)] = keep;
  }

  // A map group: two groups without reductions (row kernels formed first) whose kernels are
  // all elementwise map kernels of one shape, reading each other in place.
  bool TryMergeMap(int x, int y) {
    const Group& a = groups_[static_cast<size_t>(x)];
    const Group& b = groups_[static_cast<size_t>(y)];
    if (a.reduced_dims >= 0 || b.reduced_dims >= 0) return false;
    std::vector<int> kernels = UnionOf(a, b);
    const Shape element = f_.type(Root(kernels[0]).result).shape;
    for (int k : kernels) {
      if (!map_candidate_[static_cast<size_t>(k)] || f_.type(Root(k).result).shape != element) return false;
    }
    if (Bindings(kernels) > max_bindings_) return false;
    if (!InPlace(kernels, element, element)) return false;
    if (PathViaOthers(x, y) || PathViaOthers(y, x)) return false;
    Group merged;
    merged.kernels = std::move(kernels);
    merged.element = element;
    merged.kind = KernelKind::kMapGroup;
    Join(x, y, std::move(merged));
    return true;
  }

  // Whether group `to` reads group `from`, directly or through other groups.
  bool DependsOn(int to, int from) {
    bool direct = false;
    ForEachPred(to, [&](int h) { direct = direct || h == from; });
    return direct || PathViaOthers(from, to);
  }

  // A reduction group: split reductions of one dtype, neither group depending on the other.
  bool TryMergeReductions(int x, int y) {
    const Group& a = groups_[static_cast<size_t>(x)];
    const Group& b = groups_[static_cast<size_t>(y)];
    if (f_.type(Root(a.kernels[0]).result).dtype != f_.type(Root(b.kernels[0]).result).dtype) return false;
    std::vector<int> kernels = UnionOf(a, b);
    if (Bindings(kernels) + 1 > max_bindings_) return false;  // + the scratch buffer
    if (DependsOn(x, y) || DependsOn(y, x)) return false;
    Group merged;
    merged.kernels = std::move(kernels);
    merged.kind = KernelKind::kSplitReduce;
    Join(x, y, std::move(merged));
    return true;
  }

  bool TryMerge(int x, int y) {
    Group& a = groups_[static_cast<size_t>(x)];
    Group& b = groups_[static_cast<size_t>(y)];
    if (a.reduced_dims < 0 && b.reduced_dims < 0) return false;
    if (a.reduced_dims >= 0 && b.reduced_dims >= 0 && (a.reduced_dims != b.reduced_dims || a.element != b.element)) {
      return false;
    }
    if (a.reductions + b.reductions > kMaxRowReductions) return false;
    const Group& with = a.reduced_dims >= 0 ? a : b;
    const Shape element = with.element;
    const Shape rows(element.begin(), element.end() - with.reduced_dims);
    std::vector<int> kernels = UnionOf(a, b);
    // Few rows are few work groups: element ops, which a map kernel spreads over the whole
    // device, join only when there are enough rows or little work.
    const bool element_ops = NumElements(rows) >= kMinRowsForElementOps || NumElements(element) <= kSmallElementCount;
    for (int k : kernels) {
      const Instruction& inst = Root(k);
      if (inst.op == Op::kReduce) continue;
      if (inst.op == Op::kBroadcastInDim) {
        if (!element_ops || !IsRowBroadcast(f_, inst, rows, element)) return false;
        continue;
      }
      const Shape& s = f_.type(inst.result).shape;
      if (s != rows && (s != element || !element_ops)) return false;
    }
    if (Bindings(kernels) > max_bindings_) return false;
    if (!InPlace(kernels, element, rows)) return false;
    if (PathViaOthers(x, y) || PathViaOthers(y, x)) return false;
    Group merged;
    merged.kernels = std::move(kernels);
    merged.reduced_dims = with.reduced_dims;
    merged.element = element;
    merged.reductions = a.reductions + b.reductions;
    Join(x, y, std::move(merged));
    return true;
  }

  // The new kernel list: a row kernel, map group or reduction group per group of several
  // kernels, in topological order.
  void Rebuild() {
    const size_t nk = plan_.kernels.size();
    std::vector<bool> read_outside(nk, false);
    for (size_t i = 0; i < nk; ++i) {
      for (int r : reads_[i]) {
        if (Find(r) != Find(static_cast<int>(i))) read_outside[static_cast<size_t>(r)] = true;
      }
    }
    for (ValueId r : f_.results) {
      const int k = kernel_of_value_[static_cast<size_t>(r)];
      if (k >= 0) read_outside[static_cast<size_t>(k)] = true;
    }
    std::vector<int> reps;
    for (size_t i = 0; i < nk; ++i) {
      if (Find(static_cast<int>(i)) == static_cast<int>(i)) reps.push_back(static_cast<int>(i));
    }
    // Kahn's algorithm, the group whose first kernel came first first.
    std::vector<int> indegree(nk, 0);
    std::vector<std::vector<int>> succs(nk);
    for (int g : reps) {
      ++group_generation_;
      ForEachPred(g, [&](int h) {
        if (group_stamp_[static_cast<size_t>(h)] == group_generation_) return;
        group_stamp_[static_cast<size_t>(h)] = group_generation_;
        succs[static_cast<size_t>(h)].push_back(g);
        ++indegree[static_cast<size_t>(g)];
      });
    }
    using Item = std::pair<int, int>;  // (min position, group)
    std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
    for (int g : reps) {
      if (indegree[static_cast<size_t>(g)] == 0) ready.push({groups_[static_cast<size_t>(g)].min_pos, g});
    }
    std::vector<PlannedKernel> kernels;
    std::vector<bool> materialized = plan_.materialized;
    size_t scheduled = 0;
    while (!ready.empty()) {
      const int g = ready.top().second;
      ready.pop();
      const Group& group = groups_[static_cast<size_t>(g)];
      ++scheduled;
      if (group.kernels.size() == 1) {
        kernels.push_back(plan_.kernels[static_cast<size_t>(group.kernels[0])]);
      } else {
        PlannedKernel row;
        row.kind = group.kind;
        row.fused_instructions = 0;
        for (int k : group.kernels) {
          const PlannedKernel& member = plan_.kernels[static_cast<size_t>(k)];
          row.members.push_back(member.instruction);
          row.fused_instructions += member.fused_instructions;
          // (A reduction group writes every member's value: SplitReduceKernelSource.)
          if (read_outside[static_cast<size_t>(k)] || group.kind == KernelKind::kSplitReduce) {
            row.outputs.push_back(member.value);
          } else {
            materialized[static_cast<size_t>(member.value)] = false;
          }
        }
        // Nothing reads a group without outputs: it is not run at all.
        if (!row.outputs.empty()) {
          row.value = row.outputs[0];
          row.instruction = row.members.back();
          kernels.push_back(std::move(row));
        }
      }
      for (int s : succs[static_cast<size_t>(g)]) {
        if (--indegree[static_cast<size_t>(s)] == 0) ready.push({groups_[static_cast<size_t>(s)].min_pos, s});
      }
    }
    // TryMerge never makes a cycle between groups; if one slipped through, the plan stays as
    // it was (slower, never wrong).
    if (scheduled != reps.size()) return;
    plan_.kernels = std::move(kernels);
    plan_.materialized = std::move(materialized);
  }

  const Function& f_;
  KernelPlan& plan_;
  int max_bindings_;
  std::vector<int> kernel_of_value_;               // per value: the kernel writing it, -1
  std::vector<std::vector<int>> reads_;            // per kernel: the kernels whose values it loads
  std::vector<std::vector<ValueId>> read_values_;  // per kernel: the values it loads
  std::vector<std::vector<int>> readers_;          // per kernel: the kernels that load its value
  std::vector<bool> is_result_;                    // per kernel: its value is a result
  std::vector<uint32_t> in_group_;                 // per kernel: group_generation_ of Bindings' group
  std::vector<bool> candidate_;                    // per kernel: a row reduction or an elementwise map kernel
  std::vector<bool> map_candidate_;                // per kernel: an elementwise map kernel (map groups)
  std::vector<int> parent_;                        // union-find over kernels
  std::vector<Group> groups_;                      // per representative kernel
  std::vector<uint32_t> value_stamp_;              // per value: visited in walk stamp_
  std::vector<uint8_t> visited_;                   // per value: levels visited (InPlace)
  std::vector<uint8_t> role_;                      // per value: a member's level, 0 for others (InPlace)
  uint32_t stamp_ = 0;
  std::vector<uint32_t> group_stamp_;
  uint32_t group_generation_ = 0;
};

}  // namespace

void GroupKernels(const Function& f, KernelPlan& plan, const PlanOptions& options) {
  KernelGrouper(f, plan, options.max_bindings).Run(options.row_kernels, options.map_groups, options.reduction_groups);
}

void GroupAttention(const Function& f, KernelPlan& plan) {
  std::vector<bool> gone(plan.kernels.size(), false);
  for (size_t a = 0; a < plan.kernels.size(); ++a) {
    PlannedKernel& forward = plan.kernels[a];
    const Instruction& fi = f.instructions[static_cast<size_t>(forward.instruction)];
    if (forward.kind != KernelKind::kAttention || fi.op != Op::kAttention || !forward.members.empty()) continue;
    for (size_t l = a + 1; l < plan.kernels.size(); ++l) {
      const PlannedKernel& lse = plan.kernels[l];
      const Instruction& li = f.instructions[static_cast<size_t>(lse.instruction)];
      if (gone[l] || lse.kind != KernelKind::kAttention || li.op != Op::kAttentionLse ||
          li.operands[0] != fi.operands[0] || li.operands[1] != fi.operands[1] || li.attrs.scale != fi.attrs.scale ||
          li.attrs.causal != fi.attrs.causal) {
        continue;
      }
      forward.members = {forward.instruction, lse.instruction};
      forward.outputs = {forward.value, lse.value};
      forward.fused_instructions += lse.fused_instructions;
      gone[l] = true;
      break;
    }
  }
  std::vector<PlannedKernel> kept;
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    if (!gone[k]) kept.push_back(std::move(plan.kernels[k]));
  }
  plan.kernels = std::move(kept);
}

}  // namespace pcp::vulkan
