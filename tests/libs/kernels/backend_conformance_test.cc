// One suite, parameterised over (case x backend): each case is a small function about one
// op, run on seeded random inputs by the backend and by the reference interpreter, compared
// at the case's stated tolerance (after ggml's test-backend-ops and IREE's CTS). Shapes
// cover ranks 0-4, sizes 1, 3, 17, 129 and block-crossing sizes, broadcasts, views and
// unusual dot_general dimension numbers. A last test demands a case for every op.
#include <cstdio>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "conformance_cases.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/general_indexing.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/passes.h"
#include "pcp/testing/tensor_testing.h"
#include "test_backends.h"

namespace pcp {
namespace {

using ::pcp::testing::RandomTensor;
using ::pcp::testing::TensorsNear;
using ::pcp::testing::TestBackends;

using conformance::Case;
using conformance::F32;
using conformance::Range;
using conformance::Short;

const std::vector<Case>& AllCases() {
  static const auto* cases = [] {
    auto* all = new std::vector<Case>(conformance::ElementwiseCases());
    for (auto* more :
         {new std::vector<Case>(conformance::LayoutCases()), new std::vector<Case>(conformance::ComputeCases()),
          new std::vector<Case>(conformance::AttentionCases())}) {
      all->insert(all->end(), more->begin(), more->end());
      delete more;
    }
    return all;
  }();
  return *cases;
}

absl::StatusOr<Function> BuildCase(const Case& c) {
  FunctionBuilder b(c.name);
  std::vector<ValueId> params;
  for (const TensorType& t : c.params) params.push_back(b.Parameter(t));
  b.Return({c.body(b, params)});
  return b.Build();
}

class ConformanceTest : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(ConformanceTest, MatchesInterpreter) {
  const Case& c = AllCases()[std::get<0>(GetParam())];
  const auto& tb = TestBackends()[std::get<1>(GetParam())];
  absl::StatusOr<std::unique_ptr<Backend>> backend = tb.create();
  if (!backend.ok()) GTEST_SKIP() << tb.name << " unavailable: " << backend.status();
  absl::StatusOr<Function> f = BuildCase(c);
  ASSERT_TRUE(f.ok()) << f.status();
  std::vector<Tensor> args;
  for (size_t i = 0; i < c.params.size(); ++i) {
    const Range r = i < c.ranges.size() ? c.ranges[i] : Range{};
    args.push_back(RandomTensor(c.params[i], 1000 + i, r.lo, r.hi));
  }
  absl::StatusOr<std::vector<Tensor>> expected = Interpret(*f, args);
  ASSERT_TRUE(expected.ok()) << expected.status();

  absl::StatusOr<std::unique_ptr<Executable>> exe = (*backend)->Compile(*f);
  ASSERT_TRUE(exe.ok()) << exe.status();
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<Buffer*> arg_buffers, result_buffers;
  for (const Tensor& a : args) {
    absl::StatusOr<std::unique_ptr<Buffer>> buf = (*backend)->Allocate({a.dtype(), a.shape()});
    ASSERT_TRUE(buf.ok()) << buf.status();
    ASSERT_TRUE((*backend)->CopyIn(a, **buf).ok());
    arg_buffers.push_back(buf->get());
    owned.push_back(*std::move(buf));
  }
  for (ValueId r : f->results) {
    absl::StatusOr<std::unique_ptr<Buffer>> buf = (*backend)->Allocate(f->type(r));
    ASSERT_TRUE(buf.ok()) << buf.status();
    result_buffers.push_back(buf->get());
    owned.push_back(*std::move(buf));
  }
  // Twice: the second run must not depend on what the first left in the arena.
  for (int run = 0; run < 2; ++run) {
    absl::Status s = (*exe)->Run(arg_buffers, result_buffers);
    ASSERT_TRUE(s.ok()) << s;
    for (size_t i = 0; i < result_buffers.size(); ++i) {
      absl::StatusOr<Tensor> actual = (*backend)->CopyOut(*result_buffers[i]);
      ASSERT_TRUE(actual.ok()) << actual.status();
      EXPECT_TRUE(TensorsNear(*actual, (*expected)[i], c.rtol, c.atol)) << "result " << i << ", run " << run;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, ConformanceTest,
                         ::testing::Combine(::testing::Range(0, static_cast<int>(AllCases().size())),
                                            ::testing::Range(0, static_cast<int>(TestBackends().size()))),
                         [](const ::testing::TestParamInfo<std::tuple<int, int>>& info) {
                           return absl::StrCat(AllCases()[std::get<0>(info.param)].name, "_",
                                               TestBackends()[std::get<1>(info.param)].name);
                         });

TEST(ConformanceCoverageTest, EveryOpHasACase) {
  std::set<Op> covered;
  for (const Case& c : AllCases()) {
    // The case's function must really contain its op.
    absl::StatusOr<Function> f = BuildCase(c);
    ASSERT_TRUE(f.ok()) << c.name << ": " << f.status();
    bool found = false;
    for (const Instruction& inst : f->instructions) found |= inst.op == c.op;
    EXPECT_TRUE(found) << c.name << " does not contain " << OpName(c.op);
    covered.insert(c.op);
  }
  for (int i = 0; i < kNumOps; ++i) {
    EXPECT_TRUE(covered.count(AllOps()[i]) > 0) << "no conformance case for " << OpName(AllOps()[i]);
  }
}

// f64 never reaches a backend (passes.h's policy): each rejects it by name, and runs the
// function once LowerF64ToF32 has retyped it.
TEST(BackendF64Test, RejectsF64AndRunsItLowered) {
  FunctionBuilder b("f64");
  ValueId x = b.Parameter(F32({5}));
  ValueId wide = b.Convert(x, DType::kF64);
  b.Return({b.Convert(b.Mul(wide, b.Full(0.5, TensorType{DType::kF64, {5}})), DType::kF32)});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  Function lowered = *f;
  absl::StatusOr<int> n = LowerF64ToF32(lowered);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_GT(*n, 0);
  for (const auto& tb : TestBackends()) {
    absl::StatusOr<std::unique_ptr<Backend>> backend = tb.create();
    if (!backend.ok()) {
      std::printf("%s unavailable, not checked: %s\n", tb.name.c_str(),
                  std::string(backend.status().message()).c_str());
      continue;
    }
    absl::StatusOr<std::unique_ptr<Executable>> exe = (*backend)->Compile(*f);
    ASSERT_FALSE(exe.ok()) << tb.name;
    EXPECT_NE(exe.status().message().find("f64"), absl::string_view::npos) << exe.status();
    EXPECT_NE(exe.status().message().find("LowerF64ToF32"), absl::string_view::npos) << exe.status();
    exe = (*backend)->Compile(lowered);
    EXPECT_TRUE(exe.ok()) << tb.name << ": " << exe.status();
  }
}

TEST(ConformanceCoverageTest, CaseNamesAreUnique) {
  std::set<std::string> names;
  for (const Case& c : AllCases()) EXPECT_TRUE(names.insert(c.name).second) << c.name;
}

}  // namespace
}  // namespace pcp
