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
    HashCombine(h, std::hash<std::string_view>()(std::string_view(static_cast<const char*>(a.literal.raw_data()),
                                                                  static_cast<size_t>(a.literal.byte_size()))));
  }
  HashCombine(h, std::hash<int64_t>()(a.dimension));
  for (const std::vector<int64_t>* v : {&a.dims, &a.start, &a.limit, &a.stride, &a.dot.lhs_batch, &a.dot.rhs_batch,
                                        &a.dot.lhs_contract, &a.dot.rhs_contract}) {
    HashInts(h, *v);
  }
  HashCombine(h, static_cast<size_t>(a.comparison));
  HashCombine(h, static_cast<size_t>(a.reduce_kind));
  return h;
}

// ---- Constant folding helpers -----------------------------------------------------------

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
    case Op::kTranspose: return IsIdentityPermutation(inst.attrs.dims) ? inst.operands[0] : kNoValue;
    case Op::kBroadcastInDim:
      return f.type(inst.operands[0]).shape == rt.shape && IsIdentityPermutation(inst.attrs.dims) ? inst.operands[0]
                                                                                                  : kNoValue;
    case Op::kReshape:
    case Op::kConvert: return f.type(inst.operands[0]) == rt ? inst.operands[0] : kNoValue;
    default: return kNoValue;
  }
}

// Iota and broadcast_in_dim are kept as they are (a literal would only be bigger), but their
// values are known, so instructions consuming them still fold.
bool KeepUnfolded(Op op) { return op == Op::kIota || op == Op::kBroadcastInDim; }

// ---- Sums of zero-padded concatenations ---------------------------------------------------

// add(concatenate(a...), concatenate(b...)) along one dimension where, at every position, one
// side is a splat of the exact additive identity (-0.0, integer 0): the concatenation of the
// other side's pieces there. Both +0.0 is +0.0 too. The slice VJP pads with -0.0, so the
// gradients of several slices of one value (q, k and v of one projection) sum into one
// concatenation instead of adding zero-padded copies. Pieces are never cut, except splats.
class PaddedSumMerger {
 public:
  // `def[v]`: index in `out` of the instruction defining v, or -1. `new_value(type, splat)`
  // adds a value to the function (and to the caller's per-value tables, splat included).
  PaddedSumMerger(Function& f, const Knowledge& k, const std::vector<int>& def, std::vector<Instruction>& out,
                  std::function<ValueId(TensorType, const Tensor&)> new_value)
      : f_(f), k_(k), def_(def), out_(out), new_value_(std::move(new_value)) {}

  // Appends the concatenation defining inst.result to `out` and returns true, or returns false.
  bool Merge(const Instruction& inst) {
    if (inst.op != Op::kAdd) return false;
    const Instruction* a = Producer(inst.operands[0]);
    const Instruction* b = Producer(inst.operands[1]);
    if (a == nullptr || b == nullptr || a->op != Op::kConcatenate || b->op != Op::kConcatenate ||
        a->attrs.dimension != b->attrs.dimension) {
      return false;
    }
    const int64_t dim = a->attrs.dimension;
    if (f_.type(inst.result).shape[dim] == 0) return false;
    const std::vector<Piece> pa = Pieces(*a, dim), pb = Pieces(*b, dim);
    // Walk the segments between all piece boundaries, choosing a side for each.
    std::vector<Piece> taken;  // per segment: the piece (or splat part) kept
    size_t i = 0, j = 0;
    int64_t pos = 0;
    const int64_t total = f_.type(inst.result).shape[dim];
    while (pos < total) {
      const Piece& x = pa[i];
      const Piece& y = pb[j];
      const int64_t end = std::min(x.start + x.size, y.start + y.size);
      const Piece* keep = nullptr;
      if (y.kind == Kind::kIdentity) {
        keep = &x;
      } else if (x.kind == Kind::kIdentity) {
        keep = &y;
      } else if (x.kind == Kind::kPlusZero && y.kind == Kind::kPlusZero) {
        keep = &x;
      } else {
        return false;
      }
      if (keep->kind == Kind::kOther && (keep->start != pos || keep->start + keep->size != end)) {
        return false;  // a piece of data would have to be cut
      }
      taken.push_back(Piece{pos, end - pos, keep->value, keep->kind});
      pos = end;
      if (x.start + x.size == end) ++i;
      if (y.start + y.size == end) ++j;
    }
    std::vector<ValueId> operands;
    for (const Piece& piece : taken) {
      if (piece.kind == Kind::kOther || f_.type(piece.value).shape[dim] == piece.size) {
        operands.push_back(piece.value);
        continue;
      }
      // A part of a splat: the same scalar broadcast to the part's shape.
      const Instruction* p = Producer(piece.value);
      if (p == nullptr || p->op != Op::kBroadcastInDim || f_.type(p->operands[0]).rank() != 0) return false;
      TensorType t = f_.type(inst.result);
      t.shape[dim] = piece.size;
      const ValueId scalar = p->operands[0];
      const ValueId v = new_value_(t, k_.splat[static_cast<size_t>(piece.value)]);
      pending_.push_back(Instruction{Op::kBroadcastInDim, {scalar}, v, Attributes{}});
      operands.push_back(v);
    }
    for (Instruction& p : pending_) out_.push_back(std::move(p));
    pending_.clear();
    Attributes attrs;
    attrs.dimension = dim;
    out_.push_back(Instruction{Op::kConcatenate, std::move(operands), inst.result, std::move(attrs)});
    return true;
  }

