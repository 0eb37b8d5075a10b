// The expression ops compiled in: each tree shape a template (Leaf / Unary / Binary nodes)
// whose loop GCC vectorises with the whole tree in registers. The library is compiled with
// -ffp-contract=off (CMakeLists.txt): every node rounds its result as its own pass would,
// and the math functions (vector_math.h) fuse multiply-adds only where they say so.
//
// Which shapes: every pair of arithmetic ops (op2(op1(a, b), c), op2(a, op1(b, c)), with
// negations), so that any chain fuses at least in pairs, and the larger trees of the GPT
// train step (GELU and its gradient, LayerNorm and its gradient, AdamW), found with
// PCP_CPU_EXPRESSIONS=1 (expression_fusion.h).
#include "expression_ops.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "elementwise_functors.h"

namespace pcp::cpu {
namespace {

constexpr std::string_view CompareNodeName(ComparisonDirection d) {
  constexpr std::string_view kNames[] = {"cmp_eq", "cmp_ne", "cmp_lt", "cmp_le", "cmp_gt", "cmp_ge"};
  return kNames[static_cast<int>(d)];
}

// The node name of an op of PCP_CPU_EXPRESSION_NODES; empty for other ops.
constexpr std::string_view NodeName(Op op) {
  switch (op) {
#define PCP_CPU_NODE_NAME_(e, name) \
  case Op::e: return name;
    PCP_CPU_EXPRESSION_NODES(PCP_CPU_NODE_NAME_)
#undef PCP_CPU_NODE_NAME_
    default: return {};
  }
}

// Nodes compute on f32 through the one-op loops' functors (elementwise_functors.h): the same
// bits as those loops.
static_assert(
    [] {
      for (int i = 0; i < kNumOps; ++i) {
        const Op op = static_cast<Op>(i);
        if (!NodeName(op).empty() && (!HasElementFn(op) || IsLogical(op) || OpArity(op) > 2)) return false;
      }
      return true;
    }(),
    "PCP_CPU_EXPRESSION_NODES: a node must be a unary or binary f32 op of PCP_CPU_ELEMENTWISE_FUNCTORS");

// Appends a node's signature: "name(operand,operand...)".
template <typename First, typename... Rest>
void AppendCall(std::string& out, std::string_view name) {
  out += name;
  out += '(';
  First::Name(out);
  ((out += ',', Rest::Name(out)), ...);
  out += ')';
}

// Tree nodes: kLeaves is one more than the highest leaf number below. Sources are f32
// registers, or i1 registers (bytes 0 / 1) for a select's condition.
template <int I>
struct Leaf {
  static constexpr int kLeaves = I + 1;
  static float Eval(const void* const* s, int64_t i) { return static_cast<const float*>(s[I])[i]; }
  static void Name(std::string& out) { out += std::to_string(I); }
};

template <int I>
struct PredLeaf {
  static constexpr int kLeaves = I + 1;
  static bool Eval(const void* const* s, int64_t i) { return static_cast<const uint8_t*>(s[I])[i] != 0; }
  static void Name(std::string& out) { out += std::to_string(I); }
};

template <Op k, typename A>
struct Unary {
  static constexpr int kLeaves = A::kLeaves;
  static float Eval(const void* const* s, int64_t i) { return ElementFn<k>::Apply(A::Eval(s, i)); }
  static void Name(std::string& out) { AppendCall<A>(out, NodeName(k)); }
};

template <Op k, typename A, typename B>
struct Binary {
  static constexpr int kLeaves = std::max(A::kLeaves, B::kLeaves);
  static float Eval(const void* const* s, int64_t i) { return ElementFn<k>::Apply(A::Eval(s, i), B::Eval(s, i)); }
  static void Name(std::string& out) { AppendCall<A, B>(out, NodeName(k)); }
};

// compare (an i1 result, only as a select's condition) and select, as SelectLoop and
// CompareOp in elementwise_ops.cc compute them (CompareValues; a select moves bits).
template <ComparisonDirection D, typename A, typename B>
struct Compare {
  static constexpr int kLeaves = std::max(A::kLeaves, B::kLeaves);
  static bool Eval(const void* const* s, int64_t i) { return CompareValues<D>(A::Eval(s, i), B::Eval(s, i)); }
  static void Name(std::string& out) { AppendCall<A, B>(out, CompareNodeName(D)); }
};

template <typename P, typename A, typename B>
struct Select {
  static constexpr int kLeaves = std::max({P::kLeaves, A::kLeaves, B::kLeaves});
  static float Eval(const void* const* s, int64_t i) { return P::Eval(s, i) ? A::Eval(s, i) : B::Eval(s, i); }
  static void Name(std::string& out) { AppendCall<P, A, B>(out, "select"); }
};

template <typename E>
void ExpressionLoop(const FusedOp& op, void* const* regs, int64_t n) {
  static_assert(E::kLeaves <= kMaxOperands);
  float* __restrict d = static_cast<float*>(regs[op.dst]);
  const void* s[E::kLeaves];
  for (int k = 0; k < E::kLeaves; ++k) s[k] = regs[op.src[k]];
  for (int64_t i = 0; i < n; ++i) d[i] = E::Eval(s, i);
}

// Shorthands for writing trees.
using L0 = Leaf<0>;
using L1 = Leaf<1>;
using L2 = Leaf<2>;
using L3 = Leaf<3>;
using L4 = Leaf<4>;
using L5 = Leaf<5>;
using L6 = Leaf<6>;
using L7 = Leaf<7>;
using L8 = Leaf<8>;
using P0 = PredLeaf<0>;
using P3 = PredLeaf<3>;
template <typename A, typename B>
using Add = Binary<Op::kAdd, A, B>;
template <typename A, typename B>
using Sub = Binary<Op::kSubtract, A, B>;
template <typename A, typename B>
using Mul = Binary<Op::kMultiply, A, B>;
template <typename A, typename B>
using Div = Binary<Op::kDivide, A, B>;
template <typename A, typename B>
using Max = Binary<Op::kMaximum, A, B>;
template <typename A>
using Neg = Unary<Op::kNegate, A>;
template <typename A>
using Exp = Unary<Op::kExponential, A>;
template <typename A>
using Erf = Unary<Op::kErf, A>;
template <typename A>
using Sqrt = Unary<Op::kSqrt, A>;
template <typename A, typename B>
using Eq = Compare<ComparisonDirection::kEQ, A, B>;

using Registry = absl::flat_hash_map<std::string, ElementwiseFn>;

template <typename E>
void Register(Registry& r) {
  std::string name;
  E::Name(name);
  r.emplace(std::move(name), &ExpressionLoop<E>);
}

constexpr Op kArithmetic[] = {Op::kAdd, Op::kSubtract, Op::kMultiply, Op::kDivide};

// All pairs: op2(op1(0, 1), 2), op2(0, op1(1, 2)), neg(op(0, 1)), op(neg(0), 1), op(0, neg(1)).
template <size_t... I>
void RegisterPairs(Registry& r, std::index_sequence<I...>) {
  (Register<Binary<kArithmetic[I / 4], Binary<kArithmetic[I % 4], L0, L1>, L2>>(r), ...);
  (Register<Binary<kArithmetic[I / 4], L0, Binary<kArithmetic[I % 4], L1, L2>>>(r), ...);
}
template <size_t... I>
void RegisterNegations(Registry& r, std::index_sequence<I...>) {
  (Register<Neg<Binary<kArithmetic[I], L0, L1>>>(r), ...);
  (Register<Binary<kArithmetic[I], Neg<L0>, L1>>(r), ...);
  (Register<Binary<kArithmetic[I], L0, Neg<L1>>>(r), ...);
}

// The GPT train step's larger trees.
void RegisterGpt(Registry& r) {
  // GELU: 0.5 h (1 + erf(h / sqrt 2)); its gradient dy (0.5 (1 + erf) + h exp(-h^2/2) / sqrt(2 pi)),
  // as autodiff writes it; exp's argument -(t t).
  Register<Mul<Mul<L0, L1>, Add<L2, L3>>>(r);
  Register<Add<Mul<Mul<L0, Add<L1, L2>>, L3>, Mul<Mul<Mul<L0, Mul<L4, L3>>, Mul<L5, L6>>, L7>>>(r);
  Register<Mul<Mul<Mul<L0, Mul<L1, L2>>, Mul<L3, L4>>, L5>>(r);
  Register<Neg<Mul<L0, L0>>>(r);
  Register<Mul<Mul<L0, L1>, Add<Erf<Mul<L0, L2>>, L3>>>(r);
  Register<Add<Mul<Mul<L0, Add<Erf<L1>, L2>>, L3>, Mul<Mul<Mul<L0, Mul<L4, L3>>, Mul<L5, Exp<Neg<Mul<L1, L1>>>>>, L6>>>(
      r);
  Register<Erf<Mul<L0, L1>>>(r);
  Register<Exp<Neg<Mul<L0, L0>>>>(r);
  // ... with GELU's output recomputed in the gradient's kernel (pcp/autodiff/remat.h): h / 2
  // and 1 + erf are read twice there (output and gradient), so the trees end at them.
  Register<Add<Mul<Mul<L0, L1>, L2>, Mul<Mul<Mul<L0, L3>, Mul<L4, Exp<Neg<Mul<L5, L5>>>>>, L6>>>(r);
  Register<Add<Erf<L0>, L1>>(r);
  // LayerNorm: (x - mean) rstd w + b and its gradient's pieces; its statistics' squares.
  Register<Add<Mul<Mul<L0, L1>, L2>, L3>>(r);
  Register<Mul<Mul<L0, L1>, Sub<L2, L3>>>(r);
  Register<Add<Add<Mul<Mul<L0, L1>, L2>, L3>, L3>>(r);
  Register<Mul<Mul<Mul<L0, L1>, Mul<L2, Mul<L2, L2>>>, L3>>(r);
  Register<Mul<L0, Mul<L0, L0>>>(r);
  Register<Unary<Op::kRsqrt, Add<Mul<L0, L1>, L2>>>(r);
  // ... and the gradient's pieces once its per-row scalings share its row kernel.
  Register<Add<Add<Mul<L0, L1>, L2>, L2>>(r);
  Register<Mul<L0, Mul<Sub<L1, L2>, L3>>>(r);
  // Softmax's gradient.
  Register<Neg<Div<Mul<L0, L1>, L2>>>(r);
  Register<Mul<Add<Div<L0, L1>, L2>, L3>>(r);
  Register<Div<L0, Max<L1, L2>>>(r);
  // Attention's scale and causal mask, the max's gradient mask (where x equals the row max),
  // and the softmax gradient through them.
  Register<Select<P0, Mul<L1, L2>, L3>>(r);
  Register<Select<Eq<L0, L1>, L2, L3>>(r);
  Register<Select<Eq<Select<P0, Mul<L1, L2>, L3>, L4>, L5, L6>>(r);
  Register<Mul<Add<Div<L0, L1>, L2>, Exp<Sub<Select<P3, Mul<L4, L5>, L6>, L7>>>>(r);
  Register<Mul<Select<P0, Add<L1, Mul<Select<Eq<Select<P0, Mul<L2, L3>, L4>, L5>, L6, L7>, L8>>, L7>, L3>>(r);
  // ... with the masked scores shared with the softmax gradient in one row kernel.
  Register<Mul<Select<P0, Add<L1, Mul<Select<Eq<L2, L3>, L4, L5>, L6>>, L5>, L7>>(r);
  // The cross-entropy's gradient pieces.
  Register<Add<L0, Mul<Select<Eq<L1, L2>, L3, L4>, L5>>>(r);
  Register<Select<P0, Sub<Sub<L1, L2>, L3>, L4>>(r);
  Register<Select<P0, Sub<L1, L2>, L3>>(r);
  Register<Add<Select<P0, L1, L2>, Mul<L3, L4>>>(r);
  Register<Neg<Select<P0, L1, L2>>>(r);
  Register<Exp<Sub<L0, L1>>>(r);
  Register<Mul<Add<Div<L0, L1>, L2>, Exp<Sub<L3, L4>>>>(r);
  // AdamW: the moments (b1 m + (1 - b1) g, b2 v + (1 - b2) g g) and the step.
  Register<Mul<Mul<L0, L0>, L1>>(r);
  Register<Add<Mul<L0, L1>, Mul<L2, L3>>>(r);
  Register<Add<Mul<L0, L1>, Mul<Mul<L2, L2>, L3>>>(r);
  Register<Mul<L0, Div<L1, Add<Div<L2, L3>, L4>>>>(r);
  Register<Add<Mul<L0, L1>, Mul<L2, Div<L3, Add<Div<L4, L5>, L6>>>>>(r);
  Register<Div<L0, Add<Div<L1, L2>, L3>>>(r);
  Register<Add<L0, Mul<L1, Div<L2, Add<Div<L3, L4>, L5>>>>>(r);
  Register<Add<Mul<L0, L1>, Mul<L2, Div<L3, Add<Div<Sqrt<L4>, L5>, L6>>>>>(r);
  Register<Add<L0, Mul<L1, Div<L2, Add<Div<Sqrt<L3>, L4>, L5>>>>>(r);
}

const Registry& Expressions() {
  static const Registry* registry = [] {
    auto* r = new Registry;
    RegisterPairs(*r, std::make_index_sequence<16>());
    RegisterNegations(*r, std::make_index_sequence<4>());
    RegisterGpt(*r);
    return r;
  }();
  return *registry;
}

}  // namespace

std::string_view ExpressionNodeName(Op op, ComparisonDirection direction) {
  if (op == Op::kSelect) return "select";
  if (op == Op::kCompare) return CompareNodeName(direction);
  return NodeName(op);
}

bool IsPredicateNode(std::string_view node) { return node.substr(0, 4) == "cmp_"; }

ElementwiseFn GetExpressionFn(std::string_view signature) {
  const Registry& r = Expressions();
  auto it = r.find(absl::string_view(signature.data(), signature.size()));
  return it == r.end() ? nullptr : it->second;
}

std::vector<std::string> ExpressionSignatures() {
  std::vector<std::string> out;
  for (const auto& [name, fn] : Expressions()) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace pcp::cpu
