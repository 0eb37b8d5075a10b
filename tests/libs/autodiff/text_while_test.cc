// stablehlo.while in the text form (text.h): a loop with a static trip count (a counter
// against a constant bound, as lax.scan and fori_loop print) is unrolled while parsing into
// the same program as its body written out N times, in the pretty and the generic form, with
// captured values, calls and loops inside it; its gradient is the unrolled program's; a trip
// count that depends on the arguments, a runaway loop and type mismatches are errors at
// line:col.
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

// h <- tanh(h * w + i) three times, i counting 0, 1, 2 (w captured from the function).
constexpr char kPrettyLoop[] = R"(module {
  func.func public @main(%h0: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
    %c0 = stablehlo.constant dense<0> : tensor<i64>
    %0:2 = stablehlo.while(%iterArg = %c0, %iterArg_1 = %h0) : tensor<i64>, tensor<4xf32>
     cond {
      %c = stablehlo.constant dense<3> : tensor<i64>
      %1 = stablehlo.compare  LT, %iterArg, %c,  SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %1 = stablehlo.convert %iterArg : (tensor<i64>) -> tensor<f32>
      %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<4xf32>
      %3 = stablehlo.multiply %iterArg_1, %w : tensor<4xf32>
      %4 = stablehlo.add %3, %2 : tensor<4xf32>
      %5 = stablehlo.tanh %4 : tensor<4xf32>
      %c = stablehlo.constant dense<1> : tensor<i64>
      %6 = stablehlo.add %iterArg, %c : tensor<i64>
      stablehlo.return %6, %5 : tensor<i64>, tensor<4xf32>
    }
    return %0#1 : tensor<4xf32>
  }
}
)";

// The same loop as old MHLO prints it: generic form, regions with their own block arguments.
constexpr char kGenericLoop[] = R"("builtin.module"() ({
  "func.func"() ({
  ^bb0(%h0: tensor<4xf32>, %w: tensor<4xf32>):
    %c0 = "mhlo.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
    %r0, %r1 = "mhlo.while"(%c0, %h0) ({
    ^bb0(%i: tensor<i64>, %h: tensor<4xf32>):
      %c = "mhlo.constant"() {value = dense<3> : tensor<i64>} : () -> tensor<i64>
      %p = "mhlo.compare"(%i, %c) {comparison_direction = #mhlo<comparison_direction LT>} : (tensor<i64>, tensor<i64>) -> tensor<i1>
      "mhlo.return"(%p) : (tensor<i1>) -> ()
    }, {
    ^bb0(%i: tensor<i64>, %h: tensor<4xf32>):
      %f = "mhlo.convert"(%i) : (tensor<i64>) -> tensor<f32>
      %b = "mhlo.broadcast_in_dim"(%f) {broadcast_dimensions = dense<> : tensor<0xi64>} : (tensor<f32>) -> tensor<4xf32>
      %m = "mhlo.multiply"(%h, %w) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %a = "mhlo.add"(%m, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      %t = "mhlo.tanh"(%a) : (tensor<4xf32>) -> tensor<4xf32>
      %one = "mhlo.constant"() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
      %n = "mhlo.add"(%i, %one) : (tensor<i64>, tensor<i64>) -> tensor<i64>
      "mhlo.return"(%n, %t) : (tensor<i64>, tensor<4xf32>) -> ()
    }) : (tensor<i64>, tensor<4xf32>) -> (tensor<i64>, tensor<4xf32>)
    "func.return"(%r1) : (tensor<4xf32>) -> ()
  }) {function_type = (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>, sym_name = "main"} : () -> ()
}) : () -> ()
)";