 private:
  enum class Kind { kIdentity, kPlusZero, kOther };
  struct Piece {
    int64_t start = 0, size = 0;
    ValueId value = kNoValue;
    Kind kind = Kind::kOther;
  };

  const Instruction* Producer(ValueId v) const {
    const int d = def_[static_cast<size_t>(v)];
    return d < 0 ? nullptr : &out_[static_cast<size_t>(d)];
  }

  std::vector<Piece> Pieces(const Instruction& concat, int64_t dim) const {
    std::vector<Piece> pieces;
    int64_t start = 0;
    for (ValueId v : concat.operands) {
      const int64_t size = f_.type(v).shape[dim];
      Kind kind = Kind::kOther;
      if (const Tensor& s = k_.splat[static_cast<size_t>(v)]; s.valid()) {
        if (IsAddIdentity(s)) {
          kind = Kind::kIdentity;
        } else if (IsSubtractIdentity(s)) {
          kind = Kind::kPlusZero;
        }
      }
      if (size > 0) pieces.push_back(Piece{start, size, v, kind});
      start += size;
    }
    return pieces;
  }

  Function& f_;
  const Knowledge& k_;
  const std::vector<int>& def_;
  std::vector<Instruction>& out_;
  std::function<ValueId(TensorType, const Tensor&)> new_value_;
  std::vector<Instruction> pending_;
};

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
  std::vector<int> def(static_cast<size_t>(f.num_values()), -1);  // value -> index in out
  std::vector<Tensor> operand_values;
  PaddedSumMerger merger(f, k, def, out, [&](TensorType t, const Tensor& splat) {
    const ValueId v = static_cast<ValueId>(f.value_types.size());
    f.value_types.push_back(std::move(t));
    k.value.emplace_back();
    k.splat.push_back(splat);
    replace.push_back(v);
    def.resize(static_cast<size_t>(v) + 1, -1);
    return v;
  });
  // Records where the instructions appended to `out` since `from` define their results.
  auto define_from = [&](size_t from) {
    for (size_t i = from; i < out.size(); ++i) {
      const size_t r = static_cast<size_t>(out[i].result);
      if (r >= def.size()) def.resize(r + 1, -1);
      def[r] = static_cast<int>(i);
    }
  };
  // The instructions are rebuilt into `out`; `f` meanwhile only supplies value types (and
  // receives those of the scalar constants that splat results introduce).
  std::vector<Instruction> input = std::move(f.instructions);
  auto fold_one = [&](Instruction& inst) {
    for (ValueId& v : inst.operands) v = replace[v];
    const ValueId r = inst.result;
    const TensorType rt = f.type(r);

    if (inst.op == Op::kConstant) {
      // Operands count towards the bound too, so folding time stays proportional to it.
      if (rt.num_elements() <= max_elements) k.value[r] = inst.attrs.literal;
      if (std::optional<Tensor> s = SplatValue(inst.attrs.literal)) k.splat[r] = *s;
      out.push_back(std::move(inst));
      return;
    }
    if (ValueId x = Identity(f, inst, k); x != kNoValue) {
      replace[r] = x;  // the instruction is dropped: later uses now read x
      return;
    }
    if (merger.Merge(inst)) return;
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
      return;
    }
    absl::StatusOr<Tensor> value = EvaluateInstruction(inst, rt, operand_values);
    if (!value.ok()) {
      // Folding is an optimisation: an instruction the interpreter cannot evaluate (f16, or
      // an error that the program would also hit at run time) is left for run time.
      out.push_back(std::move(inst));
      return;
    }
    k.value[r] = *value;
    if (KeepUnfolded(inst.op)) {
      out.push_back(std::move(inst));
      return;
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
  };
  for (Instruction& inst : input) {
    const size_t before = out.size();
    fold_one(inst);
    define_from(before);
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

absl::StatusOr<Function> RebuildFunction(const Function& f, const InstructionRewrite& rewrite) {
  FunctionBuilder b(f.name);
  std::vector<ValueId> map(static_cast<size_t>(f.num_values()), kNoValue);
  for (size_t i = 0; i < f.params.size(); ++i) {
    map[static_cast<size_t>(f.params[i])] =
        b.Parameter(f.type(f.params[i]), i < f.param_names.size() ? f.param_names[i] : "");
  }
  for (const Instruction& inst : f.instructions) {
    ValueId r = rewrite(b, inst, map);
    if (r == kNoValue) {
      std::vector<ValueId> operands;
      for (ValueId o : inst.operands) operands.push_back(map[static_cast<size_t>(o)]);
      r = b.Emit(inst.op, std::move(operands), inst.attrs, &f.type(inst.result));
    }
    map[static_cast<size_t>(inst.result)] = r;
  }
  std::vector<ValueId> results;
  for (ValueId v : f.results) results.push_back(map[static_cast<size_t>(v)]);
  b.Return(std::move(results), f.result_names);
  return b.Build();
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
