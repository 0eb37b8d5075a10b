// Rematerialisation (remat.h) on gradient functions: what it recomputes in the backward (GELU's
// and LayerNorm's outputs), what it never does (dot products, reductions, values that would
// need two full inputs read), that the peak of live bytes falls, and that every result stays
// bit for bit what it was (interpreter, random inputs).
#include "pcp/autodiff/remat.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/passes.h"
#include "pcp/autodiff/verifier.h"
#include "pcp/autodiff/vjp.h"
#include "pcp/testing/tensor_testing.h"

namespace pcp {
namespace {

using ::pcp::testing::RandomTensor;

// The functions here are small: a use is far a few of their tensors later.
const RematOptions kSmall{.min_reuse_bytes = 16 << 10};
const RematOptions kTiny{.min_reuse_bytes = 1 << 10};

TensorType F32(Shape s) { return TensorType{DType::kF32, std::move(s)}; }

int Count(const Function& f, Op op) {
  int n = 0;
  for (const Instruction& inst : f.instructions) n += inst.op == op;
  return n;
}

int Position(const Function& f, ValueId v) {
  for (size_t i = 0; i < f.instructions.size(); ++i) {
    if (f.instructions[i].result == v) return static_cast<int>(i);
  }
  return -1;
}

// Values computed by elementwise instructions at or before position `end` that an
// instruction after `end` reads (directly or through views): what the backward keeps.
std::vector<ValueId> ElementwiseKeptPast(const Function& f, int end) {
  std::vector<ValueId> base(static_cast<size_t>(f.num_values()), kNoValue);
  std::vector<bool> elementwise(static_cast<size_t>(f.num_values()), false);
  for (int i = 0; i < static_cast<int>(f.instructions.size()); ++i) {
    const Instruction& inst = f.instructions[i];
    const Op op = inst.op;
    const bool view = op == Op::kBroadcastInDim || op == Op::kReshape || op == Op::kTranspose || op == Op::kSlice;
    base[inst.result] = view ? base[inst.operands[0]] : inst.result;
    elementwise[inst.result] = i <= end && IsElementwise(op);
  }
  std::vector<ValueId> kept;
  for (int i = end + 1; i < static_cast<int>(f.instructions.size()); ++i) {
    for (ValueId o : f.instructions[i].operands) {
      const ValueId b = base[o];
      if (b != kNoValue && elementwise[b] && std::find(kept.begin(), kept.end(), b) == kept.end()) kept.push_back(b);
    }
  }
  return kept;
}

void ExpectBitwiseSame(const Function& before, const Function& after) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    std::vector<Tensor> args;
    for (ValueId p : before.params) args.push_back(RandomTensor(before.type(p), seed * 100 + p, -2, 2));
    absl::StatusOr<std::vector<Tensor>> a = Interpret(before, args);
    absl::StatusOr<std::vector<Tensor>> b = Interpret(after, args);
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    ASSERT_EQ(a->size(), b->size());
    for (size_t i = 0; i < a->size(); ++i) EXPECT_TRUE(BitwiseEqual((*a)[i], (*b)[i])) << "result " << i;
  }
}

// The gradient function of `forward` w.r.t. `wrt` after the standard passes.
Function Gradient(const Function& forward, std::vector<int> wrt) {
  absl::StatusOr<Function> g = BuildGradientFunction(forward, wrt);
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return {};
  EXPECT_TRUE(RunStandardPasses(*g).ok());
  return *std::move(g);
}

// Three blocks x -> fc (bias) -> exact GELU -> proj, x [64, 16], fc 64 wide; loss = sum(x * x).
Function GeluMlp() {
  FunctionBuilder b("mlp");
  ValueId x = b.Parameter(F32({64, 16}), "x");
  std::vector<std::array<ValueId, 3>> w;
  for (int l = 0; l < 3; ++l) {
    w.push_back({b.Parameter(F32({16, 64})), b.Parameter(F32({64})), b.Parameter(F32({64, 16}))});
  }
  for (int l = 0; l < 3; ++l) {
    ValueId h = b.BAdd(b.MatMul(x, w[l][0]), w[l][1]);
    ValueId erf = b.Erf(b.BMul(h, b.ScalarConstant(1.0 / std::sqrt(2.0))));
    ValueId gelu = b.Mul(b.BMul(h, b.ScalarConstant(0.5)), b.BAdd(erf, b.ScalarConstant(1.0)));
    x = b.MatMul(gelu, w[l][2]);
  }
  b.Return({b.ReduceSum(b.Mul(x, x), {0, 1})}, {"loss"});
  absl::StatusOr<Function> f = b.Build();
  EXPECT_TRUE(f.ok()) << f.status();
  return *std::move(f);
}