// The loop written out: what both forms must become.
constexpr char kUnrolled[] = R"(module {
  func.func public @main(%h0: tensor<4xf32>, %w: tensor<4xf32>) -> tensor<4xf32> {
    %f0 = stablehlo.constant dense<0.0> : tensor<f32>
    %i0 = stablehlo.broadcast_in_dim %f0, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %0 = stablehlo.multiply %h0, %w : tensor<4xf32>
    %1 = stablehlo.add %0, %i0 : tensor<4xf32>
    %2 = stablehlo.tanh %1 : tensor<4xf32>
    %f1 = stablehlo.constant dense<1.0> : tensor<f32>
    %i1 = stablehlo.broadcast_in_dim %f1, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %3 = stablehlo.multiply %2, %w : tensor<4xf32>
    %4 = stablehlo.add %3, %i1 : tensor<4xf32>
    %5 = stablehlo.tanh %4 : tensor<4xf32>
    %f2 = stablehlo.constant dense<2.0> : tensor<f32>
    %i2 = stablehlo.broadcast_in_dim %f2, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %6 = stablehlo.multiply %5, %w : tensor<4xf32>
    %7 = stablehlo.add %6, %i2 : tensor<4xf32>
    %8 = stablehlo.tanh %7 : tensor<4xf32>
    return %8 : tensor<4xf32>
  }
}
)";

Function Parsed(const std::string& text) {
  absl::StatusOr<Module> m = ParseModule(text, "loop.mlir");
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return Function{};
  Function f = m->functions.at(0);
  EXPECT_TRUE(RunStandardPasses(f).ok());
  return f;
}

std::vector<float> Evaluate(const Function& f) {
  absl::StatusOr<std::vector<Tensor>> out = Interpret(f, {Tensor::FromVector<float>({4}, {0.5f, -1.0f, 2.0f, 0.0f}),
                                                          Tensor::FromVector<float>({4}, {1.5f, 0.25f, -0.75f, 3.0f})});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? out->at(0).ToVector<float>() : std::vector<float>{};
}

TEST(TextWhileTest, StaticLoopUnrollsIntoItsBodyWrittenOut) {
  const Function unrolled = Parsed(kUnrolled);
  for (const char* text : {kPrettyLoop, kGenericLoop}) {
    const Function loop = Parsed(text);
    EXPECT_EQ(PrintFunction(loop), PrintFunction(unrolled));
    EXPECT_EQ(Evaluate(loop), Evaluate(unrolled));
  }
  // The loop ran three times: h = tanh(tanh(tanh(h0 w) w + 1) w + 2).
  const std::vector<float> got = Evaluate(Parsed(kPrettyLoop));
  const float h0 = 0.5f, w = 1.5f;
  EXPECT_FLOAT_EQ(got.at(0), std::tanh(std::tanh(std::tanh(h0 * w) * w + 1) * w + 2));
}

// `text` (pretty form, returning %r : tensor<4xf32>) with the sum of its result as the loss.
std::string SumLoss(std::string text, const std::string& r) {
  const std::string ret = "    return " + r + " : tensor<4xf32>";
  text.replace(text.find(ret), ret.size(),
               "    %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
               "    %loss = stablehlo.reduce(" +
                   r +
                   " init: %z) applies stablehlo.add across dimensions = [0] : "
                   "(tensor<4xf32>, tensor<f32>) -> tensor<f32>\n"
                   "    return %loss : tensor<f32>");
  const std::string sig = ") -> tensor<4xf32> {";
  text.replace(text.find(sig), sig.size(), ") -> tensor<f32> {");
  return text;
}

