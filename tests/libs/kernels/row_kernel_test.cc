// The CPU backend's row kernels with per-row ops (CpuBackendOptions::row_values): LayerNorm's
// statistics (mean, variance, rstd: elementwise ops on row reductions' results) join the row
// kernel, so LayerNorm forward, and its gradient with its two row sums, are one kernel each.
// Results must be the same bits as with per-row ops in kernels of their own (NaN, ±inf and -0
// included), for rows of several lengths (not multiples of 16, longer than a block) and for
// any thread count; and near the interpreter's on finite inputs.
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "cpu_run.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/train_step.h"
#include "pcp/kernels/cpu_backend.h"
#include "pcp/models/gpt.h"
#include "pcp/testing/tensor_testing.h"
#include "row_functions.h"
#include "train_step_args.h"

namespace pcp {
namespace {

using ::pcp::testing::TensorsNear;

TensorType F32(Shape s) { return {DType::kF32, std::move(s)}; }

constexpr int64_t kB = ::pcp::testing::kRowsB, kT = ::pcp::testing::kRowsT;

using RunResult = ::pcp::testing::CpuRun;
using ::pcp::testing::AllSameBitsOrBothNaN;

RunResult CompileAndRun(const Function& f, const std::vector<Tensor>& args, bool row_values, int threads) {
  return ::pcp::testing::RunOnCpu(f, args, {.threads = threads, .row_values = row_values});
}

int CountRowKernels(const std::string& schedule) {
  static const std::regex kRows(" rows of [0-9]+ ");
  return static_cast<int>(
      std::distance(std::sregex_iterator(schedule.begin(), schedule.end(), kRows), std::sregex_iterator()));
}

Function LayerNormForward(int64_t c) {
  FunctionBuilder b("layer_norm");
  ::pcp::testing::AddLayerNormForward(b, c);
  return *b.Build();
}

Function LayerNormBackward(int64_t c) {
  FunctionBuilder b("layer_norm_grad");
  ::pcp::testing::AddLayerNormBackward(b, c);
  return *b.Build();
}

// Per-row ops with a per-row operand from memory (`scale`, [B, T]) and a per-row result of
// another type (a compare's i1), stored one per row and broadcast over the rows.
Function PerRowOperandsAndResults(int64_t c) {
  FunctionBuilder b("per_row");
  const Shape s = {kB, kT, c};
  ValueId x = b.Parameter(F32(s)), scale = b.Parameter(F32({kB, kT}));
  ValueId m = b.Mul(b.ReduceMax(x, {2}), scale);
  ValueId positive = b.Compare(m, b.Full(0.0, F32({kB, kT})), ComparisonDirection::kGT);
  ValueId y = b.Mul(x, b.BroadcastInDim(b.Select(positive, m, b.Neg(m)), s, {0, 1}));
  ValueId z = b.Select(b.BroadcastInDim(positive, s, {0, 1}), x, b.Neg(x));
  b.Return({y, positive, m, z});
  return *b.Build();
}

// With and without per-row ops in the row kernel: the same bits for 1, 2 and 3 threads; near
// the interpreter on finite inputs; one row kernel per function when rows fit a block.
void CheckRowKernel(const Function& f, int64_t c, int max_kernels) {
  for (bool special : {false, true}) {
    SCOPED_TRACE(special ? "special values" : "finite values");
    const std::vector<Tensor> args = ::pcp::testing::RowArgs(f, special);
    const RunResult reference = CompileAndRun(f, args, /*row_values=*/false, 1);
    if (!special) {
      absl::StatusOr<std::vector<Tensor>> want = Interpret(f, args);
      ASSERT_TRUE(want.ok()) << want.status();
      for (size_t i = 0; i < want->size(); ++i) {
        EXPECT_TRUE(TensorsNear(reference.results[i], (*want)[i], 1e-4, 1e-5)) << "result " << i;
      }
    }
    for (int threads : {1, 2, 3}) {
      const RunResult got = CompileAndRun(f, args, /*row_values=*/true, threads);
      EXPECT_TRUE(AllSameBitsOrBothNaN(got.results, reference.results)) << threads << " threads";
      if (c <= 4096) {  // kMaxRowLength: longer rows reduce in kernels of their own
        EXPECT_LE(got.kernels, max_kernels) << got.schedule;
        EXPECT_LT(got.kernels, reference.kernels) << got.schedule << "\nvs\n" << reference.schedule;
        EXPECT_EQ(CountRowKernels(got.schedule), got.kernels) << got.schedule;
      }
    }
  }
}

constexpr int64_t kRowLengths[] = {16, 32, 65, 128, 200, 512, 700, 1024, 5000};

TEST(RowKernelTest, LayerNormForwardIsOneRowKernel) {
  for (int64_t c : kRowLengths) {
    SCOPED_TRACE(::testing::Message() << "rows of " << c);
    CheckRowKernel(LayerNormForward(c), c, 1);
  }
}

TEST(RowKernelTest, LayerNormGradientIsOneRowKernel) {
  for (int64_t c : kRowLengths) {
    SCOPED_TRACE(::testing::Message() << "rows of " << c);
    CheckRowKernel(LayerNormBackward(c), c, 1);
  }
}

TEST(RowKernelTest, PerRowOperandsFromMemoryAndOtherResultTypes) {
  for (int64_t c : kRowLengths) {
    SCOPED_TRACE(::testing::Message() << "rows of " << c);
    CheckRowKernel(PerRowOperandsAndResults(c), c, 1);
  }
}

// The GPT train step: the same bits with and without per-row ops in row kernels, for one and
// two threads, in fewer kernels.
TEST(RowKernelTest, GptTrainStepIsBitwiseIdentical) {
  absl::StatusOr<::pcp::testing::GptTrainStep> s = ::pcp::testing::SmallGptTrainStep();
  ASSERT_TRUE(s.ok()) << s.status();
  for (int threads : {1, 2}) {
    const RunResult fused = CompileAndRun(s->step, s->args, true, threads);
    const RunResult separate = CompileAndRun(s->step, s->args, false, threads);
    EXPECT_TRUE(AllSameBitsOrBothNaN(fused.results, separate.results)) << threads << " threads";
    // Per LayerNorm 4 kernels fewer forward (5 -> 1), at least 3 backward.
    EXPECT_LE(fused.kernels, separate.kernels - 5 * 7) << fused.schedule;
  }
}

// A row reduction's order (fused_kernel.h: GetRowReduceFn; reduce kernels' trailing
// reductions): 16 lanes, lane j combining the values j, j + 16, j + 32, ... in turn, then
// lanes[j] = combine(lanes[j], lanes[j + w]) for w = 8, 4, 2, 1; a row longer than 512
// (kBlock) so in 512-long pieces, whose results are combined in turn from the identity; then
// combine(init, that). Max is IEEE 754-2019 maximum: NaN propagates (the second operand's NaN
// first) and +0 > -0.
float Combine(float a, float b, bool max) {
  if (!max) return a + b;
  if (std::isnan(b)) return b;
  if (std::isnan(a)) return a;
  if (a == b) return std::signbit(a) && std::signbit(b) ? a : std::fabs(a);
  return a > b ? a : b;
}

float Lanes(const float* x, int64_t n, bool max, float identity) {
  float lanes[16];
  for (float& l : lanes) l = identity;
  for (int64_t i = 0; i < n; ++i) lanes[i % 16] = Combine(lanes[i % 16], x[i], max);
  for (int w = 8; w >= 1; w /= 2) {
    for (int j = 0; j < w; ++j) lanes[j] = Combine(lanes[j], lanes[j + w], max);
  }
  return lanes[0];
}

float RowInOrder(const float* x, int64_t n, bool max) {
  constexpr int64_t kPiece = 512;
  const float identity = max ? -std::numeric_limits<float>::infinity() : 0.0f;  // = the init
  float row = identity;
  if (n <= kPiece) {
    row = Lanes(x, n, max, identity);
  } else {
    for (int64_t s = 0; s < n; s += kPiece) {
      row = Combine(row, Lanes(x + s, std::min(kPiece, n - s), max, identity), max);
    }
  }
  return Combine(identity, row, max);
}

// Row sums and maxima, as reduce kernels and inside row kernels (the max that a softmax
// subtracts, a sum subtracted), follow that order to the bit, for rows shorter than, equal to
// and longer than the 16 lanes and than a block, with NaN, ±inf, all -0 and mixed ±0 rows.
TEST(RowKernelTest, RowReductionsCombineInTheirDocumentedOrder) {
  for (int64_t c : {1, 3, 8, 15, 16, 17, 24, 33, 64, 65, 128, 200, 700, 1024, 1500}) {
    SCOPED_TRACE(::testing::Message() << "rows of " << c);
    const Shape s = {kB, kT, c};
    FunctionBuilder b("row_reductions");
    ValueId x = b.Parameter(F32(s));
    ValueId sum = b.ReduceSum(x, {2});
    ValueId max = b.ReduceMax(x, {2});
    ValueId shifted = b.Sub(x, b.BroadcastInDim(b.ReduceMax(x, {2}), s, {0, 1}));
    ValueId centred = b.Sub(x, b.BroadcastInDim(b.ReduceSum(x, {2}), s, {0, 1}));
    b.Return({sum, max, shifted, centred});
    absl::StatusOr<Function> f = b.Build();
    ASSERT_TRUE(f.ok()) << f.status();
    Tensor in = ::pcp::testing::RowInput(s, 5, /*special=*/true);
    float* p = in.data<float>();
    for (int64_t j = 0; j < c; ++j) p[8 * c + j] = j % 2 ? 0.0f : -0.0f;  // mixed zeros
    for (int64_t j = 0; j < c; ++j) p[9 * c + j] = -std::numeric_limits<float>::infinity();
    p[10 * c + c - 1] = std::numeric_limits<float>::quiet_NaN();  // NaN in the last lane used
    auto same = [](float got, float want) {
      return std::memcmp(&got, &want, sizeof got) == 0 || (std::isnan(got) && std::isnan(want));
    };
    for (int threads : {1, 2}) {
      const RunResult run = CompileAndRun(*f, {in}, /*row_values=*/true, threads);
      ASSERT_EQ(run.results.size(), 4u);
      for (int64_t r = 0; r < kB * kT; ++r) {
        const float* row = p + r * c;
        const float want_sum = RowInOrder(row, c, /*max=*/false), want_max = RowInOrder(row, c, /*max=*/true);
        const float got_sum = run.results[0].data<float>()[r], got_max = run.results[1].data<float>()[r];
        const float got_shifted = run.results[2].data<float>()[r * c];
        const float got_centred = run.results[3].data<float>()[r * c];
        EXPECT_TRUE(same(got_sum, want_sum)) << "row " << r << " sum " << got_sum << " want " << want_sum;
        EXPECT_TRUE(same(got_max, want_max)) << "row " << r << " max " << got_max << " want " << want_max;
        EXPECT_TRUE(same(got_shifted, row[0] - want_max)) << "row " << r << " x - max " << got_shifted;
        EXPECT_TRUE(same(got_centred, row[0] - want_sum)) << "row " << r << " x - sum " << got_centred;
      }
    }
  }
}

}  // namespace
}  // namespace pcp
