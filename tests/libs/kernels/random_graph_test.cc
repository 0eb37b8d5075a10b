// Seeded random functions (elementwise chains, broadcasts of reductions back over their
// inputs, transposes, reshapes, slices, products, several results) on every test backend,
// against the reference interpreter. They exercise what single-op cases cannot: which ops
// share a kernel, what a kernel recomputes or stores, and results read by later kernels.
#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cpu_run.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/testing/tensor_testing.h"
#include "test_backends.h"

namespace pcp {
namespace {

using ::pcp::testing::RandomTensor;
using ::pcp::testing::TensorsNear;
using ::pcp::testing::TestBackends;

constexpr int kGraphs = 40;
constexpr int kOpsPerGraph = 30;

class GraphMaker {
 public:
  explicit GraphMaker(uint64_t seed) : seed_(seed), rng_(seed), b_("random") {}

  absl::StatusOr<Function> Make() {
    // Small shapes, and shapes that span several blocks and are split over threads.
    const Shape base =
        seed_ % 2 == 0 ? Shape{Pick(1, 4), Pick(2, 6), Pick(3, 40)} : Shape{Pick(1, 4), Pick(2, 16), Pick(3, 700)};
    values_.push_back(b_.Parameter({DType::kF32, base}, "x"));
    values_.push_back(b_.Parameter({DType::kF32, base}, "y"));
    values_.push_back(b_.Parameter({DType::kF32, {base[2]}}, "bias"));
    for (int i = 0; i < kOpsPerGraph; ++i) Step();
    // Results: the last value and a few random earlier ones.
    std::vector<ValueId> results = {values_.back()};
    for (int i = 0; i < 3; ++i) results.push_back(values_[Pick(3, static_cast<int64_t>(values_.size()) - 1)]);
    b_.Return(results);
    return b_.Build();
  }

