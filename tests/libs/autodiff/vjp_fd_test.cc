// Finite-difference checks of every VJP rule. Each case is a small function f(params); the
// test differentiates loss = sum(f(x) * R) for a fixed random R with BuildGradientFunction
// and compares each gradient element with the central difference
// (loss(x + h e_i) - loss(x - h e_i)) / 2h, both evaluated by the reference interpreter in
// f32. Inputs of kinked ops (abs, max, min, reduce max, select) are kept farther than h
// from their kinks, and those of log/sqrt/rsqrt/power/divide in a positive range.
#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/verifier.h"
#include "pcp/autodiff/vjp.h"
#include "pcp/base/status_macros.h"
#include "pcp/testing/tensor_testing.h"

namespace pcp {
namespace {

using ::pcp::testing::RandomTensor;
using ::pcp::testing::TensorsNear;

// Tolerances: |ad - fd| <= kAtol + kRtol * |fd| per element, with step kStep.
constexpr double kStep = 1e-2;
constexpr double kRtol = 1e-2;
constexpr double kAtol = 1e-3;

using Maker = std::function<Tensor(const TensorType&, uint64_t seed)>;

Maker Uniform(double lo, double hi) {
  return [=](const TensorType& t, uint64_t seed) { return RandomTensor(t, seed, lo, hi); };
}
// Distinct values on a shuffled grid in (-1, 1) with spacing 2/n, none within 1/n of 0 (n
// even) and, with `shift` = 1/n, none equal to another unshifted grid's values: kinks stay
// far from every input.
Maker Spaced(double shift = 0.0) {
  return [=](const TensorType& t, uint64_t seed) {
    int64_t n = t.num_elements();
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) v[k] = static_cast<float>(-1.0 + (2.0 * k + 1.0) / n + shift / n);
    std::mt19937_64 rng(seed);
    std::shuffle(v.begin(), v.end(), rng);
    return Tensor::FromVector<float>(t.shape, v);
  };
}
Maker Ints(std::vector<int32_t> values) {
  return [=](const TensorType& t, uint64_t) { return Tensor::FromVector<int32_t>(t.shape, values); };
}
Maker Floats(std::vector<float> values) {
  return [=](const TensorType& t, uint64_t) { return Tensor::FromVector<float>(t.shape, values); };
}
Maker Bools(uint64_t salt) {
  return [=](const TensorType& t, uint64_t seed) { return RandomTensor(t, seed + salt); };
}

struct Param {
  TensorType type;
  Maker make = Uniform(-1.0, 1.0);
};

struct FdCase {
  std::string name;
  std::vector<Op> ops;  // the rules this case checks (each must appear in the function)
  std::vector<Param> params;
  std::function<ValueId(FunctionBuilder&, const std::vector<ValueId>&)> body;
};

// gtest prints the case by name rather than as bytes.
void PrintTo(const FdCase& c, std::ostream* os) { *os << c.name; }

TensorType F32(Shape s) { return {DType::kF32, std::move(s)}; }
TensorType I32(Shape s) { return {DType::kI32, std::move(s)}; }

FdCase Unary(std::string name, Op op, Maker make = Uniform(-1.0, 1.0)) {
  return {name, {op}, {{F32({2, 3}), make}}, [op](FunctionBuilder& b, const std::vector<ValueId>& p) {
            return b.Emit(op, {p[0]});
          }};
}
FdCase Binary(std::string name, Op op, Maker lhs = Uniform(-1.0, 1.0), Maker rhs = Uniform(-1.0, 1.0)) {
  return {name,
          {op},
          {{F32({2, 3}), lhs}, {F32({2, 3}), rhs}},
          [op](FunctionBuilder& b, const std::vector<ValueId>& p) {
            return b.Emit(op, {p[0], p[1]});
          }};
}

std::vector<FdCase> Cases() {
  using P = const std::vector<ValueId>&;
  std::vector<FdCase> c;
  c.push_back(Binary("add", Op::kAdd));
  c.push_back(Binary("subtract", Op::kSubtract));
  c.push_back(Binary("multiply", Op::kMultiply));
  c.push_back(Binary("divide", Op::kDivide, Uniform(-1, 1), Uniform(0.5, 1.5)));
  c.push_back(Binary("maximum", Op::kMaximum, Spaced(), Spaced(1.0)));
  c.push_back(Binary("minimum", Op::kMinimum, Spaced(), Spaced(1.0)));
  c.push_back(Binary("power", Op::kPower, Uniform(0.5, 2.0), Uniform(-1.5, 1.5)));
  c.push_back(Unary("negate", Op::kNegate));
  c.push_back(Unary("exponential", Op::kExponential));
  c.push_back(Unary("log", Op::kLog, Uniform(0.5, 2.0)));
  c.push_back(Unary("sqrt", Op::kSqrt, Uniform(0.5, 2.0)));
  c.push_back(Unary("rsqrt", Op::kRsqrt, Uniform(0.5, 2.0)));
  c.push_back(Unary("tanh", Op::kTanh));
  c.push_back(Unary("logistic", Op::kLogistic, Uniform(-3, 3)));
  c.push_back(Unary("abs", Op::kAbs, Spaced()));
  c.push_back(Unary("erf", Op::kErf, Uniform(-1.5, 1.5)));
  c.push_back({"select_given_predicate",
               {Op::kSelect},
               {{F32({3, 4})}, {F32({3, 4})}, {{DType::kBool, {3, 4}}, Bools(7)}},
               [](FunctionBuilder& b, P p) { return b.Select(p[2], p[0], p[1]); }});
  c.push_back(
      {"select_on_compare", {Op::kSelect, Op::kCompare}, {{F32({3, 4}), Spaced()}}, [](FunctionBuilder& b, P p) {
         ValueId positive = b.Compare(p[0], b.Full(0.0, F32({3, 4})), ComparisonDirection::kGT);
         return b.Select(positive, b.Mul(p[0], p[0]), b.Neg(p[0]));
       }});
  c.push_back({"convert_f32_and_from_i32",
               {Op::kConvert, Op::kIota},
               {{F32({2, 3})}, {I32({2, 3}), Ints({1, -2, 3, 0, 5, -1})}},
               [](FunctionBuilder& b, P p) {
                 ValueId iota = b.Convert(b.Iota(I32({2, 3}), 1), DType::kF32);
                 return b.Mul(b.Add(b.Convert(p[0], DType::kF32), iota), b.Convert(p[1], DType::kF32));
               }});
  c.push_back(
      {"convert_to_i32_cuts_gradient",
       {Op::kConvert},
       {{F32({2, 3}), Floats({0.1f, 0.2f, 0.45f, 0.55f, 0.8f, 0.9f})}},
       [](FunctionBuilder& b, P p) {
         // floor-like path through i32 has zero gradient; exp(x) carries the rest.
         ValueId through_int = b.Convert(b.Convert(b.Mul(p[0], b.Full(3.0, F32({2, 3}))), DType::kI32), DType::kF32);
         return b.Add(through_int, b.Exp(p[0]));
       }});
  // x on a grid in (-1, 1), bounds -0.4 / 0.6 at least 0.06 from it: every branch is taken.
  c.push_back({"clamp",
               {Op::kClamp},
               {{F32({2, 3}), Floats({-0.4f, -0.4f, -0.4f, -0.4f, -0.4f, 0.7f})},
                {F32({2, 3}), Spaced()},
                {F32({2, 3}), Floats({0.6f, 0.6f, 0.6f, 0.6f, 0.6f, 0.9f})}},
               [](FunctionBuilder& b, P p) { return b.Clamp(p[0], p[1], p[2]); }});
  c.push_back({"ceil_cuts_gradient",
               {Op::kCeil},
               {{F32({2, 3}), Floats({0.1f, 0.2f, 0.45f, 0.55f, 0.8f, -0.9f})}},
               [](FunctionBuilder& b, P p) {
                 // Away from integers (3x +- 3h never crosses one): d/dx ceil(3x) * x = ceil(3x).
                 return b.Mul(b.Emit(Op::kCeil, {b.Mul(p[0], b.Full(3.0, F32({2, 3})))}), p[0]);
               }});
  c.push_back({"broadcast_new_and_stretched_dims", {Op::kBroadcastInDim}, {{F32({3, 1})}}, [](FunctionBuilder& b, P p) {
                 return b.BroadcastInDim(p[0], {2, 3, 4}, {1, 2});
               }});
  c.push_back({"broadcast_size1_to_size1_and_trailing_new",
               {Op::kBroadcastInDim},
               {{F32({1, 3})}},
               [](FunctionBuilder& b, P p) {
                 return b.BroadcastInDim(p[0], {1, 3, 5}, {0, 1});
               }});
  c.push_back({"reshape", {Op::kReshape}, {{F32({2, 6})}}, [](FunctionBuilder& b, P p) {
                 return b.Reshape(p[0], {3, 1, 4});
               }});
  c.push_back({"transpose", {Op::kTranspose}, {{F32({2, 3, 4})}}, [](FunctionBuilder& b, P p) {
                 return b.Transpose(p[0], {2, 0, 1});
               }});
  c.push_back({"slice_contiguous", {Op::kSlice}, {{F32({4, 6})}}, [](FunctionBuilder& b, P p) {
                 return b.Slice(p[0], {1, 2}, {3, 5});
               }});
  c.push_back({"slice_strided", {Op::kSlice}, {{F32({5, 7})}}, [](FunctionBuilder& b, P p) {
                 return b.Slice(p[0], {1, 0}, {5, 7}, {2, 3});
               }});
  c.push_back({"slice_strided_trimmed_tail",
               {Op::kSlice},
               {{F32({2, 6})}},
               // dim 1: elements 1 and 4; the interleaved zeros would run past the end.
               [](FunctionBuilder& b, P p) {
                 return b.Slice(p[0], {0, 1}, {2, 6}, {1, 3});
               }});
  c.push_back(
      {"concatenate_with_repeat", {Op::kConcatenate}, {{F32({2, 3})}, {F32({2, 1})}}, [](FunctionBuilder& b, P p) {
         return b.Concatenate({p[0], p[1], p[0]}, 1);
       }});
  c.push_back({"reduce_sum", {Op::kReduce}, {{F32({2, 3, 4})}}, [](FunctionBuilder& b, P p) {
                 return b.ReduceSum(p[0], {0, 2});
               }});
  c.push_back({"reduce_max_rows", {Op::kReduce}, {{F32({3, 4}), Spaced()}}, [](FunctionBuilder& b, P p) {
                 return b.ReduceMax(p[0], {1});
               }});
  c.push_back({"reduce_max_all", {Op::kReduce}, {{F32({2, 3, 2}), Spaced()}}, [](FunctionBuilder& b, P p) {
                 return b.ReduceMax(p[0], {0, 1, 2});
               }});
  c.push_back({"dot_matmul", {Op::kDotGeneral}, {{F32({2, 3})}, {F32({3, 4})}}, [](FunctionBuilder& b, P p) {
                 return b.MatMul(p[0], p[1]);
               }});
  c.push_back(
      {"dot_transposed_contraction", {Op::kDotGeneral}, {{F32({3, 4})}, {F32({5, 3})}}, [](FunctionBuilder& b, P p) {
         DotDims d;
         d.lhs_contract = {0};
         d.rhs_contract = {1};
         return b.DotGeneral(p[0], p[1], d);
       }});
  c.push_back({"dot_batch_and_two_contractions_in_odd_places",
               {Op::kDotGeneral},
               // lhs [c1=4, b=2, f=3, c2=5], rhs [c2=5, f=2, b=2, c1=4] -> [2, 3, 2]
               {{F32({4, 2, 3, 5})}, {F32({5, 2, 2, 4})}},
               [](FunctionBuilder& b, P p) {
                 DotDims d;
                 d.lhs_batch = {1};
                 d.rhs_batch = {2};
                 d.lhs_contract = {3, 0};
                 d.rhs_contract = {0, 3};
                 return b.DotGeneral(p[0], p[1], d);
               }});
  c.push_back({"dot_two_batch_dims_no_contraction",
               {Op::kDotGeneral},
               // lhs [f=2, b0=3, b1=2], rhs [b1=2, b0=3, f=3] -> [3, 2, 2, 3] (outer product)
               {{F32({2, 3, 2})}, {F32({2, 3, 3})}},
               [](FunctionBuilder& b, P p) {
                 DotDims d;
                 d.lhs_batch = {1, 2};
                 d.rhs_batch = {1, 0};
                 return b.DotGeneral(p[0], p[1], d);
               }});
  c.push_back({"gather_repeated_indices",
               {Op::kGather},
               {{F32({5, 3})}, {I32({2, 3}), Ints({1, 3, 1, 0, 4, 1})}},
               [](FunctionBuilder& b, P p) { return b.Gather(p[0], p[1]); }});
  c.push_back({"gather_out_of_range_clamps",
               {Op::kGather},
               {{F32({4, 2})}, {I32({4}), Ints({-3, 7, 3, 0})}},
               [](FunctionBuilder& b, P p) { return b.Gather(p[0], p[1]); }});
  c.push_back({"scatter_add",
               {Op::kScatter},
               {{F32({5, 3})}, {I32({4}), Ints({0, 2, 2, 4})}, {F32({4, 3})}},
               [](FunctionBuilder& b, P p) { return b.ScatterAdd(p[0], p[1], p[2]); }});
  c.push_back({"scatter_out_of_range_skipped",
               {Op::kScatter},
               {{F32({3, 2})}, {I32({2, 2}), Ints({-1, 1, 3, 1})}, {F32({2, 2, 2})}},
               [](FunctionBuilder& b, P p) { return b.Tanh(b.ScatterAdd(p[0], p[1], p[2])); }});
  c.push_back({"fan_out", {Op::kMultiply, Op::kTanh, Op::kAdd}, {{F32({2, 3})}}, [](FunctionBuilder& b, P p) {
                 return b.Add(b.Mul(b.Tanh(p[0]), p[0]), b.Mul(p[0], p[0]));
               }});
  c.push_back({"mlp_with_bias_broadcast",
               {Op::kDotGeneral, Op::kBroadcastInDim, Op::kLogistic},
               {{F32({4, 3})}, {F32({3, 2})}, {F32({2})}},
               [](FunctionBuilder& b, P p) { return b.Logistic(b.BAdd(b.MatMul(p[0], p[1]), p[2])); }});
  c.push_back({"softmax",
               {Op::kReduce, Op::kExponential, Op::kDivide, Op::kSubtract},
               {{F32({2, 4}), Spaced()}},
               [](FunctionBuilder& b, P p) {
                 ValueId m = b.BroadcastInDim(b.ReduceMax(p[0], {1}), {2, 4}, {0});
                 ValueId e = b.Exp(b.Sub(p[0], m));
                 return b.Div(e, b.BroadcastInDim(b.ReduceSum(e, {1}), {2, 4}, {0}));
               }});
  // The next three differ in whether the max is cut from the reverse pass (shift_invariance.h):
  // log-softmax and the masked softmax (tied maxima, -inf entries) cut it, the last does not.
  c.push_back({"log_softmax",
               {Op::kReduce, Op::kExponential, Op::kLog, Op::kSubtract},
               {{F32({3, 4}), Spaced()}},
               [](FunctionBuilder& b, P p) {
                 ValueId z = b.Sub(p[0], b.BroadcastInDim(b.ReduceMax(p[0], {1}), {3, 4}, {0}));
                 ValueId lse = b.Log(b.ReduceSum(b.Exp(z), {1}));
                 return b.Sub(z, b.BroadcastInDim(lse, {3, 4}, {0}));
               }});
  c.push_back(
      {"masked_softmax_with_ties",
       {Op::kReduce, Op::kSelect, Op::kExponential, Op::kDivide},
       {{F32({2, 4}), Floats({0.5f, 0.5f, -0.25f, 0.5f, 1.0f, -1.0f, 1.0f, 0.0f})}, {{DType::kBool, {2, 4}}, Bools(7)}},
       [](FunctionBuilder& b, P p) {
         // Column 0 always kept, so no row is all -inf.
         ValueId keep = b.Or(p[1], b.Compare(b.Iota(I32({2, 4}), 1), b.Full(0, I32({2, 4})), ComparisonDirection::kEQ));
         ValueId s = b.Select(keep, p[0], b.Full(-std::numeric_limits<double>::infinity(), F32({2, 4})));
         ValueId e = b.Exp(b.Sub(s, b.BroadcastInDim(b.ReduceMax(s, {1}), {2, 4}, {0})));
         return b.Div(e, b.BroadcastInDim(b.ReduceSum(e, {1}), {2, 4}, {0}));
       }});
  // The softmax's exp and row sum also used outside it: the closed form covers only the
  // path through the quotient, their other uses go through their own rules.
  c.push_back({"softmax_parts_reused",
               {Op::kReduce, Op::kExponential, Op::kDivide, Op::kMultiply},
               {{F32({2, 4})}},
               [](FunctionBuilder& b, P p) {
                 ValueId e = b.Exp(p[0]);
                 ValueId s = b.BroadcastInDim(b.ReduceSum(e, {1}), {2, 4}, {0});
                 return b.Add(b.Div(e, s), b.Mul(e, b.Mul(s, b.Full(0.1, F32({2, 4})))));
               }});
  c.push_back({"max_shift_not_normalized",
               {Op::kReduce, Op::kExponential, Op::kSubtract},
               {{F32({2, 4}), Spaced()}},
               [](FunctionBuilder& b, P p) {
                 return b.Exp(b.Sub(p[0], b.BroadcastInDim(b.ReduceMax(p[0], {1}), {2, 4}, {0})));
               }});
  // Fused attention (attention.h): its rule emits attention_lse and the three grad ops, which
  // the interpreter computes from their definitions; causal self-attention and unmasked
  // cross-attention (T != S, E != D).
  auto attention = [](bool causal, double scale) {
    return [=](FunctionBuilder& b, P p) {
      Attributes a;
      a.scale = scale;
      a.causal = causal;
      return b.Emit(Op::kAttention, {p[0], p[1], p[2]}, a);
    };
  };
  c.push_back({"attention_causal",
               {Op::kAttention},
               {{F32({2, 4, 3})}, {F32({2, 4, 3})}, {F32({2, 4, 5})}},
               attention(true, 0.7)});
  c.push_back({"attention_cross",
               {Op::kAttention},
               {{F32({2, 1, 3, 2})}, {F32({2, 1, 4, 2})}, {F32({2, 1, 4, 3})}},
               attention(false, 1.3)});
  return c;
}

struct Built {
  Function loss;      // f's params -> loss = sum(f * R)
  Function gradient;  // the same, then one gradient per float param
  std::vector<int> wrt;
};

absl::StatusOr<Built> Build(const FdCase& c, uint64_t seed) {
  FunctionBuilder b(c.name);
  std::vector<ValueId> params;
  for (size_t i = 0; i < c.params.size(); ++i) params.push_back(b.Parameter(c.params[i].type, absl::StrCat("p", i)));
  ValueId y = c.body(b, params);
  if (!b.status().ok()) return b.status();
  TensorType yt = b.type(y);
  ValueId weighted = b.Mul(y, b.Constant(RandomTensor(yt, seed, -1.0, 1.0)));
  std::vector<int64_t> all(static_cast<size_t>(yt.rank()));
  std::iota(all.begin(), all.end(), 0);
  b.Return({b.ReduceSum(weighted, all)}, {"loss"});
  Built out;
  PCP_ASSIGN_OR_RETURN(out.loss, b.Build());
  for (size_t i = 0; i < c.params.size(); ++i) {
    if (IsFloat(c.params[i].type.dtype)) out.wrt.push_back(static_cast<int>(i));
  }
  PCP_ASSIGN_OR_RETURN(out.gradient, BuildGradientFunction(out.loss, out.wrt));
  return out;
}

absl::StatusOr<double> Loss(const Function& f, const std::vector<Tensor>& args) {
  PCP_ASSIGN_OR_RETURN(std::vector<Tensor> out, Interpret(f, args));
  return static_cast<double>(out[0].data<float>()[0]);
}

class VjpFdTest : public ::testing::TestWithParam<FdCase> {};

TEST_P(VjpFdTest, MatchesCentralDifferences) {
  const FdCase& c = GetParam();
  absl::StatusOr<Built> built = Build(c, /*seed=*/1234);
  ASSERT_TRUE(built.ok()) << built.status();
  ASSERT_TRUE(Verify(built->loss).ok()) << Verify(built->loss);
  ASSERT_TRUE(Verify(built->gradient).ok()) << Verify(built->gradient);
  std::set<Op> present;
  for (const Instruction& inst : built->loss.instructions) present.insert(inst.op);
  for (Op op : c.ops) EXPECT_TRUE(present.count(op)) << OpName(op) << " is declared but not used";

  std::vector<Tensor> args;
  for (size_t i = 0; i < c.params.size(); ++i) args.push_back(c.params[i].make(c.params[i].type, 100 + i));
  absl::StatusOr<std::vector<Tensor>> ad = Interpret(built->gradient, args);
  ASSERT_TRUE(ad.ok()) << ad.status();
  ASSERT_EQ(ad->size(), 1 + built->wrt.size());
  absl::StatusOr<double> loss = Loss(built->loss, args);
  ASSERT_TRUE(loss.ok()) << loss.status();
  EXPECT_EQ((*ad)[0].data<float>()[0], static_cast<float>(*loss)) << "forward result changed";

  for (size_t k = 0; k < built->wrt.size(); ++k) {
    int p = built->wrt[k];
    const Tensor& grad = (*ad)[1 + k];
    Tensor fd(DType::kF32, c.params[p].type.shape);
    for (int64_t e = 0; e < fd.num_elements(); ++e) {
      std::vector<Tensor> plus = args, minus = args;
      plus[p] = args[p].Clone();
      minus[p] = args[p].Clone();
      plus[p].data<float>()[e] += static_cast<float>(kStep);
      minus[p].data<float>()[e] -= static_cast<float>(kStep);
      absl::StatusOr<double> lp = Loss(built->loss, plus), lm = Loss(built->loss, minus);
      ASSERT_TRUE(lp.ok() && lm.ok()) << lp.status() << lm.status();
      fd.data<float>()[e] = static_cast<float>((*lp - *lm) / (2 * kStep));
    }
    EXPECT_TRUE(TensorsNear(grad, fd, kRtol, kAtol))
        << c.name << ": gradient of p" << p << " vs central differences (h=" << kStep << ", rtol=" << kRtol
        << ", atol=" << kAtol << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(AllRules, VjpFdTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<FdCase>& info) { return info.param.name; });

// Adding an op with a rule but without a finite-difference case here fails this test.
TEST(VjpFdCoverageTest, EveryRuleHasACase) {
  std::set<Op> covered;
  for (const FdCase& c : Cases()) covered.insert(c.ops.begin(), c.ops.end());
  for (int i = 0; i < kNumOps; ++i) {
    Op op = AllOps()[i];
    // The ops of attention's backward have a rule that refuses (no second derivatives).
    const bool backward_only = GetOpCategory(op) == OpCategory::kAttention && op != Op::kAttention;
    if (GetVjpEntry(op).rule != nullptr && !backward_only) {
      EXPECT_TRUE(covered.count(op)) << "no FD case for " << OpName(op);
    }
  }
}

// A parameter the loss does not depend on gets zeros; one reached only through compare
// (non-differentiable) too.
TEST(VjpFdCoverageTest, UnreachedParametersGetZeros) {
  FunctionBuilder b("f");
  ValueId x = b.Parameter(F32({3}), "x");
  ValueId unused = b.Parameter(F32({2, 2}), "unused");
  ValueId via_compare = b.Parameter(F32({3}), "via_compare");
  ValueId mask = b.Compare(via_compare, b.Full(0.0, F32({3})), ComparisonDirection::kGT);
  ValueId y = b.Select(mask, b.Exp(x), b.Neg(x));
  b.Return({b.ReduceSum(y, {0})}, {"loss"});
  (void)unused;
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<Function> g = BuildGradientFunction(*f, {0, 1, 2});
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE(Verify(*g).ok());
  Tensor xv = Tensor::FromVector<float>({3}, {0.5f, -1.0f, 2.0f});
  Tensor cv = Tensor::FromVector<float>({3}, {1.0f, -1.0f, 1.0f});
  absl::StatusOr<std::vector<Tensor>> out = Interpret(*g, {xv, RandomTensor(F32({2, 2}), 3), cv});
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<float> gx = (*out)[1].ToVector<float>();
  EXPECT_FLOAT_EQ(gx[0], std::exp(0.5f));
  EXPECT_FLOAT_EQ(gx[1], -1.0f);
  EXPECT_FLOAT_EQ(gx[2], std::exp(2.0f));
  EXPECT_TRUE(TensorsNear((*out)[2], Tensor(DType::kF32, {2, 2}), 0, 0));
  EXPECT_TRUE(TensorsNear((*out)[3], Tensor(DType::kF32, {3}), 0, 0));
}

// Ties: maximum/minimum send the gradient to the first operand; reduce max shares it
// equally among the maximal positions.
TEST(VjpFdCoverageTest, TiesFollowTheDocumentedConvention) {
  FunctionBuilder b("f");
  ValueId x = b.Parameter(F32({4}), "x");
  ValueId y = b.Parameter(F32({4}), "y");
  ValueId loss = b.Add(b.Add(b.ReduceSum(b.Max(x, y), {0}), b.ReduceSum(b.Min(y, x), {0})), b.ReduceMax(x, {0}));
  b.Return({loss}, {"loss"});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<Function> g = BuildGradientFunction(*f, {0, 1});
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE(Verify(*g).ok());
  Tensor xv = Tensor::FromVector<float>({4}, {1.0f, 3.0f, 3.0f, 2.0f});
  Tensor yv = Tensor::FromVector<float>({4}, {1.0f, 0.0f, 3.0f, 5.0f});
  absl::StatusOr<std::vector<Tensor>> out = Interpret(*g, {xv, yv});
  ASSERT_TRUE(out.ok()) << out.status();
  // max(x, y): x at 0 (tie), 1, 2 (tie), y at 3; min(y, x): y at 0 (tie), 1, 2 (tie), x at 3;
  // reduce max(x): 3 at positions 1 and 2, half each.
  EXPECT_EQ((*out)[1].ToVector<float>(), (std::vector<float>{1.0f, 1.5f, 1.5f, 1.0f}));
  EXPECT_EQ((*out)[2].ToVector<float>(), (std::vector<float>{1.0f, 1.0f, 1.0f, 1.0f}));
}

// An explicit seed scales the gradient; fan-out into the seed's own output is summed.
TEST(VjpFdCoverageTest, SeedScalesGradient) {
  FunctionBuilder b("f");
  ValueId x = b.Parameter(F32({2}), "x");
  ValueId loss = b.ReduceSum(b.Mul(x, x), {0});
  ValueId seed = b.ScalarConstant(3.0);
  absl::StatusOr<std::vector<ValueId>> g = AppendGradients(b, loss, {x, x}, seed);
  ASSERT_TRUE(g.ok()) << g.status();
  b.Return({(*g)[0], (*g)[1]});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE(Verify(*f).ok());
  absl::StatusOr<std::vector<Tensor>> out = Interpret(*f, {Tensor::FromVector<float>({2}, {1.0f, -2.0f})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].ToVector<float>(), (std::vector<float>{6.0f, -12.0f}));
  EXPECT_EQ((*out)[1].ToVector<float>(), (std::vector<float>{6.0f, -12.0f}));
}

}  // namespace
}  // namespace pcp
