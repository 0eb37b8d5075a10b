// The op list, type inference (a positive and a negative case for every op), the builder's
// sticky error and the verifier.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/ir.h"
#include "pcp/autodiff/op_list.h"
#include "pcp/autodiff/type_inference.h"
#include "pcp/autodiff/verifier.h"

namespace pcp {
namespace {

bool Contains(absl::string_view haystack, absl::string_view needle) {
  return haystack.find(needle) != absl::string_view::npos;
}

// ---- Op list -----------------------------------------------------------------------------

TEST(OpListTest, NamesAreUniqueAndDialectQualified) {
  std::set<std::string> names;
  for (int i = 0; i < kNumOps; ++i) {
    absl::string_view name = OpName(AllOps()[i]);
    // PCP's own ops (fused attention, attention.h) are in the pcp dialect.
    const bool own = GetOpCategory(AllOps()[i]) == OpCategory::kAttention;
    EXPECT_EQ(absl::StartsWith(name, "pcp."), own) << name;
    EXPECT_TRUE(own || absl::StartsWith(name, "stablehlo.") || absl::StartsWith(name, "chlo.")) << name;
    EXPECT_TRUE(names.insert(std::string(name)).second) << "duplicate name " << name;
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(kNumOps));
}

TEST(OpListTest, AllOpsListsTheEnumInOrder) {
  for (int i = 0; i < kNumOps; ++i) EXPECT_EQ(AllOps()[i], static_cast<Op>(i));
}

TEST(OpListTest, ParseOpRoundTripsEveryOp) {
  for (int i = 0; i < kNumOps; ++i) {
    Op op = AllOps()[i];
    absl::StatusOr<Op> parsed = ParseOp(OpName(op));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, op) << OpName(op);
  }
  absl::StatusOr<Op> bad = ParseOp("stablehlo.bogus");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(bad.status().message(), "stablehlo.bogus")) << bad.status();
  EXPECT_FALSE(ParseOp("").ok());
  EXPECT_FALSE(ParseOp("add").ok());
}

TEST(OpListTest, ArityAndCategory) {
  struct Expect {
    Op op;
    int arity;
    OpCategory category;
  };
  const Expect expected[] = {
      {Op::kConstant, 0, OpCategory::kSource},          {Op::kIota, 0, OpCategory::kSource},
      {Op::kAdd, 2, OpCategory::kElementwise},          {Op::kPower, 2, OpCategory::kElementwise},
      {Op::kNegate, 1, OpCategory::kElementwise},       {Op::kErf, 1, OpCategory::kElementwise},
      {Op::kCompare, 2, OpCategory::kElementwise},      {Op::kSelect, 3, OpCategory::kElementwise},
      {Op::kCeil, 1, OpCategory::kElementwise},         {Op::kClamp, 3, OpCategory::kElementwise},
      {Op::kAnd, 2, OpCategory::kElementwise},          {Op::kOr, 2, OpCategory::kElementwise},
      {Op::kNot, 1, OpCategory::kElementwise},          {Op::kConvert, 1, OpCategory::kElementwise},
      {Op::kBroadcastInDim, 1, OpCategory::kLayout},    {Op::kConcatenate, kVariadic, OpCategory::kLayout},
      {Op::kReduce, 2, OpCategory::kReduction},         {Op::kDotGeneral, 2, OpCategory::kContraction},
      {Op::kGather, 2, OpCategory::kIndexing},          {Op::kScatter, 3, OpCategory::kIndexing},
      {Op::kAttention, 3, OpCategory::kAttention},      {Op::kAttentionLse, 2, OpCategory::kAttention},
      {Op::kAttentionGradQ, 6, OpCategory::kAttention}, {Op::kAttentionGradK, 6, OpCategory::kAttention},
      {Op::kAttentionGradV, 4, OpCategory::kAttention},
  };
  for (const Expect& e : expected) {
    EXPECT_EQ(OpArity(e.op), e.arity) << OpName(e.op);
    EXPECT_EQ(GetOpCategory(e.op), e.category) << OpName(e.op);
  }
  std::map<OpCategory, int> count;
  for (int i = 0; i < kNumOps; ++i) {
    Op op = AllOps()[i];
    ++count[GetOpCategory(op)];
    EXPECT_EQ(ChangesDType(op), op == Op::kCompare || op == Op::kConvert) << OpName(op);
    EXPECT_EQ(IsElementwise(op), GetOpCategory(op) == OpCategory::kElementwise);
    if (GetOpCategory(op) == OpCategory::kSource) {
      EXPECT_EQ(OpArity(op), 0) << OpName(op);
    }
    if (IsElementwise(op)) {
      EXPECT_TRUE(OpArity(op) >= 1 && OpArity(op) <= 3) << OpName(op);
    }
  }
  EXPECT_EQ(count[OpCategory::kSource], 2);
  EXPECT_EQ(count[OpCategory::kElementwise], 24);
  EXPECT_EQ(count[OpCategory::kLayout], 5);
  EXPECT_EQ(count[OpCategory::kReduction], 1);
  EXPECT_EQ(count[OpCategory::kContraction], 1);
  EXPECT_EQ(count[OpCategory::kIndexing], 2);
  EXPECT_EQ(count[OpCategory::kAttention], 5);
}

