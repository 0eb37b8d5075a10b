// Passes: each test checks the structure a pass leaves (instruction counts, what got folded)
// and that the function still computes the same thing (Interpret before == after, bit for
// bit, on random inputs and on special values), with Verify after every pass.
#include "pcp/autodiff/passes.h"

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/verifier.h"
#include "pcp/base/status_macros.h"
#include "pcp/testing/tensor_testing.h"

namespace pcp {
namespace {

using ::pcp::testing::RandomTensor;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

Tensor F32(Shape s, std::vector<float> v) { return Tensor::FromVector<float>(std::move(s), v); }

int Count(const Function& f, Op op) {
  int n = 0;
  for (const Instruction& inst : f.instructions) n += inst.op == op;
  return n;
}

// The instruction defining `v`, or nullptr for a parameter.
const Instruction* Def(const Function& f, ValueId v) {
  for (const Instruction& inst : f.instructions) {
    if (inst.result == v) return &inst;
  }
  return nullptr;
}

// Runs both functions on the same arguments and demands bitwise-equal results.
void ExpectSameResults(const Function& before, const Function& after, const std::vector<Tensor>& args) {
  absl::StatusOr<std::vector<Tensor>> a = Interpret(before, args);
  absl::StatusOr<std::vector<Tensor>> b = Interpret(after, args);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(a->size(), b->size());
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_TRUE(BitwiseEqual((*a)[i], (*b)[i]))
        << "result " << i << ": before " << ::testing::PrintToString(pcp::testing::ToDoubles((*a)[i])) << ", after "
        << ::testing::PrintToString(pcp::testing::ToDoubles((*b)[i]));
  }
}

// Same, on three sets of random arguments (floats in [-2, 2), integers in [0, 8)).
void ExpectSameSemantics(const Function& before, const Function& after) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    std::vector<Tensor> args;
    for (ValueId p : before.params) {
      const TensorType& t = before.type(p);
      args.push_back(IsFloat(t.dtype) ? RandomTensor(t, seed * 100 + p, -2, 2) : RandomTensor(t, seed + p, 0, 8));
    }
    ExpectSameResults(before, after, args);
  }
}

// Runs `pass` on a copy of `f`, checks Verify afterwards and semantics against `f`.
Function RunPass(const Function& f, const std::function<absl::Status(Function&)>& pass) {
  Function g = f;
  absl::Status s = pass(g);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_TRUE(Verify(g).ok()) << Verify(g);
  ExpectSameSemantics(f, g);
  return g;
}

absl::Status FoldDce(Function& f) {
  PCP_RETURN_IF_ERROR(FoldConstants(f));
  return EliminateDeadCode(f);
}

Function BuildOrDie(FunctionBuilder& b) {
  absl::StatusOr<Function> f = b.Build();
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *std::move(f) : Function{};
}

// ---- Dead code ---------------------------------------------------------------------------

TEST(DeadCodeTest, RemovesOnlyWhatNoResultNeeds) {
  FunctionBuilder b("dce");
  ValueId x = b.Parameter({DType::kF32, {3}}, "x");
  ValueId e = b.Exp(x);
  b.Neg(b.Log(x));        // dead chain
  b.ScalarConstant(4.0);  // dead constant
  ValueId t = b.Tanh(e);
  b.Return({t, e});
  Function f = BuildOrDie(b);
  ASSERT_EQ(f.instructions.size(), 5u);
  Function g = RunPass(f, EliminateDeadCode);
  EXPECT_EQ(g.instructions.size(), 2u);
  EXPECT_EQ(Count(g, Op::kExponential), 1);
  EXPECT_EQ(Count(g, Op::kTanh), 1);
  EXPECT_EQ(Count(g, Op::kLog), 0);
}

TEST(DeadCodeTest, NoResultsMeansNoInstructions) {
  FunctionBuilder b("empty");
  ValueId x = b.Parameter({DType::kF32, {3}}, "x");
  b.Exp(x);
  Function f = BuildOrDie(b);
  Function g = RunPass(f, EliminateDeadCode);
  EXPECT_TRUE(g.instructions.empty());
}

// ---- Common subexpressions ---------------------------------------------------------------

