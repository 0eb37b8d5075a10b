// StableHLO's general gather and scatter (general_indexing.h) against a transcription of the
// spec's semantics, element by element: the spec's own examples, every field of the dimension
// numbers, clamped and skipped out-of-range starts, i32 and i64 indices; then the VJPs of the
// emitted functions against central differences, and the forms that must stay cheap.
#include "pcp/autodiff/general_indexing.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/vjp.h"
#include "pcp/testing/tensor_testing.h"

namespace pcp {
namespace {

using ::pcp::testing::RandomTensor;
using ::pcp::testing::TensorsNear;
using Dims = std::vector<int64_t>;

bool Has(const Dims& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// Row-major offset of `index` in `shape`.
int64_t Offset(const Shape& shape, const Dims& index) {
  int64_t o = 0;
  for (size_t d = 0; d < shape.size(); ++d) o = o * shape[d] + index[d];
  return o;
}

// Calls f(index) for every index of `shape`, in row-major order.
void ForEachIndex(const Shape& shape, const std::function<void(const Dims&)>& f) {
  if (NumElements(shape) == 0) return;
  Dims index(shape.size(), 0);
  while (true) {
    f(index);
    int64_t d = static_cast<int64_t>(shape.size()) - 1;
    while (d >= 0 && ++index[d] == shape[d]) index[d--] = 0;
    if (d < 0) return;
  }
}

int64_t LoadIndex(const Tensor& t, int64_t offset) {
  return t.dtype() == DType::kI32 ? t.data<int32_t>()[offset] : t.data<int64_t>()[offset];
}

// The start index vector of the batch element `batch_index` (indices' dims without ivd).
Dims StartVector(const Tensor& indices, int64_t ivd, const Dims& batch_index) {
  Dims at = batch_index;
  const int64_t rank = static_cast<int64_t>(indices.shape().size());
  if (ivd == rank) return {LoadIndex(indices, Offset(indices.shape(), at))};
  at.insert(at.begin() + ivd, 0);
  Dims v;
  for (int64_t k = 0; k < indices.shape()[ivd]; ++k) {
    at[ivd] = k;
    v.push_back(LoadIndex(indices, Offset(indices.shape(), at)));
  }
  return v;
}

// The spec's gather, as written there: result[i] = operand[full_start + full_batching + full_offset].
Tensor SpecGather(const Tensor& operand, const Tensor& indices, const GatherDimensionNumbers& d, const Dims& sizes,
                  const Shape& result_shape) {
  Tensor result(DType::kF32, result_shape);
  const Shape& os = operand.shape();
  const int64_t r = static_cast<int64_t>(os.size());
  ForEachIndex(result_shape, [&](const Dims& ri) {
    Dims batch_index, offset_index;
    for (size_t i = 0; i < ri.size(); ++i)
      (Has(d.offset_dims, static_cast<int64_t>(i)) ? offset_index : batch_index).push_back(ri[i]);
    Dims start = StartVector(indices, d.index_vector_dim, batch_index);
    Dims operand_index(static_cast<size_t>(r), 0);
    for (size_t k = 0; k < d.start_index_map.size(); ++k) {
      const int64_t od = d.start_index_map[k];
      operand_index[od] = std::clamp<int64_t>(start[k], 0, os[od] - sizes[od]);
    }
    for (size_t j = 0; j < d.operand_batching_dims.size(); ++j) {
      const int64_t sd = d.start_indices_batching_dims[j];
      operand_index[d.operand_batching_dims[j]] = batch_index[sd - (sd < d.index_vector_dim ? 0 : 1)];
    }
    size_t next = 0;
    for (int64_t od = 0; od < r; ++od) {
      if (!Has(d.collapsed_slice_dims, od) && !Has(d.operand_batching_dims, od))
        operand_index[od] += offset_index[next++];
    }
    result.data<float>()[Offset(result_shape, ri)] = operand.data<float>()[Offset(os, operand_index)];
  });
  return result;
}

// The spec's scatter as its reference interpreter runs it: an element outside the operand is
// skipped. `assign` replaces instead of adding (the cases have no duplicate targets then).
Tensor SpecScatter(const Tensor& operand, const Tensor& indices, const Tensor& updates,
                   const ScatterDimensionNumbers& d, bool assign) {
  Tensor result = operand.Clone();
  const Shape& os = operand.shape();
  const int64_t r = static_cast<int64_t>(os.size());
  ForEachIndex(updates.shape(), [&](const Dims& ui) {
    Dims batch_index, window_index;
    for (size_t i = 0; i < ui.size(); ++i) {
      (Has(d.update_window_dims, static_cast<int64_t>(i)) ? window_index : batch_index).push_back(ui[i]);
    }
    Dims start = StartVector(indices, d.index_vector_dim, batch_index);
    Dims index(static_cast<size_t>(r), 0);
    for (size_t k = 0; k < d.scatter_dims_to_operand_dims.size(); ++k)
      index[d.scatter_dims_to_operand_dims[k]] = start[k];
    for (size_t j = 0; j < d.input_batching_dims.size(); ++j) {
      const int64_t sd = d.scatter_indices_batching_dims[j];
      index[d.input_batching_dims[j]] = batch_index[sd - (sd < d.index_vector_dim ? 0 : 1)];
    }
    size_t next = 0;
    for (int64_t od = 0; od < r; ++od) {
      if (!Has(d.inserted_window_dims, od) && !Has(d.input_batching_dims, od)) index[od] += window_index[next++];
    }
    for (int64_t od = 0; od < r; ++od) {
      if (index[od] < 0 || index[od] >= os[od]) return;
    }
    float& out = result.data<float>()[Offset(os, index)];
    const float u = updates.data<float>()[Offset(updates.shape(), ui)];
    out = assign ? u : out + u;
  });
  return result;
}

struct GatherCase {
  std::string name;
  Shape operand;
  Tensor indices;
  GatherDimensionNumbers dims;
  Dims slice_sizes;
  Shape result;  // as the spec gives it
};
void PrintTo(const GatherCase& c, std::ostream* os) { *os << c.name; }

Tensor I64(Shape s, std::vector<int64_t> v) { return Tensor::FromVector<int64_t>(std::move(s), v); }
Tensor I32(Shape s, std::vector<int32_t> v) { return Tensor::FromVector<int32_t>(std::move(s), v); }

std::vector<GatherCase> GatherCases() {
  std::vector<GatherCase> c;
  // The spec's example (batching dims, a two-component index vector in reverse order, windows).
  c.push_back({"spec_example",
               {2, 3, 4, 2},
               I64({2, 2, 3, 2}, {0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 0, 9, 0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 0, 9}),
               {{3, 4}, {1}, {0}, {1}, {2, 1}, 3},
               {1, 1, 2, 2},
               {2, 2, 3, 2, 2}});
  // The row form (an embedding): one gather instruction.
  c.push_back({"rows", {5, 3}, I32({2, 2}, {4, 0, 7, -2}), {{2}, {0}, {}, {}, {0}, 2}, {1, 3}, {2, 2, 3}});
  // torch-mlir's cross-entropy target pick: logits[n, target[n]], indices [N, 1, 2].
  c.push_back({"point_pick",
               {4, 6},
               I64({4, 1, 2}, {0, 5, 1, 0, 2, 3, 3, 9}),
               {{}, {0, 1}, {}, {}, {0, 1}, 2},
               {1, 1},
               {4, 1}});
  // A column gather (indexed dim 1, the rows kept whole), index_vector_dim in front.
  c.push_back({"columns", {4, 5}, I32({1, 3}, {4, 0, 2}), {{0}, {1}, {}, {}, {1}, 0}, {4, 1}, {4, 3}});
  // Windows on an indexed dimension, starts clamped so the window stays inside (dynamic_slice).
  c.push_back({"window_clamped", {6, 4}, I32({3, 1}, {-3, 2, 5}), {{1, 2}, {}, {}, {}, {0}, 1}, {3, 2}, {3, 3, 2}});
  // Two indexed dims with windows, a free dim sliced, result dims interleaved with the batch.
  c.push_back(
      {"interleaved", {5, 4, 3}, I64({2, 2}, {1, 2, 4, -1}), {{0, 2}, {1}, {}, {}, {1, 0}, 1}, {2, 1, 2}, {2, 2, 2}});
  // Index vectors of one component with index_vector_dim == rank, collapsed window on dim 0
  // of a rank-3 operand, the middle dimension sliced.
  c.push_back(
      {"scalar_vectors_sliced", {3, 4, 2}, I64({2}, {2, 1}), {{1, 2}, {0}, {}, {}, {0}, 1}, {1, 3, 2}, {2, 3, 2}});
  // No indexed dimension at all: the same slice for every index vector.
  c.push_back({"no_index", {3, 4}, I32({2, 0}, {}), {{1, 2}, {}, {}, {}, {}, 1}, {2, 2}, {2, 2, 2}});
  return c;
}

class GatherSpecTest : public ::testing::TestWithParam<GatherCase> {};

TEST_P(GatherSpecTest, MatchesTheSpec) {
  const GatherCase& c = GetParam();
  absl::StatusOr<TensorType> type =
      GatherResultType({DType::kF32, c.operand}, {c.indices.dtype(), c.indices.shape()}, c.dims, c.slice_sizes);
  ASSERT_TRUE(type.ok()) << type.status();
  ASSERT_EQ(type->shape, c.result);
  FunctionBuilder b("gather");
  ValueId x = b.Parameter({DType::kF32, c.operand}, "x");
  ValueId i = b.Parameter({c.indices.dtype(), c.indices.shape()}, "i");
  b.Return({EmitGather(b, x, i, c.dims, c.slice_sizes)});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  Tensor operand = RandomTensor({DType::kF32, c.operand}, 7);
  absl::StatusOr<std::vector<Tensor>> out = Interpret(*f, {operand, c.indices});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsNear((*out)[0], SpecGather(operand, c.indices, c.dims, c.slice_sizes, c.result), 0, 0));
}

INSTANTIATE_TEST_SUITE_P(Forms, GatherSpecTest, ::testing::ValuesIn(GatherCases()),
                         [](const ::testing::TestParamInfo<GatherCase>& info) { return info.param.name; });

struct ScatterCase {
  std::string name;
  Shape operand;
  Tensor indices;
  Shape updates;
  ScatterDimensionNumbers dims;
  bool assign = false;
};
void PrintTo(const ScatterCase& c, std::ostream* os) { *os << c.name; }

std::vector<ScatterCase> ScatterCases() {
  std::vector<ScatterCase> c;
  const Tensor spec_indices =
      I64({2, 2, 3, 2}, {0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 0, 9, 0, 0, 2, 1, 2, 2, 1, 2, 0, 1, 1, 0});
  // The spec's example: batching dims, windows, one index vector (0, 9) partly outside.
  c.push_back({"spec_example", {2, 3, 4, 2}, spec_indices, {2, 2, 3, 2, 2}, {{3, 4}, {1}, {0}, {1}, {2, 1}, 3}});
  c.push_back({"spec_example_assign",
               {2, 3, 4, 2},
               I64({2, 2, 3, 2}, {0, 0, 1, 0, 2, 0, 0, 1, 1, 1, 0, 9, 2, 1, 0, 2, 2, 2, 1, 2, 3, 0, 1, 0}),
               {2, 2, 3, 1, 1},
               {{3, 4}, {1}, {0}, {1}, {2, 1}, 3},
               true});
  // The row form: repeated rows add up, rows outside are skipped.
  c.push_back({"rows", {5, 3}, I32({4}, {4, 0, 4, 7}), {4, 3}, {{1}, {0}, {}, {}, {0}, 1}});
  // The point form (cross-entropy's gradient written as a scatter): [N, 2] indices.
  c.push_back({"points", {4, 6}, I64({3, 2}, {0, 5, 3, 0, 3, 0}), {3}, {{}, {0, 1}, {}, {}, {0, 1}, 1}});
  // Windows on an indexed dim (dynamic_update_slice-like), partly outside.
  c.push_back({"windows", {6, 4}, I32({3, 1}, {-1, 2, 5}), {3, 2, 4}, {{1, 2}, {}, {}, {}, {0}, 1}});
  // A window narrower than a non-indexed dimension, index_vector_dim in front.
  c.push_back({"narrow_free_window", {4, 5}, I32({1, 2}, {3, 1}), {2, 2}, {{0}, {1}, {}, {}, {1}, 0}});
  c.push_back({"columns_assign", {4, 5}, I32({1, 2}, {3, 1}), {4, 2}, {{0}, {1}, {}, {}, {1}, 0}, true});
  return c;
}

class ScatterSpecTest : public ::testing::TestWithParam<ScatterCase> {};

TEST_P(ScatterSpecTest, MatchesTheSpec) {
  const ScatterCase& c = GetParam();
  const TensorType ot{DType::kF32, c.operand}, ut{DType::kF32, c.updates};
  ASSERT_TRUE(CheckScatter(ot, {c.indices.dtype(), c.indices.shape()}, ut, c.dims).ok());
  FunctionBuilder b("scatter");
  ValueId x = b.Parameter(ot, "x");
  ValueId i = b.Parameter({c.indices.dtype(), c.indices.shape()}, "i");
  ValueId u = b.Parameter(ut, "u");
  b.Return({EmitScatter(b, x, i, u, c.dims, c.assign ? ScatterCombiner::kAssign : ScatterCombiner::kAdd)});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  Tensor operand = RandomTensor(ot, 3), updates = RandomTensor(ut, 4);
  absl::StatusOr<std::vector<Tensor>> out = Interpret(*f, {operand, c.indices, updates});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(TensorsNear((*out)[0], SpecScatter(operand, c.indices, updates, c.dims, c.assign), 1e-6, 1e-6));
}

INSTANTIATE_TEST_SUITE_P(Forms, ScatterSpecTest, ::testing::ValuesIn(ScatterCases()),
                         [](const ::testing::TestParamInfo<ScatterCase>& info) { return info.param.name; });

// d loss / d float params of loss = sum(f(params) * weights), by the VJP rules and by central
// differences; gather and scatter are linear in their floats, so a large step is exact.
void ExpectGradientsMatchFd(const std::function<ValueId(FunctionBuilder&, const std::vector<ValueId>&)>& body,
                            const std::vector<Tensor>& args) {
  FunctionBuilder b("loss");
  std::vector<ValueId> params;
  std::vector<int> wrt;
  for (size_t k = 0; k < args.size(); ++k) {
    params.push_back(b.Parameter({args[k].dtype(), args[k].shape()}, absl::StrCat("p", k)));
    if (args[k].dtype() == DType::kF32) wrt.push_back(static_cast<int>(k));
  }
  ValueId y = body(b, params);
  const TensorType yt = b.type(y);
  Dims all(static_cast<size_t>(yt.rank()));
  std::iota(all.begin(), all.end(), 0);
  b.Return({b.ReduceSum(b.Mul(y, b.Constant(RandomTensor(yt, 99))), all)});
  absl::StatusOr<Function> loss = b.Build();
  ASSERT_TRUE(loss.ok()) << loss.status();
  absl::StatusOr<Function> grad = BuildGradientFunction(*loss, wrt);
  ASSERT_TRUE(grad.ok()) << grad.status();
  absl::StatusOr<std::vector<Tensor>> ad = Interpret(*grad, args);
  ASSERT_TRUE(ad.ok()) << ad.status();
  auto value = [&](const std::vector<Tensor>& a) {
    return static_cast<double>((*Interpret(*loss, a))[0].data<float>()[0]);
  };
  constexpr double kStep = 0.125;
  for (size_t k = 0; k < wrt.size(); ++k) {
    const int p = wrt[k];
    Tensor fd(DType::kF32, args[p].shape());
    for (int64_t e = 0; e < fd.num_elements(); ++e) {
      std::vector<Tensor> plus = args, minus = args;
      plus[p] = args[p].Clone();
      minus[p] = args[p].Clone();
      plus[p].data<float>()[e] += static_cast<float>(kStep);
      minus[p].data<float>()[e] -= static_cast<float>(kStep);
      fd.data<float>()[e] = static_cast<float>((value(plus) - value(minus)) / (2 * kStep));
    }
    EXPECT_TRUE(TensorsNear((*ad)[1 + k], fd, 1e-4, 1e-5)) << "gradient of p" << p;
  }
}

TEST(GeneralIndexingVjpTest, GatherFormsMatchCentralDifferences) {
  for (const GatherCase& c : GatherCases()) {
    SCOPED_TRACE(c.name);
    ExpectGradientsMatchFd(
        [&](FunctionBuilder& b, const std::vector<ValueId>& p) {
          return EmitGather(b, p[0], p[1], c.dims, c.slice_sizes);
        },
        {RandomTensor({DType::kF32, c.operand}, 5), c.indices});
  }
}

TEST(GeneralIndexingVjpTest, ScatterFormsMatchCentralDifferences) {
  for (const ScatterCase& c : ScatterCases()) {
    SCOPED_TRACE(c.name);
    const ScatterCombiner combiner = c.assign ? ScatterCombiner::kAssign : ScatterCombiner::kAdd;
    ExpectGradientsMatchFd(
        [&](FunctionBuilder& b, const std::vector<ValueId>& p) {
          return EmitScatter(b, p[0], p[1], p[2], c.dims, combiner);
        },
        {RandomTensor({DType::kF32, c.operand}, 5), c.indices, RandomTensor({DType::kF32, c.updates}, 6)});
  }
}

// The ops a form is emitted as.
std::vector<Op> EmittedOps(const GatherCase& c) {
  FunctionBuilder b("f");
  ValueId x = b.Parameter({DType::kF32, c.operand});
  ValueId i = b.Parameter({c.indices.dtype(), c.indices.shape()});
  b.Return({EmitGather(b, x, i, c.dims, c.slice_sizes)});
  std::vector<Op> ops;
  for (const Instruction& inst : b.function().instructions) ops.push_back(inst.op);
  return ops;
}

TEST(GeneralIndexingTest, RowFormIsOneGather) {
  for (const GatherCase& c : GatherCases()) {
    if (c.name == "rows") EXPECT_EQ(EmittedOps(c), std::vector<Op>{Op::kGather});
  }
}

TEST(GeneralIndexingTest, PointPickIsOneGatherOfScalars) {
  for (const GatherCase& c : GatherCases()) {
    if (c.name != "point_pick") continue;
    std::vector<Op> ops = EmittedOps(c);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), Op::kGather), 1);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), Op::kTranspose), 0);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), Op::kDotGeneral), 0);
  }
}