// The property column, written out: the sets that type inference (float-only operands), the
// CPU fusion's cost model (transcendental) and the integer/i1 rules (logical) read from it.
TEST(OpListTest, PropertyColumn) {
  const std::set<Op> float_only = {Op::kExponential, Op::kLog, Op::kSqrt,  Op::kRsqrt, Op::kTanh,
                                   Op::kLogistic,    Op::kErf, Op::kPower, Op::kCeil};
  const std::set<Op> transcendental = {Op::kExponential, Op::kLog, Op::kTanh, Op::kLogistic, Op::kErf, Op::kPower};
  const std::set<Op> logical = {Op::kAnd, Op::kOr, Op::kNot};
  for (int i = 0; i < kNumOps; ++i) {
    const Op op = AllOps()[i];
    EXPECT_EQ(IsFloatOnly(op), float_only.contains(op)) << OpName(op);
    EXPECT_EQ(IsTranscendental(op), transcendental.contains(op)) << OpName(op);
    EXPECT_EQ(IsLogical(op), logical.contains(op)) << OpName(op);
    EXPECT_EQ(HasOpProperty(op, op_property::kNone), true) << OpName(op);
    EXPECT_EQ(HasOpProperty(op, op_property::kFloatOnly | op_property::kTranscendental), transcendental.contains(op))
        << OpName(op);
  }
  // Usable in constant expressions (backends pick loops with `if constexpr`).
  static_assert(IsTranscendental(Op::kTanh) && !IsTranscendental(Op::kSqrt) && IsFloatOnly(Op::kSqrt));
  static_assert(OpArity(Op::kClamp) == 3 && GetOpCategory(Op::kReduce) == OpCategory::kReduction);
}

TEST(OpListTest, DeclaredResultTypes) {
  for (int i = 0; i < kNumOps; ++i) {
    Op op = AllOps()[i];
    bool want =
        op == Op::kConstant || op == Op::kIota || op == Op::kReshape || op == Op::kConvert || op == Op::kBroadcastInDim;
    EXPECT_EQ(ResultTypeIsDeclared(op), want) << OpName(op);
  }
}

// ---- Type inference ----------------------------------------------------------------------

TensorType T(DType d, Shape s) { return TensorType{d, std::move(s)}; }
TensorType F(Shape s) { return T(DType::kF32, std::move(s)); }

Attributes Dims(std::vector<int64_t> dims) {
  Attributes a;
  a.dims = std::move(dims);
  return a;
}
Attributes Dimension(int64_t d) {
  Attributes a;
  a.dimension = d;
  return a;
}
Attributes SliceAttrs(std::vector<int64_t> start, std::vector<int64_t> limit, std::vector<int64_t> stride) {
  Attributes a;
  a.start = std::move(start);
  a.limit = std::move(limit);
  a.stride = std::move(stride);
  return a;
}
Attributes Dot(DotDims d) {
  Attributes a;
  a.dot = std::move(d);
  return a;
}
Attributes Literal(Tensor t) {
  Attributes a;
  a.literal = std::move(t);
  return a;
}

struct InferCase {
  Op op;
  std::vector<TensorType> in;
  Attributes attrs;
  std::optional<TensorType> declared;
  std::optional<TensorType> want;  // set: must infer this; unset: must fail with `rule`
  std::string rule;
};

InferCase Ok(Op op, std::vector<TensorType> in, TensorType want, Attributes a = {},
             std::optional<TensorType> declared = std::nullopt) {
  return {op, std::move(in), std::move(a), std::move(declared), std::move(want), ""};
}
InferCase Bad(Op op, std::vector<TensorType> in, std::string rule, Attributes a = {},
              std::optional<TensorType> declared = std::nullopt) {
  return {op, std::move(in), std::move(a), std::move(declared), std::nullopt, std::move(rule)};
}

