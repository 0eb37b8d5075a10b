// Fused attention in the IR (pcp/autodiff/attention.h): the expansion against the reference
// interpreter's definitions, RaiseAttention on the decomposed forms models write, the text
// form, and mixed precision's treatment of the ops.
#include "pcp/autodiff/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/mixed_precision.h"
#include "pcp/autodiff/text.h"
#include "pcp/autodiff/vjp.h"
#include "pcp/testing/tensor_testing.h"

namespace pcp {
namespace {

using ::pcp::testing::RandomTensor;
using ::pcp::testing::TensorsNear;

TensorType F32(Shape s) { return {DType::kF32, std::move(s)}; }

Attributes AttentionAttrs(bool causal, double scale) {
  Attributes a;
  a.causal = causal;
  a.scale = scale;
  return a;
}

int Count(const Function& f, Op op) {
  int n = 0;
  for (const Instruction& inst : f.instructions) n += inst.op == op;
  return n;
}

// q [2, 3, T, D], k [2, 3, S, D], v [2, 3, S, E], do [2, 3, T, E] -> o, lse, delta, dq, dk, dv.
struct Shapes {
  int64_t t, s, d, e;
  bool causal;
};

absl::StatusOr<Function> AllAttentionOps(const Shapes& x) {
  FunctionBuilder b("attention_ops");
  ValueId q = b.Parameter(F32({2, 3, x.t, x.d}), "q");
  ValueId k = b.Parameter(F32({2, 3, x.s, x.d}), "k");
  ValueId v = b.Parameter(F32({2, 3, x.s, x.e}), "v");
  ValueId d_out = b.Parameter(F32({2, 3, x.t, x.e}), "do");
  const Attributes a = AttentionAttrs(x.causal, 0.45);
  ValueId o = b.Emit(Op::kAttention, {q, k, v}, a);
  ValueId lse = b.Emit(Op::kAttentionLse, {q, k}, a);
  ValueId delta = b.ReduceSum(b.Mul(d_out, o), {3});
  b.Return({o, lse, delta, b.Emit(Op::kAttentionGradQ, {q, k, v, lse, delta, d_out}, a),
            b.Emit(Op::kAttentionGradK, {q, k, v, lse, delta, d_out}, a),
            b.Emit(Op::kAttentionGradV, {q, k, lse, d_out}, a)});
  return b.Build();
}

std::vector<Tensor> RandomArgs(const Function& f, uint64_t seed) {
  std::vector<Tensor> args;
  for (ValueId p : f.params) args.push_back(RandomTensor(f.type(p), seed++, -1.5, 1.5));
  return args;
}

TEST(ExpandAttentionTest, MatchesTheReferenceDefinitions) {
  // Causal self-attention and unmasked cross-attention with T != S and E != D.
  for (const Shapes& x : {Shapes{5, 5, 4, 4, true}, Shapes{3, 6, 4, 2, false}, Shapes{6, 4, 3, 5, true}}) {
    SCOPED_TRACE(::testing::Message() << "T " << x.t << " S " << x.s << " causal " << x.causal);
    absl::StatusOr<Function> f = AllAttentionOps(x);
    ASSERT_TRUE(f.ok()) << f.status();
    Function expanded = *f;
    absl::StatusOr<int> n = ExpandAttention(expanded);
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_EQ(*n, 5);
    for (int i = 0; i < kNumOps; ++i) {
      if (GetOpCategory(AllOps()[i]) == OpCategory::kAttention) {
        EXPECT_EQ(Count(expanded, AllOps()[i]), 0);
      }
    }
    const std::vector<Tensor> args = RandomArgs(*f, 7);
    absl::StatusOr<std::vector<Tensor>> want = Interpret(*f, args);
    absl::StatusOr<std::vector<Tensor>> got = Interpret(expanded, args);
    ASSERT_TRUE(want.ok() && got.ok()) << want.status() << got.status();
    const char* names[] = {"o", "lse", "delta", "dq", "dk", "dv"};
    for (size_t r = 0; r < want->size(); ++r) {
      EXPECT_TRUE(TensorsNear((*got)[r], (*want)[r], 1e-4, 1e-5)) << names[r];
    }
  }
}

TEST(ExpandAttentionTest, LeavesFunctionsWithoutAttentionAlone) {
  FunctionBuilder b("plain");
  ValueId x = b.Parameter(F32({2, 2}), "x");
  b.Return({b.Exp(x)});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok());
  const std::string before = PrintFunction(*f);
  absl::StatusOr<int> n = ExpandAttention(*f);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 0);
  EXPECT_EQ(PrintFunction(*f), before);
}

