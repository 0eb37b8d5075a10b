#include "shift_invariance.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace pcp {
namespace {

// How a value changes when every row of the candidate max m is shifted by c.
struct Change {
  enum Kind : uint8_t { kFixed, kShift, kScale, kUnknown } kind = kFixed;
  int k = 0;         // shift: + k·c; scale: × e^(k·c)
  bool row = false;  // m's shape (else the reduced input's)
};

Change Fixed() { return {}; }
Change Unknown() { return {Change::kUnknown, 0, false}; }
// Shift or scale by k; by 0 it is fixed.
Change Make(Change::Kind kind, int k, bool row) { return k == 0 ? Fixed() : Change{kind, k, row}; }

std::vector<int64_t> Sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// The change of `inst`'s result from its operands' changes (not all fixed). `reduced` are m's
// reduced dimensions, `kept` the others in order, `full` the reduced input's type.
Change Propagate(const Instruction& inst, const std::vector<Change>& change, const std::vector<int64_t>& reduced,
                 const std::vector<int64_t>& kept, const TensorType& full, const TensorType& result_type) {
  auto of = [&](size_t i) { return change[static_cast<size_t>(inst.operands[i])]; };
  switch (inst.op) {
    case Op::kBroadcastInDim: {
      const Change a = of(0);
      if (!a.row || result_type.shape != full.shape || inst.attrs.dims != kept) return Unknown();
      return Make(a.kind, a.k, /*row=*/false);
    }
    case Op::kReduce: {
      const Change a = of(0);
      if (a.kind != Change::kScale || a.row || inst.attrs.reduce_kind != ReduceKind::kSum ||
          of(1).kind != Change::kFixed || Sorted(inst.attrs.dims) != reduced) {
        return Unknown();
      }
      return Make(Change::kScale, a.k, /*row=*/true);
    }
    case Op::kExponential: return of(0).kind == Change::kShift ? Make(Change::kScale, of(0).k, of(0).row) : Unknown();
    case Op::kLog: return of(0).kind == Change::kScale ? Make(Change::kShift, of(0).k, of(0).row) : Unknown();
    case Op::kNegate: return of(0).kind == Change::kShift ? Make(Change::kShift, -of(0).k, of(0).row) : Unknown();
    case Op::kAdd:
    case Op::kSubtract:
    case Op::kMultiply:
    case Op::kDivide: {
      const Change a = of(0), b = of(1);
      const bool additive = inst.op == Op::kAdd || inst.op == Op::kSubtract;
      const Change::Kind kind = additive ? Change::kShift : Change::kScale;
      for (const Change& x : {a, b}) {
        if (x.kind != Change::kFixed && x.kind != kind) return Unknown();
      }
      const bool row = a.kind != Change::kFixed ? a.row : b.row;
      if (a.kind != Change::kFixed && b.kind != Change::kFixed && a.row != b.row) return Unknown();
      const int sign = inst.op == Op::kSubtract || inst.op == Op::kDivide ? -1 : 1;
      return Make(kind, a.k + sign * b.k, row);
    }
    default: return Unknown();
  }
}

// Whether `output` provably does not depend on the reduce max defined by forward[at].
bool OutputIgnoresMax(const Function& f, size_t at, ValueId output, const std::vector<bool>& needed) {
  const Instruction& max = f.instructions[at];
  const TensorType& full = f.type(max.operands[0]);
  const std::vector<int64_t> reduced = Sorted(max.attrs.dims);
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < full.rank(); ++d) {
    if (!std::binary_search(reduced.begin(), reduced.end(), d)) kept.push_back(d);
  }
  std::vector<Change> change(static_cast<size_t>(f.num_values()));
  change[static_cast<size_t>(max.result)] = {Change::kShift, 1, /*row=*/true};
  for (size_t i = at + 1; i < f.instructions.size(); ++i) {
    const Instruction& inst = f.instructions[i];
    const bool touched = std::any_of(inst.operands.begin(), inst.operands.end(),
                                     [&](ValueId v) { return change[static_cast<size_t>(v)].kind != Change::kFixed; });
    if (!touched) continue;
    Change c = Propagate(inst, change, reduced, kept, full, f.type(inst.result));
    if (c.kind == Change::kUnknown && needed[static_cast<size_t>(inst.result)]) return false;
    change[static_cast<size_t>(inst.result)] = c;
  }
  return change[static_cast<size_t>(output)].kind == Change::kFixed;
}

}  // namespace

std::vector<bool> ShiftInvariantMaxima(const Function& f, ValueId output, const std::vector<bool>& needed) {
  std::vector<bool> cut(static_cast<size_t>(f.num_values()), false);
  for (size_t i = 0; i < f.instructions.size(); ++i) {
    const Instruction& inst = f.instructions[i];
    if (inst.op != Op::kReduce || inst.attrs.reduce_kind != ReduceKind::kMax || inst.attrs.dims.empty() ||
        !IsFloat(f.type(inst.result).dtype) || !needed[static_cast<size_t>(inst.result)]) {
      continue;
    }
    cut[static_cast<size_t>(inst.result)] = OutputIgnoresMax(f, i, output, needed);
  }
  return cut;
}

}  // namespace pcp
