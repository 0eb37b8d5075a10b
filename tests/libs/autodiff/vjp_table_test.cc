// The VJP table covers every op, and the driver's errors are values with clear messages.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/op_list.h"
#include "pcp/autodiff/verifier.h"
#include "pcp/autodiff/vjp.h"

namespace pcp {
namespace {

bool ExpectedNonDifferentiable(Op op) {
  return op == Op::kConstant || op == Op::kIota || op == Op::kCompare || op == Op::kCeil || IsLogical(op);
}

TEST(VjpTableTest, EveryOpHasARuleOrAnExplicitMark) {
  for (int i = 0; i < kNumOps; ++i) {
    Op op = AllOps()[i];
    VjpEntry e = GetVjpEntry(op);
    SCOPED_TRACE(std::string(OpName(op)));
    EXPECT_NE(e.rule != nullptr, e.non_differentiable) << "exactly one of rule / non_differentiable";
    EXPECT_EQ(e.non_differentiable, ExpectedNonDifferentiable(op));
  }
}

// Differentiating through fused attention's backward (a second derivative) is a clear error.
TEST(VjpTableTest, AttentionBackwardIsNotDifferentiatedAgain) {
  FunctionBuilder b("f");
  const TensorType t{DType::kF32, {2, 3, 4}};
  ValueId q = b.Parameter(t, "q"), k = b.Parameter(t, "k");
  Attributes a;
  a.scale = 0.5;
  ValueId lse = b.Emit(Op::kAttentionLse, {q, k}, a);
  ValueId loss = b.ReduceSum(lse, {0, 1});
  ASSERT_TRUE(b.status().ok()) << b.status();
  absl::StatusOr<std::vector<ValueId>> g = AppendGradients(b, loss, {q});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented) << g.status();
  EXPECT_TRUE(absl::StrContains(g.status().message(), "pcp.attention_lse has no VJP")) << g.status();
}

TEST(VjpTableTest, OpOutsideTheListHasNoEntry) {
  VjpEntry e = GetVjpEntry(static_cast<Op>(kNumOps));
  EXPECT_EQ(e.rule, nullptr);
  EXPECT_FALSE(e.non_differentiable);
}

// An instruction whose op has no table entry (an op number past the list, standing in for
// an op added without a rule) is an Unimplemented error when it lies on the gradient path.
TEST(VjpTableTest, MissingRuleIsUnimplemented) {
  Function f;
  f.name = "f";
  TensorType t{DType::kF32, {3}};
  ValueId x = f.AddParameter(t, "x");
  ValueId y = f.AddInstruction(static_cast<Op>(kNumOps), {x}, t);
  FunctionBuilder b(std::move(f));
  ValueId loss = b.ReduceSum(b.Exp(y), {0});
  ASSERT_TRUE(b.status().ok()) << b.status();
  absl::StatusOr<std::vector<ValueId>> g = AppendGradients(b, loss, {x});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented) << g.status();
  EXPECT_TRUE(absl::StrContains(g.status().message(), "no VJP for")) << g.status();
}

// The same unknown op off the gradient path (x does not reach it) is no error.
TEST(VjpTableTest, MissingRuleOffThePathIsIgnored) {
  Function f;
  f.name = "f";
  TensorType t{DType::kF32, {3}};
  ValueId x = f.AddParameter(t, "x");
  ValueId z = f.AddParameter(t, "z");
  ValueId y = f.AddInstruction(static_cast<Op>(kNumOps), {z}, t);
  FunctionBuilder b(std::move(f));
  ValueId loss = b.ReduceSum(b.Mul(y, x), {0});
  absl::StatusOr<std::vector<ValueId>> g = AppendGradients(b, loss, {x});
  EXPECT_TRUE(g.ok()) << g.status();
}

TEST(VjpTableTest, IntegerWrtIsInvalidArgument) {
  FunctionBuilder b("f");
  ValueId x = b.Parameter({DType::kF32, {3}}, "x");
  ValueId i = b.Parameter({DType::kI32, {3}}, "i");
  ValueId loss = b.ReduceSum(b.Mul(x, b.Convert(i, DType::kF32)), {0});
  absl::StatusOr<std::vector<ValueId>> g = AppendGradients(b, loss, {x, i});
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(g.status().message(), "wrt[1]")) << g.status();
  EXPECT_TRUE(absl::StrContains(g.status().message(), "not differentiable")) << g.status();
}