TEST(CseTest, MergesIdenticalInstructionsTransitively) {
  FunctionBuilder b("cse");
  ValueId x = b.Parameter({DType::kF32, {4}}, "x");
  ValueId n1 = b.Neg(b.Exp(x));
  ValueId n2 = b.Neg(b.Exp(x));  // identical only once the two exps are one
  ValueId c1 = b.Full(2.0, {DType::kF32, {4}});
  ValueId c2 = b.Full(2.0, {DType::kF32, {4}});
  b.Return({b.Add(b.Mul(n1, c1), b.Mul(n2, c2)), n2});
  Function f = BuildOrDie(b);
  ASSERT_EQ(f.instructions.size(), 11u);
  Function g = RunPass(f, EliminateCommonSubexpressions);
  // exp, neg, constant, broadcast, multiply, add.
  EXPECT_EQ(g.instructions.size(), 6u);
  EXPECT_EQ(Count(g, Op::kExponential), 1);
  EXPECT_EQ(Count(g, Op::kMultiply), 1);
  EXPECT_EQ(Count(g, Op::kConstant), 1);
  // The second result now names the surviving negate.
  ASSERT_NE(Def(g, g.results[1]), nullptr);
  EXPECT_EQ(Def(g, g.results[1])->op, Op::kNegate);
  const Instruction* add = Def(g, g.results[0]);
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->operands[0], add->operands[1]);
}

TEST(CseTest, KeepsInstructionsThatDifferInAttributesOrType) {
  FunctionBuilder b("distinct");
  ValueId x = b.Parameter({DType::kF32, {2, 2}}, "x");
  ValueId y = b.Parameter({DType::kF32, {2, 2}}, "y");
  std::vector<ValueId> r = {
      b.Convert(b.Compare(x, y, ComparisonDirection::kGT), DType::kF32),
      b.Convert(b.Compare(x, y, ComparisonDirection::kLT), DType::kF32),
      b.Convert(x, DType::kI32),  // same op, operand and attributes: the type differs
      b.Convert(x, DType::kI64),
      b.ReduceSum(x, {0}),
      b.ReduceSum(x, {1}),
      b.ReduceMax(x, {1}),
      b.Transpose(x, {1, 0}),
      b.Transpose(y, {1, 0}),  // same attributes, other operand
      b.Sub(x, y),
      b.Sub(y, x),
      b.Full(0.0, {DType::kF32, {2, 2}}),
      b.BroadcastInDim(b.Constant(Tensor::Scalar<float>(-0.0f)), {2, 2}, {}),  // -0 is not +0
  };
  b.Return(r);
  Function f = BuildOrDie(b);
  Function g = RunPass(f, EliminateCommonSubexpressions);
  // Only the +0 scalars (two reduce inits and Full's) are shared.
  EXPECT_EQ(g.instructions.size(), f.instructions.size() - 2);
  EXPECT_EQ(Count(g, Op::kConstant), 3);  // +0, -inf, -0
  EXPECT_EQ(Count(g, Op::kReduce), 3);
  EXPECT_EQ(Count(g, Op::kConvert), 4);
  EXPECT_EQ(Count(g, Op::kTranspose), 2);
}

// ---- Constant folding --------------------------------------------------------------------

TEST(FoldTest, FoldsScalarArithmetic) {
  FunctionBuilder b("scalars");
  ValueId x = b.Parameter({DType::kF32, {}}, "x");
  ValueId c = b.Sqrt(b.Add(b.ScalarConstant(7.0), b.ScalarConstant(9.0)));  // 4
  b.Return({b.Mul(x, c), c});
  Function f = BuildOrDie(b);
  Function g = RunPass(f, FoldDce);
  EXPECT_EQ(Count(g, Op::kAdd), 0);
  EXPECT_EQ(Count(g, Op::kSqrt), 0);
  EXPECT_EQ(g.instructions.size(), 2u);  // constant 4, multiply
  const Instruction* four = Def(g, g.results[1]);
  ASSERT_NE(four, nullptr);
  ASSERT_EQ(four->op, Op::kConstant);
  EXPECT_EQ(four->attrs.literal.data<float>()[0], 4.0f);
}