std::vector<InferCase> InferCases() {
  const TensorType f2 = F({2}), f3 = F({3}), i2 = T(DType::kI32, {2}), b2 = T(DType::kBool, {2});
  std::vector<InferCase> c = {
      Ok(Op::kConstant, {}, f2, Literal(Tensor(DType::kF32, {2})), f2),
      Bad(Op::kConstant, {}, "value does not match the result type", Literal(Tensor(DType::kF32, {2})), f3),
      Bad(Op::kConstant, {}, "needs a declared result type", Literal(Tensor(DType::kF32, {2}))),
      Ok(Op::kIota, {}, T(DType::kI32, {2, 3}), Dimension(1), T(DType::kI32, {2, 3})),
      Bad(Op::kIota, {}, "iota_dimension 2 outside", Dimension(2), T(DType::kI32, {2, 3})),
      Bad(Op::kIota, {}, "is not defined on i1", Dimension(0), b2),
      Bad(Op::kIota, {f2}, "expects 0 operands, got 1", Dimension(0), f2),
      Ok(Op::kCompare, {f2, f2}, b2),
      Bad(Op::kCompare, {f2, f3}, "operand types differ"),
      Ok(Op::kSelect, {b2, f2, f2}, f2),
      Bad(Op::kSelect, {f2, f2, f2}, "predicate must be i1"),
      Bad(Op::kSelect, {b2, f2, i2}, "branches differ"),
      Bad(Op::kSelect, {T(DType::kBool, {3}), f2, f2}, "does not match"),
      Ok(Op::kConvert, {f2}, i2, {}, i2),
      Bad(Op::kConvert, {f2}, "cannot change shape", {}, T(DType::kI32, {3})),
      Bad(Op::kConvert, {f2}, "needs a declared result type"),
      Ok(Op::kBroadcastInDim, {F({3, 1})}, F({2, 3, 4}), Dims({1, 2}), F({2, 3, 4})),
      Bad(Op::kBroadcastInDim, {f3}, "must have one entry per operand dimension", Dims({0, 1}), F({3, 4})),
      Bad(Op::kBroadcastInDim, {f3}, "cannot broadcast to 4", Dims({1}), F({3, 4})),
      Bad(Op::kBroadcastInDim, {F({3, 4})}, "must be strictly increasing", Dims({1, 0}), F({4, 3})),
      Bad(Op::kBroadcastInDim, {f3}, "cannot change the element type", Dims({0}), T(DType::kI32, {3})),
      Ok(Op::kReshape, {F({2, 3})}, F({3, 2}), {}, F({3, 2})),
      Bad(Op::kReshape, {F({2, 3})}, "cannot reshape", {}, F({4, 2})),
      Ok(Op::kTranspose, {F({2, 3, 4})}, F({4, 2, 3}), Dims({2, 0, 1})),
      Bad(Op::kTranspose, {F({2, 3})}, "does not match rank", Dims({0})),
      Bad(Op::kTranspose, {F({2, 3})}, "repeats dimension 0", Dims({0, 0})),
      Ok(Op::kSlice, {F({5, 4})}, F({2, 4}), SliceAttrs({1, 0}, {5, 4}, {2, 1})),
      Bad(Op::kSlice, {F({5, 4})}, "bad range in dimension 0", SliceAttrs({0, 0}, {6, 4}, {1, 1})),
      Bad(Op::kSlice, {F({5, 4})}, "bad range in dimension 1", SliceAttrs({0, 0}, {5, 4}, {1, 0})),
      Bad(Op::kSlice, {F({5, 4})}, "start/limit/stride need 2 entries", SliceAttrs({0}, {5}, {1})),
      Ok(Op::kConcatenate, {F({2, 1}), F({2, 3})}, F({2, 4}), Dimension(1)),
      Bad(Op::kConcatenate, {F({2, 1}), F({3, 1})}, "does not fit", Dimension(1)),
      Bad(Op::kConcatenate, {F({2, 1})}, "dimension 2 outside", Dimension(2)),
      Bad(Op::kConcatenate, {}, "needs at least one operand", Dimension(0)),
      Ok(Op::kReduce, {F({2, 3, 4}), F({})}, F({3}), Dims({0, 2})),
      Bad(Op::kReduce, {F({2, 3}), F({1})}, "init value must be a scalar"),
      Bad(Op::kReduce, {F({2, 3}), F({})}, "outside [0, 2)", Dims({2})),
      Bad(Op::kReduce, {F({2, 3}), F({})}, "must be strictly increasing", Dims({1, 0})),
      Bad(Op::kReduce, {F({2, 3})}, "expects 2 operands, got 1", Dims({0})),
      Ok(Op::kDotGeneral, {F({3, 2, 5}), F({4, 3, 2})}, F({2, 5, 4}), Dot({{1}, {2}, {0}, {1}})),
      Bad(Op::kDotGeneral, {F({2, 3}), F({4, 2})}, "contracting dimension sizes differ", Dot({{}, {}, {1}, {0}})),
      Bad(Op::kDotGeneral, {F({2, 3}), F({3, 3})}, "batching dimension sizes differ", Dot({{0}, {0}, {1}, {1}})),
      Bad(Op::kDotGeneral, {i2, i2}, "needs equal floating-point operands", Dot({{}, {}, {0}, {0}})),
      Ok(Op::kGather, {F({10, 4}), T(DType::kI32, {2, 3})}, F({2, 3, 4})),
      Bad(Op::kGather, {F({10, 4}), F({2})}, "indices must be i32 or i64"),
      Bad(Op::kGather, {F({}), i2}, "operand must have rank >= 1"),
      Ok(Op::kScatter, {F({10, 4}), T(DType::kI64, {3}), F({3, 4})}, F({10, 4})),
      Bad(Op::kScatter, {F({10, 4}), T(DType::kI64, {3}), F({3, 5})}, "updates must be tensor<3x4xf32>"),
      // Fused attention: q [2, 3, 4], k [2, 5, 4], v [2, 5, 6]; lse and delta [2, 3]; do [2, 3, 6].
      Ok(Op::kAttention, {F({2, 3, 4}), F({2, 5, 4}), F({2, 5, 6})}, F({2, 3, 6})),
      Bad(Op::kAttention, {F({2, 3, 4}), F({2, 5, 3}), F({2, 5, 6})},
          "k is tensor<2x5x3xf32>, expected tensor<2x5x4xf32>"),
      Bad(Op::kAttention, {F({2, 3, 4}), F({2, 5, 4}), F({2, 4, 6})}, "v is tensor<2x4x6xf32>"),
      Bad(Op::kAttention, {F({4}), F({4}), F({4})}, "q and k need the same rank of at least 2"),
      Bad(Op::kAttention, {T(DType::kBF16, {3, 4}), F({5, 4}), F({5, 6})}, "needs f32 operands"),
      Ok(Op::kAttentionLse, {F({2, 3, 4}), F({2, 5, 4})}, F({2, 3})),
      Bad(Op::kAttentionLse, {F({2, 3, 4}), F({3, 5, 4})}, "k is tensor<3x5x4xf32>"),
      Ok(Op::kAttentionGradQ, {F({2, 3, 4}), F({2, 5, 4}), F({2, 5, 6}), F({2, 3}), F({2, 3}), F({2, 3, 6})},
         F({2, 3, 4})),
      Bad(Op::kAttentionGradQ, {F({2, 3, 4}), F({2, 5, 4}), F({2, 5, 6}), F({2, 3}), F({2, 5}), F({2, 3, 6})},
          "delta is tensor<2x5xf32>"),
      Ok(Op::kAttentionGradK, {F({2, 3, 4}), F({2, 5, 4}), F({2, 5, 6}), F({2, 3}), F({2, 3}), F({2, 3, 6})},
         F({2, 5, 4})),
      Bad(Op::kAttentionGradK, {F({2, 3, 4}), F({2, 5, 4}), F({2, 5, 6}), F({2, 3}), F({2, 3}), F({2, 3, 4})},
          "do is tensor<2x3x4xf32>"),
      Ok(Op::kAttentionGradV, {F({2, 3, 4}), F({2, 5, 4}), F({2, 3}), F({2, 3, 6})}, F({2, 5, 6})),
      Bad(Op::kAttentionGradV, {F({2, 3, 4}), F({2, 5, 4}), F({2, 5}), F({2, 3, 6})}, "lse is tensor<2x5xf32>"),
  };
  // Binary and unary elementwise ops: one rule each they can break.
  for (Op op : {Op::kAdd, Op::kSubtract, Op::kMultiply, Op::kDivide, Op::kMaximum, Op::kMinimum}) {
    c.push_back(Ok(op, {f2, f2}, f2));
    c.push_back(Ok(op, {i2, i2}, i2));
    c.push_back(Bad(op, {f2, f3}, "operand types differ"));
    c.push_back(Bad(op, {b2, b2}, "is not defined on i1"));
  }
  c.push_back(Ok(Op::kPower, {f2, f2}, f2));
  c.push_back(Bad(Op::kPower, {i2, i2}, "needs a floating-point operand"));
  c.push_back(
      Bad(Op::kAdd, {f2, f2}, "declared result type tensor<3xf32> but the operands give tensor<2xf32>", {}, f3));
  for (Op op : {Op::kExponential, Op::kLog, Op::kSqrt, Op::kRsqrt, Op::kTanh, Op::kLogistic, Op::kErf, Op::kCeil}) {
    c.push_back(Ok(op, {f2}, f2));
    c.push_back(Bad(op, {i2}, "needs a floating-point operand"));
    c.push_back(Bad(op, {f2, f2}, "expects 1 operands, got 2"));
  }
  for (Op op : {Op::kNegate, Op::kAbs}) {
    c.push_back(Ok(op, {i2}, i2));
    c.push_back(Bad(op, {b2}, "is not defined on i1"));
  }
  for (Op op : {Op::kAnd, Op::kOr}) {
    c.push_back(Ok(op, {b2, b2}, b2));
    c.push_back(Ok(op, {i2, i2}, i2));
    c.push_back(Bad(op, {f2, f2}, "needs an i1 or integer operand"));
    c.push_back(Bad(op, {b2, T(DType::kBool, {3})}, "operand types differ"));
  }
  c.push_back(Ok(Op::kNot, {b2}, b2));
  c.push_back(Ok(Op::kNot, {T(DType::kI64, {2})}, T(DType::kI64, {2})));
  c.push_back(Bad(Op::kNot, {f2}, "needs an i1 or integer operand"));
  c.push_back(Ok(Op::kClamp, {f2, f2, f2}, f2));
  c.push_back(Ok(Op::kClamp, {i2, i2, i2}, i2));
  c.push_back(Bad(Op::kClamp, {F({}), f2, F({})}, "operand types differ"));
  c.push_back(Bad(Op::kClamp, {b2, b2, b2}, "is not defined on i1"));
  return c;
}