 private:
  int64_t Pick(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  ValueId Any() { return values_[Pick(0, static_cast<int64_t>(values_.size()) - 1)]; }
  const Shape& ShapeOf(ValueId v) { return b_.type(v).shape; }
  // A value of `shape`, or `fallback` when there is none.
  ValueId WithShape(const Shape& shape, ValueId fallback) {
    std::vector<ValueId> same;
    for (ValueId v : values_) {
      if (ShapeOf(v) == shape) same.push_back(v);
    }
    return same.empty() ? fallback : same[Pick(0, static_cast<int64_t>(same.size()) - 1)];
  }

  void Step() {
    ValueId a = Any();
    const Shape shape = ShapeOf(a);
    const int64_t rank = static_cast<int64_t>(shape.size());
    ValueId out = kNoValue;
    switch (Pick(0, 10)) {
      case 0: out = b_.Tanh(a); break;
      case 1: out = b_.Exp(b_.Tanh(a)); break;
      case 2: out = b_.Emit(Pick(0, 1) ? Op::kLogistic : Op::kAbs, {a}); break;
      case 3: {
        const Op ops[] = {Op::kAdd, Op::kSubtract, Op::kMultiply, Op::kMaximum, Op::kMinimum};
        out = b_.Emit(ops[Pick(0, 4)], {a, WithShape(shape, a)});
        break;
      }
      case 4: {  // a reduction over some dimensions, broadcast back over its input
        if (rank == 0) break;
        std::vector<int64_t> dims, kept;
        for (int64_t d = 0; d < rank; ++d) (Pick(0, 1) ? dims : kept).push_back(d);
        ValueId r = Pick(0, 1) ? b_.ReduceSum(a, dims) : b_.ReduceMax(a, dims);
        out = Pick(0, 2) ? b_.Sub(a, b_.BroadcastInDim(r, shape, kept)) : r;
        break;
      }
      case 5: {  // transpose
        if (rank < 2) break;
        std::vector<int64_t> perm(static_cast<size_t>(rank));
        std::iota(perm.begin(), perm.end(), 0);
        std::shuffle(perm.begin(), perm.end(), rng_);
        out = b_.Transpose(a, perm);
        break;
      }
      case 6: {  // reshape: merge the two leading dimensions or split the first
        if (rank >= 2) {
          Shape s = {shape[0] * shape[1]};
          s.insert(s.end(), shape.begin() + 2, shape.end());
          out = b_.Tanh(b_.Reshape(a, s));
        }
        break;
      }
      case 7: {  // slice off the first element of the last dimension
        if (rank >= 1 && shape.back() > 1) {
          std::vector<int64_t> start(static_cast<size_t>(rank), 0), limit = shape;
          start.back() = 1;
          out = b_.Slice(a, start, limit);
        }
        break;
      }
      case 8: {  // a product contracting the last dimension with itself (a a^T per batch)
        if (rank >= 2) {
          std::vector<int64_t> batch;
          for (int64_t d = 0; d + 2 < rank; ++d) batch.push_back(d);
          out = b_.DotGeneral(a, a, {batch, batch, {rank - 1}, {rank - 1}});
        }
        break;
      }
      case 9: {  // select between two values by comparing them
        ValueId c = WithShape(shape, a);
        out = b_.Select(b_.Compare(a, c, ComparisonDirection::kGT), a, b_.Neg(c));
        break;
      }
      case 10: {  // bias add along the last dimension when it matches
        const ValueId bias = values_[2];
        if (rank >= 1 && shape.back() == ShapeOf(bias)[0]) {
          out = b_.Add(a, b_.BroadcastInDim(bias, shape, {rank - 1}));
        }
        break;
      }
    }
    if (out != kNoValue) values_.push_back(out);
  }

  uint64_t seed_;
  std::mt19937_64 rng_;
  FunctionBuilder b_;
  std::vector<ValueId> values_;
};

// Graph g's arguments: the same for every backend and test.
std::vector<Tensor> ArgsOf(const Function& f, int g) {
  std::vector<Tensor> args;
  for (size_t i = 0; i < f.params.size(); ++i) args.push_back(RandomTensor(f.type(f.params[i]), 10 * g + i));
  return args;
}

class RandomGraphTest : public ::testing::TestWithParam<int> {};

TEST_P(RandomGraphTest, MatchesInterpreter) {
  const auto& tb = TestBackends()[GetParam()];
  absl::StatusOr<std::unique_ptr<Backend>> backend = tb.create();
  if (!backend.ok()) GTEST_SKIP() << tb.name << " unavailable: " << backend.status();
  for (int g = 0; g < kGraphs; ++g) {
    SCOPED_TRACE(::testing::Message() << "graph " << g);
    absl::StatusOr<Function> f = GraphMaker(g).Make();
    ASSERT_TRUE(f.ok()) << f.status();
    const std::vector<Tensor> args = ArgsOf(*f, g);
    absl::StatusOr<std::vector<Tensor>> expected = Interpret(*f, args);
    ASSERT_TRUE(expected.ok()) << expected.status();
    absl::StatusOr<std::unique_ptr<Executable>> exe = (*backend)->Compile(*f);
    ASSERT_TRUE(exe.ok()) << exe.status();
    // Run 0: results in buffers of their own. Run 1: each result placed over an argument
    // of its type where there is one left (state updated in place), read as if all
    // arguments were read first.
    for (int run = 0; run < 2; ++run) {
      std::vector<std::unique_ptr<Buffer>> owned;
      std::vector<Buffer*> in, out;
      for (const Tensor& a : args) {
        owned.push_back(*(*backend)->Allocate({a.dtype(), a.shape()}));
        ASSERT_TRUE((*backend)->CopyIn(a, *owned.back()).ok());
        in.push_back(owned.back().get());
      }
      std::vector<bool> taken(in.size(), false);
      for (ValueId r : f->results) {
        Buffer* place = nullptr;
        for (size_t j = 0; j < in.size() && run == 1 && place == nullptr; ++j) {
          if (!taken[j] && in[j]->type() == f->type(r)) {
            taken[j] = true;
            place = in[j];
          }
        }
        if (place == nullptr) {
          owned.push_back(*(*backend)->Allocate(f->type(r)));
          place = owned.back().get();
        }
        out.push_back(place);
      }
      ASSERT_TRUE((*exe)->Run(in, out).ok());
      for (size_t i = 0; i < out.size(); ++i) {
        absl::StatusOr<Tensor> got = (*backend)->CopyOut(*out[i]);
        ASSERT_TRUE(got.ok());
        // Products of products reach 1e5 and cancel: the absolute tolerance follows the scale.
        double scale = 1.0;
        for (double x : ::pcp::testing::ToDoubles((*expected)[i])) scale = std::max(scale, std::abs(x));
        EXPECT_TRUE(TensorsNear(*got, (*expected)[i], 1e-4, 1e-5 * scale)) << "run " << run << ", result " << i;
      }
    }
  }
}

// The CPU backend's epilogues (a loop kernel run over a product's blocks inside the product's
// kernel, CpuBackendOptions::epilogues) give the loops' bits as kernels of their own do, for
// 1 and 2 threads; the graphs' products (x·xᵀ over the last dimension) feed loops often.
TEST(RandomGraphCpuTest, EpiloguesGiveTheSameBits) {
  int with_epilogues = 0;
  for (int g = 0; g < kGraphs; ++g) {
    SCOPED_TRACE(::testing::Message() << "graph " << g);
    absl::StatusOr<Function> f = GraphMaker(g).Make();
    ASSERT_TRUE(f.ok()) << f.status();
    const std::vector<Tensor> args = ArgsOf(*f, g);
    const ::pcp::testing::CpuRun alone = ::pcp::testing::RunOnCpu(*f, args, {.threads = 1, .epilogues = false});
    for (int threads : {1, 2}) {
      const ::pcp::testing::CpuRun run = ::pcp::testing::RunOnCpu(*f, args, {.threads = threads});
      EXPECT_TRUE(::pcp::testing::AllSameBitsOrBothNaN(run.results, alone.results)) << threads << " threads";
      if (threads == 1 && run.schedule.find("+ epilogue") != std::string::npos) ++with_epilogues;
    }
  }
  EXPECT_GT(with_epilogues, 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, RandomGraphTest, ::testing::Range(0, static_cast<int>(TestBackends().size())),
                         [](const ::testing::TestParamInfo<int>& info) { return TestBackends()[info.param].name; });

}  // namespace
}  // namespace pcp