TEST(FoldTest, SplatResultStaysAScalarBroadcast) {
  FunctionBuilder b("splat");
  const TensorType t{DType::kF32, {64}};
  b.Return({b.Add(b.Full(2.0, t), b.Full(3.0, t))});
  Function f = BuildOrDie(b);
  Function g = RunPass(f, FoldDce);
  ASSERT_EQ(g.instructions.size(), 2u);
  const Instruction* bcast = Def(g, g.results[0]);
  ASSERT_NE(bcast, nullptr);
  ASSERT_EQ(bcast->op, Op::kBroadcastInDim);
  const Instruction* scalar = Def(g, bcast->operands[0]);
  ASSERT_NE(scalar, nullptr);
  ASSERT_EQ(scalar->op, Op::kConstant);
  EXPECT_EQ(scalar->attrs.literal.shape(), Shape{});
  EXPECT_EQ(scalar->attrs.literal.data<float>()[0], 5.0f);
}

TEST(FoldTest, FoldsThroughIotaAndBroadcastIntoALiteral) {
  // A causal mask: iota(0) >= iota(1) is a constant, so the compare becomes a literal.
  FunctionBuilder b("mask");
  ValueId x = b.Parameter({DType::kF32, {4, 4}}, "x");
  const TensorType it{DType::kI32, {4, 4}};
  ValueId mask = b.Compare(b.Iota(it, 0), b.Iota(it, 1), ComparisonDirection::kGE);
  ValueId masked = b.Select(mask, x, b.Full(-1e9, {DType::kF32, {4, 4}}));
  b.Return({masked});
  Function f = BuildOrDie(b);
  Function g = RunPass(f, FoldDce);
  EXPECT_EQ(Count(g, Op::kIota), 0);
  EXPECT_EQ(Count(g, Op::kCompare), 0);
  EXPECT_EQ(Count(g, Op::kSelect), 1);
  const Instruction* select = Def(g, g.results[0]);
  ASSERT_NE(select, nullptr);
  const Instruction* literal = Def(g, select->operands[0]);
  ASSERT_NE(literal, nullptr);
  ASSERT_EQ(literal->op, Op::kConstant);
  EXPECT_EQ(pcp::testing::ToDoubles(literal->attrs.literal),
            (std::vector<double>{1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1}));
}

TEST(FoldTest, RespectsMaxElements) {
  FunctionBuilder b("big");
  const TensorType t{DType::kF32, {8}};
  b.Return({b.Mul(b.Iota(t, 0), b.Full(2.0, t))});
  Function f = BuildOrDie(b);
  Function small = RunPass(f, [](Function& g) { return FoldConstants(g, /*max_elements=*/4); });
  EXPECT_EQ(small.instructions.size(), f.instructions.size());
  EXPECT_EQ(Count(small, Op::kMultiply), 1);
  Function folded = RunPass(f, [](Function& g) { return FoldConstants(g, /*max_elements=*/8); });
  EXPECT_EQ(Count(folded, Op::kMultiply), 0);
}

TEST(FoldTest, LeavesParameterDependentWorkAlone) {
  FunctionBuilder b("live");
  ValueId x = b.Parameter({DType::kF32, {3}}, "x");
  b.Return({b.Add(x, b.Full(0.5, {DType::kF32, {3}}))});
  Function f = BuildOrDie(b);
  Function g = RunPass(f, FoldDce);
  EXPECT_EQ(g.instructions.size(), f.instructions.size());
}

// ---- Identities --------------------------------------------------------------------------

// x with the values an inexact identity would get wrong: -0, +0, infinities, NaN.
const std::vector<Tensor> kSpecial = {F32({6}, {-0.0f, 0.0f, kInf, -kInf, kNaN, 1.5f})};

enum class SplatForm { kBroadcast, kLiteral };

// f(x) = op(x, c) (or op(c, x) if `constant_first`), c a splat of `value` in either form.
Function BinaryWithSplat(Op op, float value, bool constant_first, SplatForm form) {
  FunctionBuilder b("identity");
  const TensorType t{DType::kF32, {6}};
  ValueId x = b.Parameter(t, "x");
  ValueId c = form == SplatForm::kBroadcast ? b.BroadcastInDim(b.Constant(Tensor::Scalar<float>(value)), {6}, {})
                                            : b.Constant(F32({6}, std::vector<float>(6, value)));
  b.Return({constant_first ? b.Emit(op, {c, x}) : b.Emit(op, {x, c})});
  return BuildOrDie(b);
}

