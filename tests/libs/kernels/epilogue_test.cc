// The CPU backend's epilogues (CpuBackendOptions::epilogues, DotKernel::SetEpilogue): which
// loop kernels run inside the product kernel whose output they read, and that they give the
// loops' own bits for every thread count.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "cpu_run.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/kernels/cpu_backend.h"
#include "pcp/testing/tensor_testing.h"

namespace pcp {
namespace {

using ::pcp::testing::CountOf;
using ::pcp::testing::CpuRun;
using ::pcp::testing::RandomTensor;
using ::pcp::testing::RunOnCpu;
using ::pcp::testing::TensorsNear;

TensorType F32(Shape s) { return {DType::kF32, std::move(s)}; }

// A loop kernel that reads a product's output element by element runs over each of the
// product's row blocks right after its sgemm call, inside the product's kernel (an epilogue):
// one kernel less, and the same bits as the loop alone (CpuBackendOptions::epilogues = false)
// for every thread count. Where it must not apply (the loop reduces across rows, reads the
// product transposed, needs a value computed after the product, or the product's blocks are
// not whole blocks of the loop), the loop stays a kernel of its own.
TEST(CpuEpilogueTest, LoopsAfterAProductRunOverItsBlocks) {
  struct Case {
    const char* name;
    int epilogues;  // expected
    std::function<Function()> build;
    std::vector<Shape> params;
  };
  auto gelu = [](FunctionBuilder& b, ValueId x) {  // x * (1 + erf(x / sqrt 2)) / 2
    return b.BMul(b.Mul(x, b.BAdd(b.Erf(b.BMul(x, b.ScalarConstant(0.7071067811865476))), b.ScalarConstant(1.0))),
                  b.ScalarConstant(0.5));
  };
  auto row_softmax = [](FunctionBuilder& b, ValueId x) {
    const Shape s = b.type(x).shape;
    const int64_t last = static_cast<int64_t>(s.size()) - 1;
    std::vector<int64_t> keep;
    for (int64_t d = 0; d < last; ++d) keep.push_back(d);
    ValueId e = b.Exp(b.Sub(x, b.BroadcastInDim(b.ReduceMax(x, {last}), s, keep)));
    return b.Div(e, b.BroadcastInDim(b.ReduceSum(e, {last}), s, keep));
  };
  auto build = [](const char* name, const std::vector<Shape>& params,
                  const std::function<std::vector<ValueId>(FunctionBuilder&, const std::vector<ValueId>&)>& body) {
    FunctionBuilder b(name);
    std::vector<ValueId> p;
    for (const Shape& s : params) p.push_back(b.Parameter(F32(s)));
    b.Return(body(b, p));
    absl::StatusOr<Function> f = b.Build();
    EXPECT_TRUE(f.ok()) << name << ": " << f.status();
    return f.ok() ? *std::move(f) : Function();
  };
  std::vector<Case> cases;
  auto add = [&](const char* name, int epilogues, std::vector<Shape> params,
                 std::function<std::vector<ValueId>(FunctionBuilder&, const std::vector<ValueId>&)> body) {
    cases.push_back({name, epilogues, [=] { return build(name, params, body); }, params});
  };
  // A linear layer and GELU: 768 rows in 4 blocks of 192, 96 loop blocks each.
  add("gelu", 1, {{768, 128}, {512, 128}, {512}}, [&](FunctionBuilder& b, const std::vector<ValueId>& p) {
    ValueId h = b.BAdd(b.DotGeneral(p[0], p[1], {{}, {}, {1}, {1}}), p[2]);
    return std::vector<ValueId>{gelu(b, h)};
  });
  // 300 rows: blocks of 160 and 140 rows of 64, the last loop block half full.
  add("odd_rows", 1, {{300, 96}, {96, 64}, {300, 64}}, [&](FunctionBuilder& b, const std::vector<ValueId>& p) {
    return std::vector<ValueId>{b.Tanh(b.Add(b.MatMul(p[0], p[1]), p[2]))};
  });
  // Attention's scores and their softmax, a row kernel (rows of 64, 8 per block), over 24
  // batch elements; the product is also a result.
  add("softmax", 1, {{24, 64, 32}, {24, 64, 32}}, [&](FunctionBuilder& b, const std::vector<ValueId>& p) {
    ValueId s = b.DotGeneral(p[0], p[1], {{0}, {0}, {2}, {2}});
    return std::vector<ValueId>{row_softmax(b, b.BMul(s, b.ScalarConstant(0.125))), s};
  });
  // The same with rows of 1024 (GPT-2's attention), one row per loop block, over 3 batch
  // elements of 1024 x 1024 scores.
  add("long_rows", 1, {{3, 1024, 16}, {3, 1024, 16}}, [&](FunctionBuilder& b, const std::vector<ValueId>& p) {
    ValueId s = b.DotGeneral(p[0], p[1], {{0}, {0}, {2}, {2}});
    return std::vector<ValueId>{row_softmax(b, b.BMul(s, b.ScalarConstant(0.25)))};
  });
  // A residual add and a LayerNorm-like row kernel; the residual input is a parameter.
  add("residual_rows", 1, {{768, 128}, {128, 128}, {768, 128}}, [&](FunctionBuilder& b, const std::vector<ValueId>& p) {
    ValueId x = b.Add(b.MatMul(p[0], p[1]), p[2]);
    ValueId mean = b.BMul(b.ReduceSum(x, {1}), b.ScalarConstant(1.0 / 128));
    ValueId d = b.Sub(x, b.BroadcastInDim(mean, {768, 128}, {0}));
    return std::vector<ValueId>{d, x};
  });
  // Not: the loop's result is stored and also summed over rows (GELU's gradient and the bias
  // gradient: splitting the sum off into a kernel of its own timed no faster, and its memory
  // plan took 1.25 MiB more in the GPT step).
  add("stored_and_summed", 0, {{768, 128}, {128, 256}}, [&](FunctionBuilder& b, const std::vector<ValueId>& p) {
    ValueId y = b.Tanh(b.MatMul(p[0], p[1]));
    return std::vector<ValueId>{b.ReduceSum(y, {0}), y};
  });
  // Not: the loop sums over rows (across the product's blocks), its terms not stored.
  add("column_sum", 0, {{768, 128}, {128, 256}}, [&](FunctionBuilder& b, const std::vector<ValueId>& p) {
    return std::vector<ValueId>{b.ReduceSum(b.Tanh(b.MatMul(p[0], p[1])), {0})};
  });
  // Not: the loop reads the product transposed too.
  add("transposed", 0, {{256, 64}, {64, 256}}, [&](FunctionBuilder& b, const std::vector<ValueId>& p) {
    ValueId y = b.MatMul(p[0], p[1]);
    return std::vector<ValueId>{b.Add(b.Tanh(y), b.Transpose(y, {1, 0}))};
  });
  // Not: the loop needs a value computed after the product (a reduction of the product over
  // its rows, which also reads the product in between).
  add("late_input", 0, {{768, 64}, {64, 96}}, [&](FunctionBuilder& b, const std::vector<ValueId>& p) {
    ValueId y = b.MatMul(p[0], p[1]);
    ValueId column_sums = b.ReduceSum(b.Mul(y, y), {0});
    return std::vector<ValueId>{b.Tanh(b.Add(y, b.BroadcastInDim(column_sums, {768, 96}, {1})))};
  });
  // Not: blocks of 192 rows of 65 are not whole blocks of 7 rows (a softmax over the lm head).
  add("unaligned_rows", 0, {{768, 128}, {65, 128}}, [&](FunctionBuilder& b, const std::vector<ValueId>& p) {
    return std::vector<ValueId>{row_softmax(b, b.DotGeneral(p[0], p[1], {{}, {}, {1}, {1}}))};
  });
  // Not: a product split into column blocks (48 rows, 777 columns).
  add("column_blocks", 0, {{48, 200}, {200, 777}}, [&](FunctionBuilder& b, const std::vector<ValueId>& p) {
    return std::vector<ValueId>{b.Exp(b.MatMul(p[0], p[1]))};
  });
  // Not: a product too small to split, followed by a loop large enough to.
  add("small_product", 0, {{512, 1}, {1, 200}}, [&](FunctionBuilder& b, const std::vector<ValueId>& p) {
    return std::vector<ValueId>{b.Tanh(b.Exp(b.MatMul(p[0], p[1])))};
  });
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Function f = c.build();
    std::vector<Tensor> args;
    for (size_t i = 0; i < c.params.size(); ++i) {
      args.push_back(RandomTensor(F32(c.params[i]), 11 + static_cast<int>(i)));
    }
    const CpuRun alone = RunOnCpu(f, args, {.threads = 1, .epilogues = false});
    absl::StatusOr<std::vector<Tensor>> expected = Interpret(f, args);
    ASSERT_TRUE(expected.ok()) << expected.status();
    ASSERT_EQ(alone.results.size(), expected->size());
    for (size_t i = 0; i < alone.results.size(); ++i) {
      EXPECT_TRUE(TensorsNear(alone.results[i], (*expected)[i], 1e-4, 1e-4)) << "result " << i;
    }
    CpuRun fused;
    for (int threads : {1, 2, 3}) {
      CpuRun got = RunOnCpu(f, args, {.threads = threads});
      ASSERT_EQ(got.results.size(), alone.results.size());
      for (size_t i = 0; i < got.results.size(); ++i) {
        EXPECT_TRUE(BitwiseEqual(got.results[i], alone.results[i])) << "result " << i << ", " << threads << " threads";
      }
      if (threads == 1) fused = std::move(got);
    }
    EXPECT_EQ(CountOf(fused.schedule, "+ epilogue"), c.epilogues) << fused.schedule;
    EXPECT_EQ(fused.kernels + c.epilogues, alone.kernels) << fused.schedule << "\nvs\n" << alone.schedule;
    EXPECT_TRUE(fused.memory_plan.ok()) << fused.memory_plan;
  }
}

}  // namespace
}  // namespace pcp