TEST(TypeInferenceTest, EveryCase) {
  for (const InferCase& c : InferCases()) {
    const TensorType* declared = c.declared.has_value() ? &*c.declared : nullptr;
    absl::StatusOr<TensorType> t = InferResultType(c.op, c.in, c.attrs, declared);
    if (c.want.has_value()) {
      ASSERT_TRUE(t.ok()) << OpName(c.op) << ": " << t.status();
      EXPECT_EQ(*t, *c.want) << OpName(c.op) << ": " << t->ToString();
    } else {
      ASSERT_FALSE(t.ok()) << OpName(c.op) << " accepted a case that breaks: " << c.rule;
      EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_TRUE(Contains(t.status().message(), OpName(c.op))) << t.status();
      EXPECT_TRUE(Contains(t.status().message(), c.rule)) << t.status() << " (wanted: " << c.rule << ")";
    }
  }
}

TEST(TypeInferenceTest, EveryOpHasAPositiveAndANegativeCase) {
  std::set<Op> positive, negative;
  for (const InferCase& c : InferCases()) (c.want.has_value() ? positive : negative).insert(c.op);
  for (int i = 0; i < kNumOps; ++i) {
    EXPECT_TRUE(positive.count(AllOps()[i])) << "no positive case for " << OpName(AllOps()[i]);
    EXPECT_TRUE(negative.count(AllOps()[i])) << "no negative case for " << OpName(AllOps()[i]);
  }
}