TEST(IdentityTest, ExactIdentitiesReturnTheOperand) {
  struct Identity {
    Op op;
    float value;
    bool constant_first;
  };
  const Identity identities[] = {
      {Op::kMultiply, 1.0f, false}, {Op::kMultiply, 1.0f, true}, {Op::kDivide, 1.0f, false},
      {Op::kSubtract, 0.0f, false}, {Op::kAdd, -0.0f, false},    {Op::kAdd, -0.0f, true},
  };
  for (const Identity& id : identities) {
    for (SplatForm form : {SplatForm::kBroadcast, SplatForm::kLiteral}) {
      SCOPED_TRACE(::testing::Message() << OpName(id.op) << " " << id.value << (id.constant_first ? " first" : ""));
      Function f = BinaryWithSplat(id.op, id.value, id.constant_first, form);
      Function g = RunPass(f, FoldDce);
      EXPECT_TRUE(g.instructions.empty());
      EXPECT_EQ(g.results[0], g.params[0]);
      ExpectSameResults(f, g, kSpecial);
    }
  }
}

TEST(IdentityTest, InexactLookalikesAreKept) {
  struct Lookalike {
    Op op;
    float value;
    bool constant_first;
  };
  // x + (+0) turns -0 into +0; x - (-0) likewise; 0 - x, 1 / x and x * 2 are not x.
  const Lookalike kept[] = {
      {Op::kAdd, 0.0f, false},   {Op::kSubtract, -0.0f, false}, {Op::kSubtract, 0.0f, true},
      {Op::kDivide, 1.0f, true}, {Op::kMultiply, 2.0f, false},
  };
  for (const Lookalike& k : kept) {
    SCOPED_TRACE(::testing::Message() << OpName(k.op) << " " << k.value << (k.constant_first ? " first" : ""));
    Function f = BinaryWithSplat(k.op, k.value, k.constant_first, SplatForm::kBroadcast);
    Function g = RunPass(f, FoldDce);
    EXPECT_EQ(Count(g, k.op), 1);
    ExpectSameResults(f, g, kSpecial);
  }
  // A literal of ones but one: not a splat.
  FunctionBuilder b("not_splat");
  ValueId x = b.Parameter({DType::kF32, {3}}, "x");
  b.Return({b.Mul(x, b.Constant(F32({3}, {1, 2, 1})))});
  Function f = BuildOrDie(b);
  EXPECT_EQ(Count(RunPass(f, FoldDce), Op::kMultiply), 1);
}

TEST(IdentityTest, IntegerIdentities) {
  FunctionBuilder b("ints");
  const TensorType t{DType::kI32, {5}};
  ValueId x = b.Parameter(t, "x");
  ValueId y = b.Add(b.Mul(x, b.Full(1, t)), b.Full(0, t));
  b.Return({b.Sub(b.Div(y, b.Full(1, t)), b.Full(0, t))});
  Function f = BuildOrDie(b);
  Function g = RunPass(f, FoldDce);
  EXPECT_TRUE(g.instructions.empty());
  EXPECT_EQ(g.results[0], g.params[0]);
}

TEST(IdentityTest, LayoutAndConvertNoOps) {
  FunctionBuilder b("layout");
  const TensorType t{DType::kF32, {2, 3}};
  ValueId x = b.Parameter(t, "x");
  ValueId v = b.Transpose(x, {0, 1});
  v = b.Emit(Op::kReshape, {v}, {}, &t);  // the builder's Reshape would skip this itself
  Attributes identity_dims;
  identity_dims.dims = {0, 1};
  v = b.Emit(Op::kBroadcastInDim, {v}, identity_dims, &t);
  v = b.Emit(Op::kConvert, {v}, {}, &t);
  ValueId kept = b.Transpose(x, {1, 0});
  ValueId widened = b.BroadcastInDim(b.Reshape(x, {1, 2, 3}), {4, 2, 3}, {0, 1, 2});
  b.Return({v, kept, widened, b.Convert(x, DType::kI32)});
  Function f = BuildOrDie(b);
  Function g = RunPass(f, FoldDce);
  EXPECT_EQ(g.results[0], g.params[0]);
  EXPECT_EQ(Count(g, Op::kTranspose), 1);
  EXPECT_EQ(Count(g, Op::kBroadcastInDim), 1);
  EXPECT_EQ(Count(g, Op::kReshape), 1);
  EXPECT_EQ(Count(g, Op::kConvert), 1);
}