// The decomposed attention as models write it: q kᵀ, scaled (multiply or divide by a
// constant), masked causally with select(iota compare) and -inf, a max-subtracted softmax,
// then P v; the loss is Σ (P v) ⊙ w.
struct Decomposed {
  bool causal = true;
  bool divide = false;      // (q kᵀ) / c instead of c' * (q kᵀ)
  bool rows_first = false;  // compare(rows, cols, GE) instead of compare(cols, rows, LE)
  ComparisonDirection direction = ComparisonDirection::kLE;
  bool probabilities_returned = false;  // P is also a result: the pattern must not be raised
  double additive = 0;                  // nonzero: the mask is s + M, M 0 where j <= i and this elsewhere
};

absl::StatusOr<Function> DecomposedAttention(const Decomposed& c) {
  const int64_t B = 2, H = 2, T = 4, D = 3;
  FunctionBuilder b("decomposed");
  ValueId q = b.Parameter(F32({B, H, T, D}), "q");
  ValueId k = b.Parameter(F32({B, H, T, D}), "k");
  ValueId v = b.Parameter(F32({B, H, T, D}), "v");
  ValueId w = b.Parameter(F32({B, H, T, D}), "w");
  DotDims qk{{0, 1}, {0, 1}, {3}, {3}};
  ValueId s = b.DotGeneral(q, k, qk);
  s = c.divide ? b.BDiv(s, b.ScalarConstant(std::sqrt(3.0))) : b.BMul(b.ScalarConstant(0.6), s);
  const Shape scores = {B, H, T, T};
  if (c.additive != 0) {
    std::vector<float> mask;
    for (int64_t i = 0; i < T; ++i) {
      for (int64_t j = 0; j < T; ++j) mask.push_back(j <= i ? 0.0f : static_cast<float>(c.additive));
    }
    s = b.Add(s, b.BroadcastInDim(b.Constant(Tensor::FromVector<float>({T, T}, mask)), scores, {2, 3}));
  } else if (c.causal) {
    ValueId rows = b.Iota(TensorType{DType::kI32, {T, T}}, 0);
    ValueId cols = b.Iota(TensorType{DType::kI32, {T, T}}, 1);
    ValueId keep = c.rows_first ? b.Compare(rows, cols, c.direction) : b.Compare(cols, rows, c.direction);
    s = b.Select(b.BroadcastInDim(keep, scores, {2, 3}), s,
                 b.Full(-std::numeric_limits<double>::infinity(), F32(scores)));
  }
  ValueId e = b.Exp(b.Sub(s, b.BroadcastInDim(b.ReduceMax(s, {3}), scores, {0, 1, 2})));
  ValueId p = b.Div(e, b.BroadcastInDim(b.ReduceSum(e, {3}), scores, {0, 1, 2}));
  DotDims pv{{0, 1}, {0, 1}, {3}, {2}};
  ValueId loss = b.ReduceSum(b.Mul(b.DotGeneral(p, v, pv), w), {0, 1, 2, 3});
  if (c.probabilities_returned) {
    b.Return({loss, p});
  } else {
    b.Return({loss});
  }
  return b.Build();
}

// Raising keeps the loss and its gradients (to rounding: the fused op computes in another
// order), on the interpreter.
void ExpectSameLossAndGradients(const Function& decomposed, const Function& raised) {
  const std::vector<Tensor> args = RandomArgs(decomposed, 11);
  absl::StatusOr<Function> g0 = BuildGradientFunction(decomposed, {0, 1, 2});
  absl::StatusOr<Function> g1 = BuildGradientFunction(raised, {0, 1, 2});
  ASSERT_TRUE(g0.ok() && g1.ok()) << g0.status() << g1.status();
  absl::StatusOr<std::vector<Tensor>> want = Interpret(*g0, args);
  absl::StatusOr<std::vector<Tensor>> got = Interpret(*g1, args);
  ASSERT_TRUE(want.ok() && got.ok()) << want.status() << got.status();
  const char* names[] = {"loss", "dq", "dk", "dv"};
  for (size_t r = 0; r < want->size(); ++r) EXPECT_TRUE(TensorsNear((*got)[r], (*want)[r], 1e-4, 1e-5)) << names[r];
}