TEST(TextWhileTest, GradientIsTheUnrolledProgramsGradient) {
  std::vector<std::vector<float>> grads[2];
  const std::string texts[2] = {SumLoss(kPrettyLoop, "%0#1"), SumLoss(kUnrolled, "%8")};
  for (int k = 0; k < 2; ++k) {
    absl::StatusOr<Module> m = ParseModule(texts[k], "loss.mlir");
    ASSERT_TRUE(m.ok()) << m.status() << "\n" << texts[k];
    Function f = m->functions[0];
    ASSERT_TRUE(RunStandardPasses(f).ok());
    absl::StatusOr<Function> g = BuildGradientFunction(f, {0, 1});
    ASSERT_TRUE(g.ok()) << g.status();
    absl::StatusOr<std::vector<Tensor>> out =
        Interpret(*g, {Tensor::FromVector<float>({4}, {0.5f, -1.0f, 2.0f, 0.0f}),
                       Tensor::FromVector<float>({4}, {1.5f, 0.25f, -0.75f, 3.0f})});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->size(), 3u);  // the loss, d/dh0, d/dw
    for (const Tensor& t : *out) grads[k].push_back(t.ToVector<float>());
  }
  EXPECT_EQ(grads[0], grads[1]);
  // Not trivially zero: w reaches the loss through all three iterations.
  EXPECT_NE(grads[0][2], std::vector<float>(4, 0.0f));
}

// Results named one by one (the interpreter suite's form), a call in the body and a loop in
// the loop: sum += 1 ten times, of which the inner loop adds i twice per outer iteration.
TEST(TextWhileTest, NamedResultsCallsAndNestedLoops) {
  absl::StatusOr<Module> m = ParseModule(R"(module {
  func.func @main() -> (tensor<i64>, tensor<i64>) {
    %init_i = stablehlo.constant dense<0> : tensor<i64>
    %init_sum = stablehlo.constant dense<0> : tensor<i64>
    %one = stablehlo.constant dense<1> : tensor<i64>
    %ten = stablehlo.constant dense<10> : tensor<i64>
    %results0, %results1 = stablehlo.while(%arg0 = %init_i, %arg1 = %init_sum) : tensor<i64>, tensor<i64>
    cond {
      %cond = stablehlo.compare LT, %arg0, %ten : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %cond : tensor<i1>
    } do {
      %new_sum = func.call @inc(%arg1) : (tensor<i64>) -> tensor<i64>
      %j0 = stablehlo.constant dense<0> : tensor<i64>
      %inner:2 = stablehlo.while(%j = %j0, %s = %new_sum) : tensor<i64>, tensor<i64>
      cond {
        %two = stablehlo.constant dense<2> : tensor<i64>
        %c = stablehlo.compare LT, %j, %two : (tensor<i64>, tensor<i64>) -> tensor<i1>
        stablehlo.return %c : tensor<i1>
      } do {
        %s2 = stablehlo.add %s, %arg0 : tensor<i64>
        %j2 = stablehlo.add %j, %one : tensor<i64>
        stablehlo.return %j2, %s2 : tensor<i64>, tensor<i64>
      }
      %new_i = stablehlo.add %arg0, %one : tensor<i64>
      stablehlo.return %new_i, %inner#1 : tensor<i64>, tensor<i64>
    }
    return %results0, %results1 : tensor<i64>, tensor<i64>
  }
  func.func private @inc(%x: tensor<i64>) -> tensor<i64> {
    %c = stablehlo.constant dense<1> : tensor<i64>
    %y = stablehlo.add %x, %c : tensor<i64>
    return %y : tensor<i64>
  }
})",
                                         "loops.mlir");
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<std::vector<Tensor>> out = Interpret(*m->Find("main"), {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->at(0).ToVector<int64_t>(), std::vector<int64_t>{10});
  EXPECT_EQ(out->at(1).ToVector<int64_t>(), std::vector<int64_t>{10 + 2 * 45});  // 10 calls, 2 × (0 + ... + 9)
}

std::string LoopWith(const std::string& cond, const std::string& body_return) {
  return R"(module {
  func.func @main(%n: tensor<i64>, %x: tensor<2xf32>) -> tensor<2xf32> {
    %c0 = stablehlo.constant dense<0> : tensor<i64>
    %0:2 = stablehlo.while(%i = %c0, %h = %x) : tensor<i64>, tensor<2xf32>
    cond {
)" + cond +
         R"(
    } do {
      %one = stablehlo.constant dense<1> : tensor<i64>
      %i2 = stablehlo.add %i, %one : tensor<i64>
      %h2 = stablehlo.exponential %h : tensor<2xf32>
)" + body_return +
         R"(
    }
    return %0#1 : tensor<2xf32>
  }
})";
}