TEST(VjpTableTest, BadOutputSeedAndWrtAreInvalidArgument) {
  FunctionBuilder b("f");
  ValueId x = b.Parameter({DType::kF32, {3}}, "x");
  ValueId i = b.Parameter({DType::kI32, {}}, "i");
  ValueId loss = b.ReduceSum(b.Exp(x), {0});
  EXPECT_EQ(AppendGradients(b, i, {x}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AppendGradients(b, 1000, {x}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AppendGradients(b, loss, {1000}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AppendGradients(b, loss, {x}, /*seed=*/x).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(VjpTableTest, BuilderErrorIsReported) {
  FunctionBuilder b("f");
  ValueId x = b.Parameter({DType::kF32, {3}}, "x");
  ValueId loss = b.ReduceSum(b.Exp(x), {0});
  b.Reshape(x, {4});  // sticky error
  EXPECT_FALSE(AppendGradients(b, loss, {x}).ok());
}

Function SimpleForward() {
  FunctionBuilder b("fwd");
  ValueId x = b.Parameter({DType::kF32, {2, 3}}, "x");
  ValueId w = b.Parameter({DType::kF32, {3, 4}}, "w");
  ValueId ids = b.Parameter({DType::kI32, {2}}, "ids");
  ValueId y = b.MatMul(x, w);
  ValueId loss = b.ReduceSum(b.Tanh(y), {0, 1});
  b.Return({loss, y}, {"loss", "y"});
  (void)ids;
  absl::StatusOr<Function> f = b.Build();
  EXPECT_TRUE(f.ok()) << f.status();
  return *f;
}

TEST(VjpTableTest, GradientFunctionSignature) {
  Function fwd = SimpleForward();
  absl::StatusOr<Function> g = BuildGradientFunction(fwd, {1, 0});
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE(Verify(*g).ok()) << Verify(*g);
  EXPECT_EQ(g->params.size(), fwd.params.size());
  ASSERT_EQ(g->results.size(), 4u);
  EXPECT_EQ(g->result_names, (std::vector<std::string>{"loss", "y", "grad.w", "grad.x"}));
  EXPECT_EQ(g->type(g->results[2]), fwd.type(fwd.params[1]));
  EXPECT_EQ(g->type(g->results[3]), fwd.type(fwd.params[0]));
}

TEST(VjpTableTest, GradientFunctionArgumentErrors) {
  Function fwd = SimpleForward();
  EXPECT_EQ(BuildGradientFunction(fwd, {3}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildGradientFunction(fwd, {-1}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildGradientFunction(fwd, {0}, /*loss_result=*/2).status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<Function> ints = BuildGradientFunction(fwd, {2});
  ASSERT_FALSE(ints.ok());
  EXPECT_EQ(ints.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(ints.status().message(), "fwd")) << ints.status();
}

// Differentiating the non-scalar result y (seed of ones) works too.
TEST(VjpTableTest, NonScalarOutputUsesOnesSeed) {
  Function fwd = SimpleForward();
  absl::StatusOr<Function> g = BuildGradientFunction(fwd, {0}, /*loss_result=*/1);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(Verify(*g).ok());
}

// Rules build constants through f32 and a convert for half types, so bf16 functions
// differentiate to verified IR (the reference interpreter does not compute on bf16).
TEST(VjpTableTest, Bf16GradientVerifies) {
  FunctionBuilder b("half");
  ValueId x = b.Parameter({DType::kBF16, {2, 3}}, "x");
  ValueId w = b.Parameter({DType::kBF16, {3, 4}}, "w");
  ValueId y = b.Tanh(b.MatMul(x, w));
  ValueId z = b.Select(b.Compare(y, y, ComparisonDirection::kEQ), b.Rsqrt(b.Exp(y)), b.Max(y, b.Abs(y)));
  // Not reduced: FunctionBuilder::Reduce cannot make a bf16 init value yet; a non-scalar
  // output is differentiated with a seed of ones.
  ValueId loss = b.Slice(b.Logistic(z), {0, 1}, {2, 4}, {1, 2});
  b.Return({loss}, {"loss"});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<Function> g = BuildGradientFunction(*f, {0, 1});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(Verify(*g).ok()) << Verify(*g);
  EXPECT_EQ(g->type(g->results[1]), (TensorType{DType::kBF16, {2, 3}}));
  EXPECT_EQ(g->type(g->results[2]), (TensorType{DType::kBF16, {3, 4}}));
}

}  // namespace
}  // namespace pcp