TEST(IdentityTest, FoldedConstantsFeedIdentities) {
  // sqrt(1) folds to 1, and then x * 1 is x.
  FunctionBuilder b("chain");
  ValueId x = b.Parameter({DType::kF32, {}}, "x");
  b.Return({b.Mul(x, b.Sqrt(b.ScalarConstant(1.0)))});
  Function f = BuildOrDie(b);
  Function g = RunPass(f, FoldDce);
  EXPECT_TRUE(g.instructions.empty());
}

// ---- CompactValues and the standard pipeline ---------------------------------------------

// ---- Sums of zero-padded concatenations --------------------------------------------------

// A [2, 3] piece of `b`'s function: one parameter, or a splat of `value` (-0, +0, ...).
ValueId SplatPiece(FunctionBuilder& b, float value, int64_t width) {
  return b.BroadcastInDim(b.Constant(Tensor::Scalar<float>(value)), {2, width}, {});
}

// The three parameters padded as the slice VJP pads q, k and v's gradients, and summed.
Function PaddedSum(float zero_q, float zero_k, float zero_v) {
  FunctionBuilder b("padded_sum");
  const TensorType t{DType::kF32, {2, 3}};
  ValueId q = b.Parameter(t, "q"), k = b.Parameter(t, "k"), v = b.Parameter(t, "v");
  ValueId gq = b.Concatenate({q, SplatPiece(b, zero_q, 6)}, 1);
  ValueId gk = b.Concatenate({SplatPiece(b, zero_k, 3), k, SplatPiece(b, zero_k, 3)}, 1);
  ValueId gv = b.Concatenate({SplatPiece(b, zero_v, 6), v}, 1);
  b.Return({b.Add(b.Add(gq, gk), gv)});
  return BuildOrDie(b);
}

// q, k, v with -0, +0 and the other special values in every piece.
std::vector<Tensor> SpecialPieces() {
  return {F32({2, 3}, {-0.0f, 0.0f, kInf, -kInf, kNaN, 1.5f}), F32({2, 3}, {0.0f, -0.0f, 1.0f, kNaN, -2.0f, kInf}),
          F32({2, 3}, {kNaN, -kInf, -0.0f, 0.0f, 3.0f, -0.0f})};
}

TEST(PaddedSumTest, SlicesGradientsSumIntoOneConcatenate) {
  Function f = PaddedSum(-0.0f, -0.0f, -0.0f);
  Function g = RunPass(f, FoldDce);
  EXPECT_EQ(Count(g, Op::kAdd), 0);
  ASSERT_EQ(Count(g, Op::kConcatenate), 1);
  const Instruction* concat = Def(g, g.results[0]);
  ASSERT_NE(concat, nullptr);
  ASSERT_EQ(concat->op, Op::kConcatenate);
  EXPECT_EQ(concat->operands, (std::vector<ValueId>{g.params[0], g.params[1], g.params[2]}));
  ExpectSameResults(f, g, SpecialPieces());
}

TEST(PaddedSumTest, ZeroRunsOfBothSidesMerge) {
  // concat(q, -0 x6) + concat(-0 x4, +0 x2, k): boundaries inside the zeros, which are cut
  // (-0 + -0 = -0, -0 + +0 = +0).
  FunctionBuilder b("zeros");
  const TensorType t{DType::kF32, {2, 3}};
  ValueId q = b.Parameter(t, "q"), k = b.Parameter(t, "k");
  ValueId lhs = b.Concatenate({q, SplatPiece(b, -0.0f, 6)}, 1);
  ValueId rhs = b.Concatenate({SplatPiece(b, -0.0f, 4), SplatPiece(b, 0.0f, 2), k}, 1);
  b.Return({b.Add(lhs, rhs)});
  Function f = BuildOrDie(b);
  Function g = RunPass(f, FoldDce);
  EXPECT_EQ(Count(g, Op::kAdd), 0);
  const Instruction* concat = Def(g, g.results[0]);
  ASSERT_NE(concat, nullptr);
  ASSERT_EQ(concat->op, Op::kConcatenate);
  EXPECT_EQ(concat->operands.size(), 4u);
  std::vector<Tensor> args = SpecialPieces();
  args.pop_back();
  ExpectSameResults(f, g, args);
}