std::vector<int> AllParams(const Function& f) {
  std::vector<int> all;
  for (size_t i = 0; i < f.params.size(); ++i) all.push_back(static_cast<int>(i));
  return all;
}

TEST(RematTest, RecomputesGeluOutputInTheBackwardAndKeepsOnlyTheFcOutput) {
  const Function mlp = GeluMlp();
  const Function before = Gradient(mlp, AllParams(mlp));
  const int forward_end = Position(before, before.results[0]);
  // Without the pass the backward keeps GELU's output (the proj weight gradient reads it)
  // and pieces of it (GELU's derivative reads them), besides the fc output.
  EXPECT_GT(ElementwiseKeptPast(before, forward_end).size(), 3u);

  Function after = before;
  absl::StatusOr<RematStats> stats = Rematerialize(after, kSmall);
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_TRUE(Verify(after).ok());
  EXPECT_GE(stats->values, 3);
  EXPECT_LT(stats->peak_after, stats->peak_before);
  EXPECT_EQ(stats->peak_after, PeakLiveBytes(after));
  EXPECT_EQ(stats->peak_before, PeakLiveBytes(before));

  // Only the fc outputs (h = x w1 + b1) are kept for the backward now; the rest is recomputed
  // there from them: erf once more per block (GELU's output and its derivative share the
  // copy), and no dot product or reduction is repeated.
  const std::vector<ValueId> kept = ElementwiseKeptPast(after, Position(after, after.results[0]));
  ASSERT_EQ(kept.size(), 3u);
  for (ValueId h : kept) {
    EXPECT_EQ(after.instructions[Position(after, h)].op, Op::kAdd);
    EXPECT_EQ(after.type(h), F32({64, 64}));
  }
  EXPECT_EQ(Count(after, Op::kErf), Count(before, Op::kErf) + 3);
  EXPECT_EQ(Count(after, Op::kDotGeneral), Count(before, Op::kDotGeneral));
  EXPECT_EQ(Count(after, Op::kReduce), Count(before, Op::kReduce));
  ExpectBitwiseSame(before, after);

  // Off: nothing is far with the default distance in so small a function.
  Function same = before;
  absl::StatusOr<RematStats> none = Rematerialize(same);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->values, 0);
  EXPECT_EQ(same.instructions.size(), before.instructions.size());
}

// Three blocks x -> LayerNorm -> linear [16, 16], x [32, 16]; loss = sum(x * x).
Function LayerNormLinear() {
  FunctionBuilder b("ln");
  ValueId x = b.Parameter(F32({32, 16}), "x");
  std::vector<std::array<ValueId, 3>> w;
  for (int l = 0; l < 3; ++l) {
    w.push_back({b.Parameter(F32({16})), b.Parameter(F32({16})), b.Parameter(F32({16, 16}))});
  }
  ValueId inv_c = b.ScalarConstant(1.0 / 16);
  auto expand = [&](ValueId row) { return b.BroadcastInDim(row, {32, 16}, {0}); };
  for (int l = 0; l < 3; ++l) {
    ValueId mean = b.BMul(b.ReduceSum(x, {1}), inv_c);
    ValueId centered = b.Sub(x, expand(mean));
    ValueId var = b.BMul(b.ReduceSum(b.Mul(centered, centered), {1}), inv_c);
    ValueId rstd = b.Rsqrt(b.BAdd(var, b.ScalarConstant(1e-5)));
    ValueId y = b.BAdd(b.BMul(b.Mul(centered, expand(rstd)), w[l][0]), w[l][1]);
    x = b.MatMul(y, w[l][2]);
  }
  b.Return({b.ReduceSum(b.Mul(x, x), {0, 1})}, {"loss"});
  absl::StatusOr<Function> f = b.Build();
  EXPECT_TRUE(f.ok()) << f.status();
  return *std::move(f);
}