// ---- Builder -----------------------------------------------------------------------------

TEST(BuilderTest, FirstErrorSticksAndLaterCallsDoNothing) {
  FunctionBuilder b("model");
  ValueId x = b.Parameter(F({2}), "x");
  ValueId y = b.Parameter(F({3}), "y");
  EXPECT_EQ(b.Add(x, y), kNoValue);
  ASSERT_FALSE(b.status().ok());
  const size_t count = b.function().instructions.size();
  EXPECT_EQ(b.Exp(x), kNoValue);
  EXPECT_EQ(b.Transpose(x, {5}), kNoValue);
  b.SetError(absl::InternalError("second error"));
  EXPECT_EQ(b.function().instructions.size(), count);
  absl::StatusOr<Function> f = b.Build();
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(f.status().message(), "model: stablehlo.add: operand types differ")) << f.status();
}

TEST(BuilderTest, RejectsForeignValuesAndLateParameters) {
  FunctionBuilder b("f");
  ValueId x = b.Parameter(F({2}), "x");
  EXPECT_EQ(b.Exp(x + 5), kNoValue);
  EXPECT_TRUE(Contains(b.status().message(), "not a value of this function")) << b.status();

  FunctionBuilder c("g");
  ValueId y = c.Parameter(F({2}), "y");
  c.Exp(y);
  EXPECT_EQ(c.Parameter(F({2}), "late"), kNoValue);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(BuilderTest, BuildsAVerifiedFunction) {
  FunctionBuilder b("mlp");
  ValueId x = b.Parameter(F({8, 4}), "x");
  ValueId w = b.Parameter(F({4, 3}), "w");
  ValueId bias = b.Parameter(F({3}), "b");
  ValueId y = b.BAdd(b.MatMul(x, w), bias);
  b.Return({b.ReduceSum(b.Mul(y, y), {0, 1})}, {"loss"});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_TRUE(Verify(*f).ok()) << Verify(*f);
  EXPECT_EQ(f->type(f->results[0]), F({}));
  EXPECT_EQ(f->FindResult("loss"), 0);
  EXPECT_EQ(f->FindParam("b"), 2);
}

// ---- Verifier ----------------------------------------------------------------------------

// x -> exp -> neg, returned.
Function Chain() {
  FunctionBuilder b("chain");
  ValueId x = b.Parameter(F({2}), "x");
  b.Return({b.Neg(b.Exp(x))});
  return *b.Build();
}

void VerifyError(const Function& f, absl::string_view want) {
  absl::Status s = Verify(f);
  EXPECT_FALSE(s.ok()) << "accepted a function with: " << want;
  EXPECT_TRUE(Contains(s.message(), want)) << s << " (wanted: " << want << ")";
  EXPECT_TRUE(Contains(s.message(), "@chain")) << s;
}

TEST(VerifierTest, AcceptsAWellFormedFunction) { EXPECT_TRUE(Verify(Chain()).ok()); }

TEST(VerifierTest, RejectsUseBeforeDefinition) {
  Function f = Chain();
  std::swap(f.instructions[0], f.instructions[1]);
  VerifyError(f, "instruction 0 (stablehlo.negate) uses value %1 before it is defined");
}

TEST(VerifierTest, RejectsRedefinition) {
  Function f = Chain();
  f.instructions[1].result = 0;  // the parameter
  VerifyError(f, "redefines value %0");
  f = Chain();
  f.instructions[1].result = f.instructions[0].result;
  VerifyError(f, "instruction 1 (stablehlo.negate) redefines value %1");
}

TEST(VerifierTest, RejectsWrongDeclaredType) {
  Function f = Chain();
  f.value_types[2] = F({3});
  VerifyError(f, "declared result type tensor<3xf32> but the operands give tensor<2xf32>");
  f = Chain();
  f.value_types[1] = T(DType::kI32, {2});  // exp of i32 is not allowed either
  VerifyError(f, "instruction 0 (stablehlo.exponential)");
}

TEST(VerifierTest, RejectsBadResultsAndParameters) {
  Function f = Chain();
  f.results = {7};
  VerifyError(f, "result 0 is not a defined value");
  f = Chain();
  f.result_names.clear();
  VerifyError(f, "one name per result expected");
  f = Chain();
  f.param_names.push_back("extra");
  VerifyError(f, "one name per parameter expected");
  f = Chain();
  f.instructions[0].result = 42;
  VerifyError(f, "defines value %42 which has no type");
}

TEST(VerifierTest, ModuleNamesAreUniqueAndNonEmpty) {
  Module m;
  m.functions = {Chain(), Chain()};
  absl::Status s = Verify(m);
  EXPECT_TRUE(Contains(s.message(), "function @chain is defined twice")) << s;
  m.functions[1].name = "";
  s = Verify(m);
  EXPECT_TRUE(Contains(s.message(), "has no name")) << s;
  m.functions[1].name = "other";
  EXPECT_TRUE(Verify(m).ok());
  EXPECT_NE(m.Find("other"), nullptr);
  EXPECT_EQ(m.Find("missing"), nullptr);
}

}  // namespace
}  // namespace pcp
