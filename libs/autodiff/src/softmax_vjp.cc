#include "softmax_vjp.h"

#include <algorithm>

namespace pcp {
namespace {

const Instruction* Defining(const Function& f, const std::vector<int>& defining, ValueId v) {
  const int at = defining[static_cast<size_t>(v)];
  return at < 0 ? nullptr : &f.instructions[static_cast<size_t>(at)];
}

// The dimensions of `shape`'s rank not in `dims` (sorted), in order.
std::vector<int64_t> Kept(int64_t rank, const std::vector<int64_t>& dims) {
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < rank; ++d) {
    if (!std::binary_search(dims.begin(), dims.end(), d)) kept.push_back(d);
  }
  return kept;
}

// Whether `inst` is a one-element f32 or f64 constant equal to ±0.
bool IsZero(const Instruction* inst) {
  if (inst == nullptr || inst->op != Op::kConstant || inst->attrs.literal.num_elements() != 1) return false;
  const Tensor& t = inst->attrs.literal;
  if (t.dtype() == DType::kF32) return t.data<float>()[0] == 0.0f;
  return t.dtype() == DType::kF64 && t.data<double>()[0] == 0.0;
}

}  // namespace

bool MatchSoftmax(const Function& f, const std::vector<int>& defining, const Instruction& divide, SoftmaxMatch* match) {
  if (divide.op != Op::kDivide || !IsFloat(f.type(divide.result).dtype)) return false;
  const ValueId e = divide.operands[0];
  const Instruction* exp = Defining(f, defining, e);
  const Instruction* broadcast = Defining(f, defining, divide.operands[1]);
  if (exp == nullptr || exp->op != Op::kExponential || broadcast == nullptr || broadcast->op != Op::kBroadcastInDim) {
    return false;
  }
  const Instruction* sum = Defining(f, defining, broadcast->operands[0]);
  if (sum == nullptr || sum->op != Op::kReduce || sum->attrs.reduce_kind != ReduceKind::kSum || sum->operands[0] != e ||
      sum->attrs.dims.empty()) {
    return false;
  }
  // The init must be the literal 0 for the row sum to be Σ e (the builder always makes it so).
  if (!IsZero(Defining(f, defining, sum->operands[1]))) return false;
  std::vector<int64_t> dims = sum->attrs.dims;
  std::sort(dims.begin(), dims.end());
  if (broadcast->attrs.dims != Kept(f.type(e).rank(), dims)) return false;
  match->input = exp->operands[0];
  match->dims = std::move(dims);
  return true;
}

ValueId SoftmaxVjp(FunctionBuilder& b, ValueId p, ValueId g, const SoftmaxMatch& match) {
  const TensorType type = b.type(p);
  ValueId row_dot = b.ReduceSum(b.Mul(g, p), match.dims);
  ValueId centered = b.Sub(g, b.BroadcastInDim(row_dot, type.shape, Kept(type.rank(), match.dims)));
  return b.Mul(p, centered);
}

}  // namespace pcp