TEST(PaddedSumTest, InexactOrOverlappingSumsAreKept) {
  // +0 padding: x + (+0) turns -0 into +0, so the sum must stay.
  Function plus = PaddedSum(0.0f, 0.0f, 0.0f);
  Function g = RunPass(plus, FoldDce);
  EXPECT_EQ(Count(g, Op::kAdd), 2);
  ExpectSameResults(plus, g, SpecialPieces());
  // Data on both sides at the same place.
  FunctionBuilder b("overlap");
  const TensorType t{DType::kF32, {2, 3}};
  ValueId q = b.Parameter(t, "q"), k = b.Parameter(t, "k");
  ValueId lhs = b.Concatenate({q, SplatPiece(b, -0.0f, 3)}, 1);
  ValueId rhs = b.Concatenate({SplatPiece(b, -0.0f, 1), k, SplatPiece(b, -0.0f, 2)}, 1);
  b.Return({b.Add(lhs, rhs)});
  Function f = BuildOrDie(b);
  EXPECT_EQ(Count(RunPass(f, FoldDce), Op::kAdd), 1);
  // Concatenations along different dimensions.
  FunctionBuilder c("dims");
  ValueId x = c.Parameter({DType::kF32, {2, 2}}, "x"), y = c.Parameter({DType::kF32, {4, 1}}, "y");
  ValueId along0 = c.Concatenate({x, c.BroadcastInDim(c.Constant(Tensor::Scalar<float>(-0.0f)), {2, 2}, {})}, 0);
  ValueId along1 = c.Concatenate({c.BroadcastInDim(c.Constant(Tensor::Scalar<float>(-0.0f)), {4, 1}, {}), y}, 1);
  c.Return({c.Add(along0, along1)});
  Function h = BuildOrDie(c);
  EXPECT_EQ(Count(RunPass(h, FoldDce), Op::kAdd), 1);
}

TEST(CompactValuesTest, RenumbersDenselyWithParametersFirst) {
  FunctionBuilder b("compact");
  ValueId x = b.Parameter({DType::kF32, {3}}, "x");
  ValueId y = b.Parameter({DType::kF32, {3}}, "y");
  b.Log(x);
  ValueId e = b.Exp(y);
  b.Tanh(e);
  b.Return({b.Add(x, e)});
  Function f = BuildOrDie(b);
  Function g = RunPass(f, EliminateDeadCode);
  CompactValues(g);
  EXPECT_TRUE(Verify(g).ok()) << Verify(g);
  EXPECT_EQ(g.num_values(), 4);
  EXPECT_EQ(g.params, (std::vector<ValueId>{0, 1}));
  EXPECT_EQ(g.param_names, (std::vector<std::string>{"x", "y"}));
  for (size_t i = 0; i < g.instructions.size(); ++i) EXPECT_EQ(g.instructions[i].result, static_cast<ValueId>(2 + i));
  EXPECT_EQ(g.results[0], 3);
  ExpectSameSemantics(f, g);
}

// A small MLP loss with redundant and constant work, as model code tends to emit it.
Function Mlp() {
  FunctionBuilder b("mlp");
  ValueId x = b.Parameter({DType::kF32, {4, 3}}, "x");
  ValueId w = b.Parameter({DType::kF32, {3, 5}}, "w");
  ValueId bias = b.Parameter({DType::kF32, {5}}, "b");
  ValueId h1 = b.BAdd(b.MatMul(x, w), bias);
  ValueId h2 = b.BAdd(b.MatMul(x, w), bias);       // the same again
  ValueId scale = b.Rsqrt(b.ScalarConstant(4.0));  // 0.5, constant
  ValueId act = b.Tanh(b.BMul(h1, scale));
  ValueId act_again = b.Tanh(b.BMul(h2, scale));
  ValueId diff = b.Sub(act, b.Full(0.0, {DType::kF32, {4, 5}}));
  ValueId sq = b.Mul(diff, act_again);
  ValueId loss = b.Div(b.ReduceSum(sq, {0, 1}), b.ScalarConstant(1.0));
  b.Log(loss);  // dead
  b.Return({loss}, {"loss"});
  return BuildOrDie(b);
}

