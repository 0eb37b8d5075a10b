// stablehlo.dynamic_slice / dynamic_update_slice in the text form (text.h), and the lax.scan
// over stacked layers that JAX prints with them: starts clamped as the spec says, a static
// slice where they fold and a gather / assigning scatter where they come from the
// arguments; the scanned model's value against the loop computed here by hand, its gradient
// against central differences; bad starts and windows are errors at line:col.
#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/passes.h"
#include "pcp/autodiff/text.h"
#include "pcp/autodiff/vjp.h"

namespace pcp {
namespace {

using ::testing::HasSubstr;

Function ParseMain(const std::string& text) {
  absl::StatusOr<Module> m = ParseModule(text, "ds.mlir");
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *m->Find("main") : Function{};
}

int Count(const Function& f, Op op) {
  int n = 0;
  for (const Instruction& inst : f.instructions) n += inst.op == op ? 1 : 0;
  return n;
}

// x[4x3] sliced at (s0, s1) with sizes [2, 2], and x with [[-1, -2]] written at (s0, s1).
constexpr char kSlices[] = R"(module {
  func.func @main(%x: tensor<4x3xf32>, %s0: tensor<i32>, %s1: tensor<i32>) -> (tensor<2x2xf32>, tensor<4x3xf32>) {
    %u = stablehlo.constant dense<[[-1.0, -2.0]]> : tensor<1x2xf32>
    %0 = stablehlo.dynamic_slice %x, %s0, %s1, sizes = [2, 2] : (tensor<4x3xf32>, tensor<i32>, tensor<i32>) -> tensor<2x2xf32>
    %1 = stablehlo.dynamic_update_slice %x, %u, %s0, %s1 : (tensor<4x3xf32>, tensor<1x2xf32>, tensor<i32>, tensor<i32>) -> tensor<4x3xf32>
    return %0, %1 : tensor<2x2xf32>, tensor<4x3xf32>
  }
})";

Tensor I32(int32_t v) {
  Tensor t(DType::kI32, {});
  t.data<int32_t>()[0] = v;
  return t;
}