TEST(GeneralIndexingTest, ErrorsNameTheField) {
  const TensorType operand{DType::kF32, {4, 5}}, indices{DType::kI32, {3, 1}};
  struct Bad {
    GatherDimensionNumbers dims;
    Dims sizes;
    std::string message;
  };
  const std::vector<Bad> bad = {
      {{{1}, {0}, {}, {}, {0}, 3}, {1, 5}, "index_vector_dim = 3 is outside [0, 2]"},
      {{{1}, {0}, {}, {}, {0, 1}, 1}, {1, 5}, "start_index_map = [0, 1] maps 2 components"},
      {{{1}, {0}, {}, {}, {0}, 1}, {1, 6}, "slice_sizes = [1, 6]: 6 does not fit dimension 1"},
      {{{1}, {0}, {}, {}, {0}, 1}, {2, 5}, "slice_sizes[0] = 2: a collapsed or batching dimension's slice must be 1"},
      {{{0, 1}, {0}, {}, {}, {0}, 1}, {1, 5}, "offset_dims = [0, 1] must"},
      {{{1}, {0, 0}, {}, {}, {0}, 1}, {1, 5}, "collapsed_slice_dims = [0, 0] names 0 twice"},
  };
  for (const Bad& c : bad) {
    absl::StatusOr<TensorType> t = GatherResultType(operand, indices, c.dims, c.sizes);
    ASSERT_FALSE(t.ok()) << c.message;
    EXPECT_NE(t.status().message().find(c.message), absl::string_view::npos) << t.status();
  }
  absl::Status s = CheckScatter(operand, indices, {DType::kF32, {3, 6}}, {{1}, {0}, {}, {}, {0}, 1});
  EXPECT_NE(s.message().find("updates dimension 1 (6) is a window on operand dimension 1"), absl::string_view::npos)
      << s;
}

}  // namespace
}  // namespace pcp
