#include "pcp/autodiff/passes.h"

#include <cstring>
#include <functional>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/verifier.h"
#include "pcp/base/status_macros.h"

// Every pass starts with Verify, so the index arithmetic below may trust operand ids, and a
// malformed function is reported as an error instead of being rewritten.

namespace pcp {
namespace {

// ---- Common subexpressions --------------------------------------------------------------

void HashCombine(size_t& h, size_t v) { h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2); }

void HashInts(size_t& h, const std::vector<int64_t>& v) {
  HashCombine(h, v.size());
  for (int64_t x : v) HashCombine(h, std::hash<int64_t>()(x));
}

size_t HashInstruction(const Instruction& inst, const TensorType& type) {
  size_t h = std::hash<int>()(static_cast<int>(inst.op));
  for (ValueId v : inst.operands) HashCombine(h, std::hash<ValueId>()(v));
  HashCombine(h, static_cast<size_t>(type.dtype));
  HashInts(h, type.shape);
  const Attributes& a = inst.attrs;
  if (a.literal.valid()) {
    HashCombine(h, std::hash<std::string_view>()(std::string_view(
                       static_cast<const char*>(a.literal.raw_data()), static_cast<size_t>(a.literal.byte_size()))));
  }
  HashCombine(h, std::hash<int64_t>()(a.dimension));
  for (const std::vector<int64_t>* v : {&a.dims, &a.start, &a.limit, &a.stride, &a.dot.lhs_batch,
                                        &a.dot.rhs_batch, &a.dot.lhs_contract, &a.dot.rhs_contract}) {
    HashInts(h, *v);
  }
  HashCombine(h, static_cast<size_t>(a.comparison));
  HashCombine(h, static_cast<size_t>(a.reduce_kind));
  return h;
}

// ---- Constant folding helpers -----------------------------------------------------------

// The single value of a scalar tensor, as a rank-0 tensor, if every element of `t` is
// bitwise equal to the first; nullopt otherwise.
std::optional<Tensor> SplatValue(const Tensor& t) {
  if (!t.valid() || t.num_elements() == 0) return std::nullopt;
  const int64_t size = SizeOf(t.dtype());
  const auto* p = static_cast<const uint8_t*>(t.raw_data());
  for (int64_t i = 1; i < t.num_elements(); ++i) {
    if (std::memcmp(p, p + i * size, size) != 0) return std::nullopt;
  }
  Tensor scalar(t.dtype(), {});
  std::memcpy(scalar.raw_data(), p, size);
  return scalar;
}

// Scalar tests for the identities; they compare bits, so -0.0 is not "zero" for x - 0.
bool IsOne(const Tensor& s) {
  switch (s.dtype()) {
    case DType::kF32: return s.data<float>()[0] == 1.0f;
    case DType::kF64: return s.data<double>()[0] == 1.0;
    case DType::kI32: return s.data<int32_t>()[0] == 1;
    case DType::kI64: return s.data<int64_t>()[0] == 1;
    default: return false;
  }
}

uint32_t FloatBits(const Tensor& s) {
  uint32_t bits;
  std::memcpy(&bits, s.raw_data(), sizeof(bits));
  return bits;
}

uint64_t DoubleBits(const Tensor& s) {
  uint64_t bits;
  std::memcpy(&bits, s.raw_data(), sizeof(bits));
  return bits;
}

// x - z == x for every x (including -0): z is +0.0, or integer 0.
bool IsSubtractIdentity(const Tensor& s) {
  switch (s.dtype()) {
    case DType::kF32: return FloatBits(s) == 0x00000000u;
    case DType::kF64: return DoubleBits(s) == 0;
    case DType::kI32: return s.data<int32_t>()[0] == 0;
    case DType::kI64: return s.data<int64_t>()[0] == 0;
    default: return false;
  }
}

// x + z == x for every x: z is -0.0 (since +0.0 + -0.0 = +0.0, while -0.0 + +0.0 = +0.0), or 0.
bool IsAddIdentity(const Tensor& s) {
  if (s.dtype() == DType::kF32) return FloatBits(s) == 0x80000000u;
  if (s.dtype() == DType::kF64) return DoubleBits(s) == uint64_t{1} << 63;
  return IsSubtractIdentity(s);
}

bool IsIdentityPermutation(const std::vector<int64_t>& dims) {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// What FoldConstants knows about each value while it walks the function.
struct Knowledge {
  std::vector<Tensor> value;  // the value, if computed (valid()) and small enough
  std::vector<Tensor> splat;  // the scalar every element equals, for splat constants
};

// The value that `inst` equals by an exact identity, or kNoValue.
ValueId Identity(const Function& f, const Instruction& inst, const Knowledge& k) {
  const TensorType& rt = f.type(inst.result);
  auto splat = [&](size_t i) -> const Tensor* {
    const Tensor& s = k.splat[inst.operands[i]];
    return s.valid() ? &s : nullptr;
  };
  switch (inst.op) {
    case Op::kMultiply:
      if (const Tensor* s = splat(1); s && IsOne(*s)) return inst.operands[0];
      if (const Tensor* s = splat(0); s && IsOne(*s)) return inst.operands[1];
      return kNoValue;
    case Op::kDivide:
      if (const Tensor* s = splat(1); s && IsOne(*s)) return inst.operands[0];
      return kNoValue;
    case Op::kAdd:
      if (const Tensor* s = splat(1); s && IsAddIdentity(*s)) return inst.operands[0];
      if (const Tensor* s = splat(0); s && IsAddIdentity(*s)) return inst.operands[1];
      return kNoValue;
    case Op::kSubtract:
      if (const Tensor* s = splat(1); s && IsSubtractIdentity(*s)) return inst.operands[0];
      return kNoValue;
    case Op::kTranspose:
      return IsIdentityPermutation(inst.attrs.dims) ? inst.operands[0] : kNoValue;
    case Op::kBroadcastInDim:
      return f.type(inst.operands[0]).shape == rt.shape && IsIdentityPermutation(inst.attrs.dims)
                 ? inst.operands[0]
                 : kNoValue;
    case Op::kReshape:
    case Op::kConvert:
      return f.type(inst.operands[0]) == rt ? inst.operands[0] : kNoValue;
    default:
      return kNoValue;
  }
}

// Iota and broadcast_in_dim are kept as they are (a literal would only be bigger), but their
// values are known, so instructions consuming them still fold.
bool KeepUnfolded(Op op) { return op == Op::kIota || op == Op::kBroadcastInDim; }

}  // namespace

absl::Status EliminateDeadCode(Function& f) {
  PCP_RETURN_IF_ERROR(Verify(f), _ << "EliminateDeadCode");
  std::vector<bool> live(static_cast<size_t>(f.num_values()), false);
  for (ValueId v : f.results) live[v] = true;
  for (auto it = f.instructions.rbegin(); it != f.instructions.rend(); ++it) {
    if (!live[it->result]) continue;
    for (ValueId v : it->operands) live[v] = true;
  }
  std::erase_if(f.instructions, [&](const Instruction& inst) { return !live[inst.result]; });
  return absl::OkStatus();
}

absl::Status EliminateCommonSubexpressions(Function& f) {
  PCP_RETURN_IF_ERROR(Verify(f), _ << "EliminateCommonSubexpressions");
  std::vector<ValueId> replace(static_cast<size_t>(f.num_values()));
  for (size_t v = 0; v < replace.size(); ++v) replace[v] = static_cast<ValueId>(v);
  std::vector<Instruction> kept;
  std::unordered_map<size_t, std::vector<size_t>> by_hash;  // hash -> indices into `kept`
  for (Instruction& inst : f.instructions) {
    for (ValueId& v : inst.operands) v = replace[v];
    const TensorType& type = f.type(inst.result);
    const size_t h = HashInstruction(inst, type);
    ValueId earlier = kNoValue;
    for (size_t j : by_hash[h]) {
      const Instruction& e = kept[j];
      if (e.op == inst.op && e.operands == inst.operands && f.type(e.result) == type &&
          AttributesEqual(e.attrs, inst.attrs)) {
        earlier = e.result;
        break;
      }
    }
    if (earlier != kNoValue) {
      replace[inst.result] = earlier;
      continue;
    }
    by_hash[h].push_back(kept.size());
    kept.push_back(std::move(inst));
  }
  f.instructions = std::move(kept);
  for (ValueId& v : f.results) v = replace[v];
  return absl::OkStatus();
}

absl::Status FoldConstants(Function& f, int64_t max_elements) {
  PCP_RETURN_IF_ERROR(Verify(f), _ << "FoldConstants");
  Knowledge k;
  k.value.resize(static_cast<size_t>(f.num_values()));
  k.splat.resize(static_cast<size_t>(f.num_values()));
  std::vector<ValueId> replace(static_cast<size_t>(f.num_values()));
  for (size_t v = 0; v < replace.size(); ++v) replace[v] = static_cast<ValueId>(v);

  std::vector<Instruction> out;
  std::vector<Tensor> operand_values;
  // The instructions are rebuilt into `out`; `f` meanwhile only supplies value types (and
  // receives those of the scalar constants that splat results introduce).
  std::vector<Instruction> input = std::move(f.instructions);
  for (Instruction& inst : input) {
    for (ValueId& v : inst.operands) v = replace[v];
    const ValueId r = inst.result;
    const TensorType rt = f.type(r);

    if (inst.op == Op::kConstant) {
      // Operands count towards the bound too, so folding time stays proportional to it.
      if (rt.num_elements() <= max_elements) k.value[r] = inst.attrs.literal;
      if (std::optional<Tensor> s = SplatValue(inst.attrs.literal)) k.splat[r] = *s;
      out.push_back(std::move(inst));
      continue;
    }
    if (ValueId x = Identity(f, inst, k); x != kNoValue) {
      replace[r] = x;  // the instruction is dropped: later uses now read x
      continue;
    }
    if (inst.op == Op::kBroadcastInDim && k.splat[inst.operands[0]].valid()) {
      k.splat[r] = k.splat[inst.operands[0]];
    }

    bool all_known = rt.num_elements() <= max_elements;
    operand_values.clear();
    for (ValueId v : inst.operands) {
      all_known = all_known && k.value[v].valid();
      if (all_known) operand_values.push_back(k.value[v]);
    }
    if (!all_known) {
      out.push_back(std::move(inst));
      continue;
    }
    absl::StatusOr<Tensor> value = EvaluateInstruction(inst, rt, operand_values);
    if (!value.ok()) {
      // Folding is an optimisation: an instruction the interpreter cannot evaluate (f16, or
      // an error that the program would also hit at run time) is left for run time.
      out.push_back(std::move(inst));
      continue;
    }
    k.value[r] = *value;
    if (KeepUnfolded(inst.op)) {
      out.push_back(std::move(inst));
      continue;
    }
    std::optional<Tensor> s = SplatValue(*value);
    if (s.has_value()) k.splat[r] = *s;
    if (s.has_value() && rt.num_elements() > 1) {
      // A splat result becomes scalar + broadcast, the compact form the builder's Full() emits.
      const ValueId scalar = static_cast<ValueId>(f.value_types.size());
      f.value_types.push_back(TensorType{rt.dtype, {}});
      k.value.push_back(*s);
      k.splat.push_back(*s);
      replace.push_back(scalar);
      Attributes literal;
      literal.literal = *s;
      out.push_back(Instruction{Op::kConstant, {}, scalar, std::move(literal)});
      Attributes broadcast;
      out.push_back(Instruction{Op::kBroadcastInDim, {scalar}, r, std::move(broadcast)});
    } else {
      Attributes literal;
      literal.literal = *value;
      out.push_back(Instruction{Op::kConstant, {}, r, std::move(literal)});
    }
  }
  f.instructions = std::move(out);
  for (ValueId& v : f.results) v = replace[v];
  return absl::OkStatus();
}

void CompactValues(Function& f) {
  const int64_t n = f.num_values();
  std::vector<ValueId> remap(static_cast<size_t>(n), kNoValue);
  std::vector<TensorType> types;
  auto lookup = [&](ValueId v) { return v >= 0 && v < n ? remap[v] : kNoValue; };
  auto define = [&](ValueId& v) {
    if (v < 0 || v >= n) {
      v = kNoValue;
      return;
    }
    remap[v] = static_cast<ValueId>(types.size());
    types.push_back(f.value_types[v]);
    v = remap[v];
  };
  for (ValueId& v : f.params) define(v);
  for (Instruction& inst : f.instructions) {
    for (ValueId& v : inst.operands) v = lookup(v);
    define(inst.result);
  }
  for (ValueId& v : f.results) v = lookup(v);
  f.value_types = std::move(types);
}

absl::Status RunStandardPasses(Function& f) {
  PCP_RETURN_IF_ERROR(FoldConstants(f));
  PCP_RETURN_IF_ERROR(EliminateCommonSubexpressions(f));
  PCP_RETURN_IF_ERROR(EliminateDeadCode(f));
  CompactValues(f);
  PCP_RETURN_IF_ERROR(Verify(f), _ << "after standard passes");
  return absl::OkStatus();
}

}  // namespace pcp