TEST(TextDynamicSliceTest, StartsFromArgumentsAreClampedLikeTheSpec) {
  const Function f = ParseMain(kSlices);
  EXPECT_EQ(Count(f, Op::kGather), 1);  // the starts are arguments: a gather and a scatter
  EXPECT_GE(Count(f, Op::kScatter), 1);
  const Tensor x = Tensor::FromVector<float>({4, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  struct Case {
    int32_t s0, s1;
    std::vector<float> slice;
    std::vector<float> updated;
  };
  const std::vector<Case> cases = {
      {1, 0, {3, 4, 6, 7}, {0, 1, 2, -1, -2, 5, 6, 7, 8, 9, 10, 11}},
      {3, 1, {7, 8, 10, 11}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, -1, -2}},   // slice clamped to row 2
      {-5, 9, {1, 2, 4, 5}, {0, -1, -2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},  // clamped to (0, 1)
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<Tensor>> out = Interpret(f, {x, I32(c.s0), I32(c.s1)});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(out->at(0).ToVector<float>(), c.slice) << c.s0 << ", " << c.s1;
    EXPECT_EQ(out->at(1).ToVector<float>(), c.updated) << c.s0 << ", " << c.s1;
  }
}

TEST(TextDynamicSliceTest, StartsThatFoldAreAStaticSlice) {
  const Function f = ParseMain(R"(module {
  func.func @main(%x: tensor<4x3xf32>) -> tensor<2x2xf32> {
    %c = stablehlo.constant dense<7> : tensor<i64>
    %one = stablehlo.constant dense<1> : tensor<i64>
    %0 = stablehlo.dynamic_slice %x, %c, %one, sizes = [2, 2] : (tensor<4x3xf32>, tensor<i64>, tensor<i64>) -> tensor<2x2xf32>
    return %0 : tensor<2x2xf32>
  }
})");
  ASSERT_EQ(f.instructions.size(), 3u);
  EXPECT_EQ(f.instructions[2].op, Op::kSlice);
  EXPECT_EQ(f.instructions[2].attrs.start, (std::vector<int64_t>{2, 1}));  // 7 clamped to 4 - 2
  EXPECT_EQ(f.instructions[2].attrs.limit, (std::vector<int64_t>{4, 3}));
}

// lax.scan over 3 stacked layers as JAX prints it: h <- tanh(h W[i]); ys[i] = h. The loop is
// unrolled, W[i] a static slice, ys written by scatters.
constexpr char kScan[] = R"(module @jit_scan {
  func.func public @main(%W: tensor<3x4x4xf32>, %h0: tensor<2x4xf32>) -> (tensor<f32>, tensor<3x2x4xf32>) {
    %c0 = stablehlo.constant dense<0> : tensor<i64>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %ys0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x2x4xf32>
    %0:4 = stablehlo.while(%iterArg = %c0, %iterArg_0 = %h0, %iterArg_1 = %W, %iterArg_2 = %ys0) : tensor<i64>, tensor<2x4xf32>, tensor<3x4x4xf32>, tensor<3x2x4xf32>
     cond {
      %c_3 = stablehlo.constant dense<3> : tensor<i64>
      %1 = stablehlo.compare  LT, %iterArg, %c_3,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %c_3 = stablehlo.constant dense<0> : tensor<i64>
      %1 = stablehlo.compare  LT, %iterArg, %c_3,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
      %c_4 = stablehlo.constant dense<3> : tensor<i64>
      %2 = stablehlo.add %iterArg, %c_4 : tensor<i64>
      %3 = stablehlo.select %1, %2, %iterArg : tensor<i1>, tensor<i64>
      %4 = stablehlo.dynamic_slice %iterArg_1, %3, %c_3, %c_3, sizes = [1, 4, 4] : (tensor<3x4x4xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<1x4x4xf32>
      %5 = stablehlo.reshape %4 : (tensor<1x4x4xf32>) -> tensor<4x4xf32>
      %6 = stablehlo.dot_general %iterArg_0, %5, contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
      %7 = stablehlo.tanh %6 : tensor<2x4xf32>
      %8 = stablehlo.broadcast_in_dim %7, dims = [1, 2] : (tensor<2x4xf32>) -> tensor<1x2x4xf32>
      %9 = stablehlo.dynamic_update_slice %iterArg_2, %8, %3, %c_3, %c_3 : (tensor<3x2x4xf32>, tensor<1x2x4xf32>, tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<3x2x4xf32>
      %c_5 = stablehlo.constant dense<1> : tensor<i64>
      %10 = stablehlo.add %iterArg, %c_5 : tensor<i64>
      stablehlo.return %10, %7, %iterArg_1, %9 : tensor<i64>, tensor<2x4xf32>, tensor<3x4x4xf32>, tensor<3x2x4xf32>
    }
    %11 = stablehlo.reduce(%0#3 init: %cst) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<3x2x4xf32>, tensor<f32>) -> tensor<f32>
    return %11, %0#3 : tensor<f32>, tensor<3x2x4xf32>
  }
})";

std::vector<float> Values(int n, float scale, float offset) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = scale * std::sin(0.7f * static_cast<float>(i) + offset);
  return v;
}

TEST(TextDynamicSliceTest, ScanOverStackedLayersComputesTheLoopAndItsGradient) {
  Function f = ParseMain(kScan);
  ASSERT_TRUE(RunStandardPasses(f).ok());
  EXPECT_EQ(Count(f, Op::kDotGeneral), 3);  // one per layer
  EXPECT_EQ(Count(f, Op::kGather), 0);      // W[i] is a static slice
  const std::vector<float> w = Values(48, 0.6f, 0.0f), h = Values(8, 1.0f, 1.0f);
  absl::StatusOr<std::vector<Tensor>> out =
      Interpret(f, {Tensor::FromVector<float>({3, 4, 4}, w), Tensor::FromVector<float>({2, 4}, h)});
  ASSERT_TRUE(out.ok()) << out.status();
  // The loop by hand.
  std::vector<float> cur = h, ys;
  for (int l = 0; l < 3; ++l) {
    std::vector<float> next(8, 0.0f);
    for (int r = 0; r < 2; ++r) {
      for (int j = 0; j < 4; ++j) {
        double acc = 0;
        for (int k = 0; k < 4; ++k) acc += double{cur[r * 4 + k]} * w[static_cast<size_t>(l * 16 + k * 4 + j)];
        next[static_cast<size_t>(r * 4 + j)] = static_cast<float>(std::tanh(acc));
      }
    }
    ys.insert(ys.end(), next.begin(), next.end());
    cur = next;
  }
  const std::vector<float> got = out->at(1).ToVector<float>();
  ASSERT_EQ(got.size(), ys.size());
  for (size_t i = 0; i < ys.size(); ++i) EXPECT_NEAR(got[i], ys[i], 1e-6) << i;

  // d loss / d W against central differences (in double around the f32 program).
  absl::StatusOr<Function> grad = BuildGradientFunction(f, {0, 1});
  ASSERT_TRUE(grad.ok()) << grad.status();
  absl::StatusOr<std::vector<Tensor>> g =
      Interpret(*grad, {Tensor::FromVector<float>({3, 4, 4}, w), Tensor::FromVector<float>({2, 4}, h)});
  ASSERT_TRUE(g.ok()) << g.status();
  const std::vector<float> dw = g->at(2).ToVector<float>();
  auto loss = [&](const std::vector<float>& wv) {
    absl::StatusOr<std::vector<Tensor>> o =
        Interpret(f, {Tensor::FromVector<float>({3, 4, 4}, wv), Tensor::FromVector<float>({2, 4}, h)});
    return o.ok() ? double{o->at(0).data<float>()[0]} : NAN;
  };
  for (int k : {0, 5, 17, 30, 47}) {  // entries of each layer
    const float eps = 1e-2f;
    std::vector<float> plus = w, minus = w;
    plus[static_cast<size_t>(k)] += eps;
    minus[static_cast<size_t>(k)] -= eps;
    const double fd = (loss(plus) - loss(minus)) / (2 * eps);
    EXPECT_NEAR(dw[static_cast<size_t>(k)], fd, 2e-3 * std::max(1.0, std::abs(fd))) << "W entry " << k;
  }
}

TEST(TextDynamicSliceTest, ErrorsNameWhatAndWhere) {
  const std::string head =
      "module {\n  func.func @main(%x: tensor<4x3xf32>, %s: tensor<i32>, %t: tensor<i64>) -> tensor<2x2xf32> {\n";
  const std::string tail = "\n    return %0 : tensor<2x2xf32>\n  }\n}\n";
  struct Case {
    std::string op, message;
  };
  const std::vector<Case> cases = {
      {"    %0 = stablehlo.dynamic_slice %x, %s, sizes = [2, 2] : (tensor<4x3xf32>, tensor<i32>) -> tensor<2x2xf32>",
       "ds.mlir:3:5: stablehlo.dynamic_slice takes one start per dimension of tensor<4x3xf32> (2), got 1"},
      {"    %0 = stablehlo.dynamic_slice %x, %s, %t, sizes = [2, 2] : (tensor<4x3xf32>, tensor<i32>, tensor<i64>) -> "
       "tensor<2x2xf32>",
       "ds.mlir:3:42: stablehlo.dynamic_slice: the starts must be integer scalars of one type, got tensor<i64> after "
       "tensor<i32>"},
      {"    %0 = stablehlo.dynamic_slice %x, %s, %s, sizes = [2, 5] : (tensor<4x3xf32>, tensor<i32>, tensor<i32>) -> "
       "tensor<2x2xf32>",
       "ds.mlir:3:46: stablehlo.dynamic_slice: the window [2, 5] does not fit in tensor<4x3xf32>"},
      {"    %0 = stablehlo.dynamic_slice %x, %s, %s, sizes = [2, 1] : (tensor<4x3xf32>, tensor<i32>, tensor<i32>) -> "
       "tensor<2x2xf32>",
       "stablehlo.dynamic_slice: the result type is tensor<2x2xf32> but the operands give tensor<2x1xf32>"},
      {"    %0 = \"stablehlo.dynamic_slice\"(%x, %s, %s) : (tensor<4x3xf32>, tensor<i32>, tensor<i32>) -> "
       "tensor<2x2xf32>",
       "ds.mlir:3:5: stablehlo.dynamic_slice needs attribute 'slice_sizes'"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Module> m = ParseModule(head + c.op + tail, "ds.mlir");
    ASSERT_FALSE(m.ok()) << c.op;
    EXPECT_THAT(std::string(m.status().message()), HasSubstr(c.message)) << c.op;
  }
}

}  // namespace
}  // namespace pcp