TEST(TextWhileTest, ErrorsNameWhatAndWhere) {
  const std::string ok_return = "      stablehlo.return %i2, %h2 : tensor<i64>, tensor<2xf32>";
  struct Case {
    std::string text, message;
  };
  const std::vector<Case> cases = {
      {LoopWith("      %c = stablehlo.compare LT, %i, %n : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
                "      stablehlo.return %c : tensor<i1>",
                ok_return),
       "loop.mlir:5:10: the condition of stablehlo.while does not fold to a constant on iteration 0: PCP unrolls "
       "loops, so the trip count must not depend on the arguments"},
      {LoopWith("      %t = stablehlo.constant dense<true> : tensor<i1>\n      stablehlo.return %t : tensor<i1>",
                ok_return),
       "loop.mlir:4:5: stablehlo.while runs more than 100000 iterations (PCP unrolls loops)"},
      {LoopWith("      %t = stablehlo.constant dense<false> : tensor<i1>\n      stablehlo.return %t : tensor<i1>",
                "      stablehlo.return %i2 : tensor<i64>"),
       ""},  // the body is never read: a loop that never runs is its operands
      {LoopWith("      %c = stablehlo.compare LT, %i, %one : (tensor<i64>, tensor<i64>) -> tensor<i1>\n"
                "      stablehlo.return %c : tensor<i1>",
                ok_return),
       "loop.mlir:6:38: use of undefined value %one"},  // the body's values are not the condition's
      {LoopWith("      %t = stablehlo.constant dense<true> : tensor<i1>\n      stablehlo.return %t : tensor<i1>",
                "      stablehlo.return %i2 : tensor<i64>"),
       "loop.mlir:8:10: the body of stablehlo.while returns 1 values but the loop carries 2"},
      {LoopWith("      %t = stablehlo.constant dense<true> : tensor<i1>\n      stablehlo.return %t : tensor<i1>",
                "      stablehlo.return %h2, %i2 : tensor<2xf32>, tensor<i64>"),
       "loop.mlir:8:10: the body of stablehlo.while returns tensor<2xf32> as value #0, which the loop carries as "
       "tensor<i64>"},
      {LoopWith("      %c = stablehlo.constant dense<1> : tensor<i64>\n      stablehlo.return %c : tensor<i64>",
                ok_return),
       "loop.mlir:5:10: the condition of stablehlo.while must return one tensor<i1>"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Module> m = ParseModule(c.text, "loop.mlir");
    if (c.message.empty()) {
      EXPECT_TRUE(m.ok()) << m.status() << "\n" << c.text;
      continue;
    }
    ASSERT_FALSE(m.ok()) << c.text;
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(m.status().message()), HasSubstr(c.message)) << c.text;
  }
  // Copies of a body with a big constant (a 256 MiB splat): bounded together.
  absl::StatusOr<Module> big = ParseModule(
      LoopWith("      %t = stablehlo.constant dense<true> : tensor<i1>\n      stablehlo.return %t : tensor<i1>",
               "      %big = stablehlo.constant dense<1.0> : tensor<67108864xf32>\n" + ok_return),
      "loop.mlir");
  ASSERT_FALSE(big.ok());
  EXPECT_THAT(std::string(big.status().message()),
              HasSubstr("loop.mlir:4:5: unrolling stablehlo.while copies more than 1073741824 bytes of constants"));
  // Results named one by one are read for stablehlo.while only.
  absl::StatusOr<Module> m = ParseModule(R"(module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %a, %b = stablehlo.add %x, %x : tensor<2xf32>
    return %a : tensor<2xf32>
  }
})",
                                         "t.mlir");
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()),
              HasSubstr("t.mlir:3:7: results named one by one (%a, %b, ...) are read for stablehlo.while only"));
}

}  // namespace
}  // namespace pcp