TEST(RematTest, RecomputesLayerNormOutputInTheBackwardButNotItsReductions) {
  const Function ln = LayerNormLinear();
  const Function before = Gradient(ln, AllParams(ln));
  auto full_size_kept = [](const Function& f) {
    int n = 0;
    for (ValueId v : ElementwiseKeptPast(f, Position(f, f.results[0]))) n += f.type(v).num_elements() == 32 * 16;
    return n;
  };
  // LayerNorm's output (the weight gradient reads it), its centred input and x̂ (its own
  // derivative reads them).
  EXPECT_GE(full_size_kept(before), 3 * 3);

  Function after = before;
  absl::StatusOr<RematStats> stats = Rematerialize(after, kTiny);
  ASSERT_TRUE(stats.ok()) << stats.status();
  ASSERT_TRUE(Verify(after).ok());
  EXPECT_GE(stats->values, 3);
  EXPECT_LT(stats->peak_after, stats->peak_before);
  // The backward recomputes them from the block's input (a product, kept anyway) and the
  // per-row mean and variance; the reductions are not repeated.
  EXPECT_EQ(full_size_kept(after), 0);
  EXPECT_EQ(Count(after, Op::kReduce), Count(before, Op::kReduce));
  EXPECT_EQ(Count(after, Op::kDotGeneral), Count(before, Op::kDotGeneral));
  ExpectBitwiseSame(before, after);
}

// s = (x w1) * (x w2) needs both products to be recomputed: two full inputs, which the
// backward keeps anyway (the multiply's derivative reads them). Kept by default; recomputed
// when two big leaves are allowed.
TEST(RematTest, KeepsAValueThatNeedsTwoFullInputsUnlessAllowed) {
  FunctionBuilder b("bilinear");
  ValueId x = b.Parameter(F32({64, 16}), "x");
  ValueId w1 = b.Parameter(F32({16, 32}), "w1");
  ValueId w2 = b.Parameter(F32({16, 32}), "w2");
  ValueId w3 = b.Parameter(F32({32, 8}), "w3");
  ValueId s = b.Mul(b.MatMul(x, w1), b.MatMul(x, w2));
  ValueId z = b.MatMul(s, w3);
  b.Return({b.ReduceSum(b.Mul(z, z), {0, 1})}, {"loss"});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  const Function before = Gradient(*f, {1, 2, 3});

  Function kept = before;
  absl::StatusOr<RematStats> one = Rematerialize(kept, kTiny);
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->values, 0);
  EXPECT_EQ(kept.instructions.size(), before.instructions.size());
  EXPECT_EQ(one->peak_after, one->peak_before);

  Function recomputed = before;
  absl::StatusOr<RematStats> two =
      Rematerialize(recomputed, RematOptions{.max_big_leaves = 2, .min_reuse_bytes = kTiny.min_reuse_bytes});
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(two->values, 1);
  EXPECT_EQ(Count(recomputed, Op::kMultiply), Count(before, Op::kMultiply) + 1);
  EXPECT_EQ(Count(recomputed, Op::kDotGeneral), Count(before, Op::kDotGeneral));
  ExpectBitwiseSame(before, recomputed);
}

// A product kept for the backward is never recomputed, however cheap its inputs.
TEST(RematTest, NeverRecomputesADotProduct) {
  FunctionBuilder b("dots");
  ValueId x = b.Parameter(F32({64, 16}), "x");
  ValueId w1 = b.Parameter(F32({16, 32}), "w1");
  ValueId w2 = b.Parameter(F32({32, 8}), "w2");
  ValueId z = b.MatMul(b.MatMul(x, w1), w2);
  b.Return({b.ReduceSum(b.Mul(z, z), {0, 1})}, {"loss"});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  const Function before = Gradient(*f, {1, 2});
  Function after = before;
  absl::StatusOr<RematStats> stats = Rematerialize(after, kTiny);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->values, 0);
  EXPECT_EQ(Count(after, Op::kDotGeneral), Count(before, Op::kDotGeneral));
  EXPECT_EQ(after.instructions.size(), before.instructions.size());
}

}  // namespace
}  // namespace pcp