TEST(RaiseAttentionTest, RaisesTheDecomposedForms) {
  for (const Decomposed& c :
       {Decomposed{}, Decomposed{.divide = true}, Decomposed{.rows_first = true, .direction = ComparisonDirection::kGE},
        Decomposed{.causal = false}, Decomposed{.additive = -std::numeric_limits<double>::infinity()},
        Decomposed{.additive = std::numeric_limits<float>::lowest()}}) {
    SCOPED_TRACE(::testing::Message() << "causal " << c.causal << " divide " << c.divide << " rows_first "
                                      << c.rows_first << " additive " << c.additive);
    absl::StatusOr<Function> f = DecomposedAttention(c);
    ASSERT_TRUE(f.ok()) << f.status();
    Function raised = *f;
    absl::StatusOr<int> n = RaiseAttention(raised);
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_EQ(*n, 1);
    ASSERT_EQ(Count(raised, Op::kAttention), 1);
    // Nothing of the softmax is left: its values were read only inside the pattern.
    EXPECT_EQ(Count(raised, Op::kExponential), 0);
    EXPECT_EQ(Count(raised, Op::kDotGeneral), 0);
    EXPECT_EQ(Count(raised, Op::kAdd), 0);
    for (const Instruction& inst : raised.instructions) {
      if (inst.op != Op::kAttention) continue;
      EXPECT_EQ(inst.attrs.causal, c.causal);
      EXPECT_FLOAT_EQ(static_cast<float>(inst.attrs.scale), static_cast<float>(c.divide ? 1 / std::sqrt(3.0) : 0.6));
    }
    ExpectSameLossAndGradients(*f, raised);
  }
}

TEST(RaiseAttentionTest, LeavesWhatItCannotFuse) {
  // P read outside the pattern; a strict mask (j < i leaves row 0 without keys); a mask
  // on the wrong side (j >= i); an additive mask whose masked scores still count (-1e4).
  for (const Decomposed& c :
       {Decomposed{.probabilities_returned = true}, Decomposed{.direction = ComparisonDirection::kLT},
        Decomposed{.direction = ComparisonDirection::kGE}, Decomposed{.additive = -1e4}}) {
    absl::StatusOr<Function> f = DecomposedAttention(c);
    ASSERT_TRUE(f.ok()) << f.status();
    const std::string before = PrintFunction(*f);
    absl::StatusOr<int> n = RaiseAttention(*f);
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_EQ(*n, 0);
    EXPECT_EQ(PrintFunction(*f), before);
  }
}

TEST(AttentionTextTest, RoundTripsInBothForms) {
  absl::StatusOr<Function> f = AllAttentionOps(Shapes{4, 4, 2, 2, true});
  ASSERT_TRUE(f.ok()) << f.status();
  Module m;
  m.functions.push_back(*f);
  for (TextForm form : {TextForm::kGeneric, TextForm::kPretty}) {
    const std::string text = PrintModule(m, form);
    EXPECT_NE(text.find("\"pcp.attention_grad_k\""), std::string::npos) << text;
    EXPECT_NE(text.find("causal = true, scale = 4.500000e-01 : f64"), std::string::npos) << text;
    absl::StatusOr<Module> back = ParseModule(text);
    ASSERT_TRUE(back.ok()) << back.status() << "\n" << text;
    EXPECT_EQ(PrintModule(*back, form), text);
  }
}

TEST(AttentionTextTest, MissingAttributeIsNamed) {
  const std::string text = R"(module {
  func.func @f(%q: tensor<2x3xf32>, %k: tensor<2x3xf32>) -> tensor<2xf32> {
    %0 = "pcp.attention_lse"(%q, %k) {causal = true} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
})";
  absl::StatusOr<Module> m = ParseModule(text);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("pcp.attention_lse needs attribute 'scale'"), std::string::npos) << m.status();
}

TEST(AttentionMixedPrecisionTest, RoundsMatricesAndKeepsRowStatistics) {
  absl::StatusOr<Function> f = AllAttentionOps(Shapes{4, 4, 2, 2, true});
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<int> n = ApplyMixedPrecision(*f, Precision::kBF16);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 5);
  for (const Instruction& inst : f->instructions) {
    if (GetOpCategory(inst.op) != OpCategory::kAttention) continue;
    const int64_t matrix_rank = f->type(inst.operands[0]).rank();
    for (ValueId o : inst.operands) {
      EXPECT_EQ(IsRoundedThroughHalf(*f, o), f->type(o).rank() == matrix_rank) << OpName(inst.op);
    }
  }
}

}  // namespace
}  // namespace pcp