TEST(StandardPassesTest, ShrinksAndKeepsSemantics) {
  Function f = Mlp();
  Function g = RunPass(f, RunStandardPasses);
  EXPECT_LT(g.instructions.size(), f.instructions.size());
  EXPECT_EQ(Count(g, Op::kDotGeneral), 1);
  EXPECT_EQ(Count(g, Op::kTanh), 1);
  EXPECT_EQ(Count(g, Op::kRsqrt), 0);
  EXPECT_EQ(Count(g, Op::kLog), 0);
  EXPECT_EQ(Count(g, Op::kSubtract), 0);
  EXPECT_EQ(Count(g, Op::kDivide), 0);
  EXPECT_EQ(g.num_values(), static_cast<int64_t>(g.params.size() + g.instructions.size()));
  EXPECT_EQ(g.result_names, (std::vector<std::string>{"loss"}));
  // A second run finds nothing more to do.
  Function h = RunPass(g, RunStandardPasses);
  EXPECT_EQ(h.instructions.size(), g.instructions.size());
}

TEST(StandardPassesTest, EveryPassRejectsAnInvalidFunction) {
  Function f = Mlp();
  f.instructions[0].operands[0] = 999;
  for (auto* pass : {&EliminateDeadCode, &EliminateCommonSubexpressions, &RunStandardPasses}) {
    Function g = f;
    absl::Status s = pass(g);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  }
  Function g = f;
  absl::Status s = FoldConstants(g);
  EXPECT_NE(s.message().find("FoldConstants"), std::string::npos) << s;
}

}  // namespace
}  // namespace pcp

namespace pcp {
namespace {

// RebuildFunction copies what the rewrite leaves (kNoValue) and takes what it emits in its
// place, mapping later readers; a rewrite's bad emission is the builder's error.
TEST(RebuildFunctionTest, CopiesOrReplacesEachInstruction) {
  FunctionBuilder b("f");
  ValueId x = b.Parameter({DType::kF32, {3}}, "x");
  b.Return({b.Exp(b.Neg(x))}, {"y"});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  auto keep = [](FunctionBuilder&, const Instruction&, const std::vector<ValueId>&) { return kNoValue; };
  absl::StatusOr<Function> copy = RebuildFunction(*f, keep);
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(copy->instructions.size(), f->instructions.size());
  EXPECT_EQ(copy->param_names, f->param_names);
  EXPECT_EQ(copy->result_names, f->result_names);
  // negate(x) -> 0 - x: the exp reads the subtraction.
  auto subtract = [](FunctionBuilder& fb, const Instruction& inst, const std::vector<ValueId>& map) -> ValueId {
    if (inst.op != Op::kNegate) return kNoValue;
    return fb.Sub(fb.Full(0.0, fb.type(map[static_cast<size_t>(inst.operands[0])])),
                  map[static_cast<size_t>(inst.operands[0])]);
  };
  absl::StatusOr<Function> g = RebuildFunction(*f, subtract);
  ASSERT_TRUE(g.ok()) << g.status();
  const Tensor arg = Tensor::FromVector<float>({3}, {1.0f, -2.0f, 0.5f});
  absl::StatusOr<std::vector<Tensor>> want = Interpret(*f, {arg});
  absl::StatusOr<std::vector<Tensor>> got = Interpret(*g, {arg});
  ASSERT_TRUE(want.ok() && got.ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(got->at(0).data<float>()[i], want->at(0).data<float>()[i]);
  bool subtracts = false;
  for (const Instruction& inst : g->instructions) subtracts |= inst.op == Op::kSubtract;
  EXPECT_TRUE(subtracts);
  auto bad = [](FunctionBuilder& fb, const Instruction& inst, const std::vector<ValueId>& map) -> ValueId {
    return fb.Add(map[static_cast<size_t>(inst.operands[0])], fb.ScalarConstant(1.0));  // shapes differ
  };
  absl::StatusOr<Function> broken = RebuildFunction(*f, bad);
  EXPECT_FALSE(broken.ok());
}

}  // namespace
}  // namespace pcp
