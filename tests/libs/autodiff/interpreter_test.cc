// The reference interpreter against hand-computed values: one table of cases, each about one
// op, and a test that demands every op of PCP_OP_LIST appears in the table.
#include "pcp/autodiff/interpreter.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pcp/autodiff/builder.h"
#include "pcp/testing/tensor_testing.h"

namespace pcp {
namespace {

using ::pcp::testing::TensorsNear;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr int32_t kI32Min = std::numeric_limits<int32_t>::min();
constexpr int32_t kI32Max = std::numeric_limits<int32_t>::max();

Tensor F32(Shape s, std::vector<float> v) { return Tensor::FromVector<float>(std::move(s), v); }
Tensor I32(Shape s, std::vector<int32_t> v) { return Tensor::FromVector<int32_t>(std::move(s), v); }
Tensor I64(Shape s, std::vector<int64_t> v) { return Tensor::FromVector<int64_t>(std::move(s), v); }
Tensor Bool(Shape s, std::vector<bool> v) { return Tensor::FromVector<bool>(std::move(s), v); }
std::vector<float> Range(int n) {
  std::vector<float> v;
  for (int i = 0; i < n; ++i) v.push_back(static_cast<float>(i));
  return v;
}

// Exact equality: same dtype, shape and bits (so -0 differs from +0), except that any NaN
// equals any NaN (libm's NaN signs and payloads are not specified).
::testing::AssertionResult Identical(const Tensor& actual, const Tensor& expected) {
  if (actual.dtype() == DType::kF32 && actual.shape() == expected.shape() && expected.dtype() == DType::kF32) {
    for (int64_t i = 0; i < actual.num_elements(); ++i) {
      float a = actual.data<float>()[i], e = expected.data<float>()[i];
      if (std::isnan(a) && std::isnan(e)) continue;
      if (std::memcmp(&a, &e, sizeof(float)) != 0) {
        return ::testing::AssertionFailure() << "element " << i << ": got " << a << ", expected " << e;
      }
    }
    return ::testing::AssertionSuccess();
  }
  if (BitwiseEqual(actual, expected)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << actual.TypeString() << " "
                                       << ::testing::PrintToString(pcp::testing::ToDoubles(actual)) << ", expected "
                                       << expected.TypeString() << " "
                                       << ::testing::PrintToString(pcp::testing::ToDoubles(expected));
}

// One function evaluated on `args`; `body` builds it from the parameters (one per arg).
struct Case {
  std::string name;
  Op op;  // the op this case is about (the coverage test checks the function contains it)
  std::vector<Tensor> args;
  std::function<ValueId(FunctionBuilder&, const std::vector<ValueId>&)> body;
  Tensor expected;
  double rtol = 0.0;  // 0: bitwise equality (NaNs compare by bits too)
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

absl::StatusOr<Function> BuildCase(const Case& c) {
  FunctionBuilder b(c.name);
  std::vector<ValueId> params;
  for (const Tensor& t : c.args) params.push_back(b.Parameter({t.dtype(), t.shape()}));
  b.Return({c.body(b, params)});
  return b.Build();
}

Case Binary(std::string name, Op op, Tensor x, Tensor y, Tensor expected, double rtol = 0.0) {
  return {std::move(name),
          op,
          {std::move(x), std::move(y)},
          [op](FunctionBuilder& b, const std::vector<ValueId>& p) {
            return b.Emit(op, {p[0], p[1]});
          },
          std::move(expected),
          rtol};
}

Case Unary(std::string name, Op op, Tensor x, Tensor expected, double rtol = 0.0) {
  return {std::move(name),     op,
          {std::move(x)},      [op](FunctionBuilder& b, const std::vector<ValueId>& p) { return b.Emit(op, {p[0]}); },
          std::move(expected), rtol};
}

Case CompareCase(std::string name, ComparisonDirection d, Tensor x, Tensor y, std::vector<bool> expected) {
  Shape s = x.shape();
  return {std::move(name),
          Op::kCompare,
          {std::move(x), std::move(y)},
          [d](FunctionBuilder& b, const std::vector<ValueId>& p) { return b.Compare(p[0], p[1], d); },
          Bool(s, expected)};
}

Case ConvertCase(std::string name, Tensor x, DType to, Tensor expected) {
  return {std::move(name),
          Op::kConvert,
          {std::move(x)},
          [to](FunctionBuilder& b, const std::vector<ValueId>& p) { return b.Convert(p[0], to); },
          std::move(expected)};
}

std::vector<Case> AllCases() {
  using P = const std::vector<ValueId>&;
  std::vector<Case> c;
  // Sources.
  c.push_back({"constant",
               Op::kConstant,
               {},
               [](FunctionBuilder& b, P) {
                 return b.Constant(F32({2}, {1.5f, -2.0f}));
               },
               F32({2}, {1.5f, -2.0f})});
  c.push_back({"iota_i32_dim1",
               Op::kIota,
               {},
               [](FunctionBuilder& b, P) {
                 return b.Iota({DType::kI32, {2, 3}}, 1);
               },
               I32({2, 3}, {0, 1, 2, 0, 1, 2})});
  c.push_back({"iota_f32_dim0",
               Op::kIota,
               {},
               [](FunctionBuilder& b, P) {
                 return b.Iota({DType::kF32, {2, 3}}, 0);
               },
               F32({2, 3}, {0, 0, 0, 1, 1, 1})});
  // Elementwise arithmetic.
  c.push_back(Binary("add", Op::kAdd, F32({3}, {1, 2, 3}), F32({3}, {0.5f, -2, 10}), F32({3}, {1.5f, 0, 13})));
  c.push_back(Binary("add_i32_wraps", Op::kAdd, I32({2}, {kI32Max, 4}), I32({2}, {1, -6}), I32({2}, {kI32Min, -2})));
  c.push_back(Binary("subtract", Op::kSubtract, F32({2}, {5, 1}), F32({2}, {2, 4}), F32({2}, {3, -3})));
  c.push_back(Binary("subtract_i64", Op::kSubtract, I64({2}, {5, 1}), I64({2}, {7, -4}), I64({2}, {-2, 5})));
  c.push_back(Binary("multiply", Op::kMultiply, F32({2}, {2, -3}), F32({2}, {4, 0.5f}), F32({2}, {8, -1.5f})));
  c.push_back(Binary("multiply_i64", Op::kMultiply, I64({2}, {3, -4}), I64({2}, {5, 6}), I64({2}, {15, -24})));
  c.push_back(Binary("divide", Op::kDivide, F32({3}, {1, -9, 1}), F32({3}, {4, 3, 0}), F32({3}, {0.25f, -3, kInf})));
  c.push_back(Binary("divide_i32", Op::kDivide, I32({4}, {7, -7, 5, kI32Min}), I32({4}, {2, 2, 0, -1}),
                     I32({4}, {3, -3, -1, kI32Min})));
  c.push_back(Binary("maximum", Op::kMaximum, F32({4}, {1, -2, kNaN, -0.0f}), F32({4}, {3, -5, 1, 0.0f}),
                     F32({4}, {3, -2, kNaN, 0.0f})));
  c.push_back(Binary("maximum_i32", Op::kMaximum, I32({2}, {1, -2}), I32({2}, {3, -5}), I32({2}, {3, -2})));
  c.push_back(Binary("minimum", Op::kMinimum, F32({4}, {1, -2, 1, 0.0f}), F32({4}, {3, -5, kNaN, -0.0f}),
                     F32({4}, {1, -5, kNaN, -0.0f})));
  c.push_back(Binary("power", Op::kPower, F32({4}, {2, 9, 4, -8}), F32({4}, {3, 0.5f, -1, 0.5f}),
                     F32({4}, {8, 3, 0.25f, kNaN})));
  // Unary math (libm results are not exact; compared to 1e-6).
  c.push_back(Unary("negate", Op::kNegate, F32({3}, {1, -0.0f, 0.0f}), F32({3}, {-1, 0.0f, -0.0f})));
  c.push_back(Unary("negate_i32_wraps", Op::kNegate, I32({2}, {5, kI32Min}), I32({2}, {-5, kI32Min})));
  c.push_back(Unary("exponential", Op::kExponential, F32({3}, {0, 1, -kInf}), F32({3}, {1, 2.71828183f, 0}), 1e-6));
  c.push_back(Unary("log", Op::kLog, F32({3}, {1, 2.71828183f, 0}), F32({3}, {0, 1, -kInf}), 1e-6));
  c.push_back(Unary("sqrt", Op::kSqrt, F32({3}, {4, 2, -1}), F32({3}, {2, 1.41421356f, kNaN})));
  c.push_back(Unary("rsqrt", Op::kRsqrt, F32({3}, {4, 0.25f, 0}), F32({3}, {0.5f, 2, kInf})));
  c.push_back(Unary("tanh", Op::kTanh, F32({3}, {0, 0.5f, -20}), F32({3}, {0, 0.46211716f, -1}), 1e-6));
  c.push_back(
      Unary("logistic", Op::kLogistic, F32({3}, {0, 2, -10}), F32({3}, {0.5f, 0.88079708f, 4.5397869e-05f}), 1e-6));
  c.push_back(Unary("abs", Op::kAbs, F32({3}, {-2, 3, -0.0f}), F32({3}, {2, 3, 0.0f})));
  c.push_back(Unary("abs_i32", Op::kAbs, I32({2}, {-5, 7}), I32({2}, {5, 7})));
  c.push_back(Binary("and_i1", Op::kAnd, Bool({4}, {false, false, true, true}), Bool({4}, {false, true, false, true}),
                     Bool({4}, {false, false, false, true})));
  c.push_back(Binary("or_i1", Op::kOr, Bool({4}, {false, false, true, true}), Bool({4}, {false, true, false, true}),
                     Bool({4}, {false, true, true, true})));
  c.push_back(Unary("not_i1", Op::kNot, Bool({2}, {false, true}), Bool({2}, {true, false})));
  c.push_back(Binary("and_i32_bitwise", Op::kAnd, I32({2}, {12, -1}), I32({2}, {10, 7}), I32({2}, {8, 7})));
  c.push_back(Binary("or_i64_bitwise", Op::kOr, I64({2}, {12, -8}), I64({2}, {3, 1}), I64({2}, {15, -7})));
  c.push_back(Unary("not_i32_bitwise", Op::kNot, I32({3}, {0, -1, 5}), I32({3}, {-1, 0, -6})));
  c.push_back({"clamp",
               Op::kClamp,
               {F32({5}, {-1, -1, -1, 0, -1}), F32({5}, {-3, 0.5f, 7, kNaN, -0.0f}), F32({5}, {1, 1, 1, 1, 0.0f})},
               [](FunctionBuilder& b, P p) { return b.Clamp(p[0], p[1], p[2]); },
               F32({5}, {-1, 0.5f, 1, kNaN, -0.0f})});
  c.push_back({"clamp_i64_min_above_max",
               Op::kClamp,
               {I64({3}, {0, 0, 5}), I64({3}, {-4, 9, 0}), I64({3}, {3, 3, 2})},
               [](FunctionBuilder& b, P p) { return b.Clamp(p[0], p[1], p[2]); },
               I64({3}, {0, 3, 2})});
  c.push_back(Unary("ceil", Op::kCeil, F32({7}, {-0.5f, 2.0f, 2.25f, -2.75f, -1e30f, kInf, kNaN}),
                    F32({7}, {-0.0f, 2, 3, -2, -1e30f, kInf, kNaN})));
  c.push_back(Unary("erf", Op::kErf, F32({3}, {0, 0.5f, -1}), F32({3}, {0, 0.52049988f, -0.84270079f}), 1e-6));
  // compare: IEEE, so NaN is unequal to everything (itself included).
  Tensor x = F32({3}, {1, 2, kNaN}), y = F32({3}, {2, 2, kNaN});
  c.push_back(CompareCase("compare_eq", ComparisonDirection::kEQ, x, y, {false, true, false}));
  c.push_back(CompareCase("compare_ne", ComparisonDirection::kNE, x, y, {true, false, true}));
  c.push_back(CompareCase("compare_lt", ComparisonDirection::kLT, x, y, {true, false, false}));
  c.push_back(CompareCase("compare_le", ComparisonDirection::kLE, x, y, {true, true, false}));
  c.push_back(CompareCase("compare_gt", ComparisonDirection::kGT, x, y, {false, false, false}));
  c.push_back(CompareCase("compare_ge", ComparisonDirection::kGE, x, y, {false, true, false}));
  c.push_back(CompareCase("compare_i32", ComparisonDirection::kGT, I32({3}, {-1, 0, 5}), I32({3}, {-2, 0, 6}),
                          {true, false, false}));
  c.push_back({"select",
               Op::kSelect,
               {Bool({3}, {true, false, true}), F32({3}, {1, 2, 3}), F32({3}, {10, 20, 30})},
               [](FunctionBuilder& b, P p) { return b.Select(p[0], p[1], p[2]); },
               F32({3}, {1, 20, 3})});
  c.push_back({"compare_select_relu",
               Op::kSelect,
               {F32({4}, {-1, 2, 0.5f, -3})},
               [](FunctionBuilder& b, P p) {
                 const TensorType type = b.type(p[0]);  // a copy: Full() adds values
                 ValueId zero = b.Full(0.0, type);
                 return b.Select(b.Compare(p[0], zero, ComparisonDirection::kGT), p[0], zero);
               },
               F32({4}, {0, 2, 0.5f, 0})});
  // convert: float -> int truncates (NaN -> 0, saturating); -> i1 is x != 0.
  c.push_back(ConvertCase("convert_f32_i32", F32({6}, {1.7f, -1.7f, 2.5f, kNaN, 3e9f, -3e9f}), DType::kI32,
                          I32({6}, {1, -1, 2, 0, kI32Max, kI32Min})));
  c.push_back(ConvertCase("convert_i32_f32", I32({2}, {-3, 16777217}), DType::kF32, F32({2}, {-3, 16777216})));
  c.push_back(ConvertCase("convert_f32_i1", F32({4}, {0, -0.0f, 0.1f, kNaN}), DType::kBool,
                          Bool({4}, {false, false, true, true})));
  c.push_back(ConvertCase("convert_i1_f32", Bool({2}, {true, false}), DType::kF32, F32({2}, {1, 0})));
  c.push_back(ConvertCase("convert_i64_i32", I64({2}, {(int64_t{1} << 32) + 5, -7}), DType::kI32, I32({2}, {5, -7})));
  // Layout.
  c.push_back({"broadcast_row",
               Op::kBroadcastInDim,
               {F32({3}, {1, 2, 3})},
               [](FunctionBuilder& b, P p) {
                 return b.BroadcastInDim(p[0], {2, 3}, {1});
               },
               F32({2, 3}, {1, 2, 3, 1, 2, 3})});
  c.push_back({"broadcast_column",
               Op::kBroadcastInDim,
               {F32({2}, {1, 2})},
               [](FunctionBuilder& b, P p) {
                 return b.BroadcastInDim(p[0], {2, 3}, {0});
               },
               F32({2, 3}, {1, 1, 1, 2, 2, 2})});
  c.push_back({"broadcast_size1_stretch",
               Op::kBroadcastInDim,
               {F32({1, 3}, {1, 2, 3})},
               [](FunctionBuilder& b, P p) {
                 return b.BroadcastInDim(p[0], {2, 2, 3}, {1, 2});
               },
               F32({2, 2, 3}, {1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3})});
  c.push_back({"broadcast_size1_stretch_inner",
               Op::kBroadcastInDim,
               {F32({2, 1}, {5, 7})},
               [](FunctionBuilder& b, P p) {
                 return b.BroadcastInDim(p[0], {2, 3}, {0, 1});
               },
               F32({2, 3}, {5, 5, 5, 7, 7, 7})});
  c.push_back({"broadcast_scalar",
               Op::kBroadcastInDim,
               {F32({}, {4})},
               [](FunctionBuilder& b, P p) {
                 return b.BroadcastInDim(p[0], {2, 2}, {});
               },
               F32({2, 2}, {4, 4, 4, 4})});
  c.push_back({"reshape",
               Op::kReshape,
               {F32({2, 3}, Range(6))},
               [](FunctionBuilder& b, P p) {
                 return b.Reshape(p[0], {3, 1, 2});
               },
               F32({3, 1, 2}, Range(6))});
  c.push_back({"transpose_2d",
               Op::kTranspose,
               {F32({2, 3}, Range(6))},
               [](FunctionBuilder& b, P p) {
                 return b.Transpose(p[0], {1, 0});
               },
               F32({3, 2}, {0, 3, 1, 4, 2, 5})});
  // result[i, j, k] = x[j, k, i] = 6j + 3k + i.
  c.push_back({"transpose_rank3",
               Op::kTranspose,
               {F32({2, 2, 3}, Range(12))},
               [](FunctionBuilder& b, P p) {
                 return b.Transpose(p[0], {2, 0, 1});
               },
               F32({3, 2, 2}, {0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11})});
  c.push_back({"slice_strided",
               Op::kSlice,
               {F32({3, 5}, Range(15))},
               [](FunctionBuilder& b, P p) {
                 return b.Slice(p[0], {0, 1}, {3, 5}, {2, 2});
               },
               F32({2, 2}, {1, 3, 11, 13})});
  c.push_back({"slice_offset",
               Op::kSlice,
               {F32({3, 5}, Range(15))},
               [](FunctionBuilder& b, P p) {
                 return b.Slice(p[0], {1, 0}, {3, 5}, {1, 3});
               },
               F32({2, 2}, {5, 8, 10, 13})});
  c.push_back({"concatenate_dim1",
               Op::kConcatenate,
               {F32({2, 1}, {1, 2}), F32({2, 2}, {3, 4, 5, 6})},
               [](FunctionBuilder& b, P p) {
                 return b.Concatenate({p[0], p[1]}, 1);
               },
               F32({2, 3}, {1, 3, 4, 2, 5, 6})});
  c.push_back({"concatenate_three_i32",
               Op::kConcatenate,
               {I32({1}, {1}), I32({2}, {2, 3}), I32({1}, {4})},
               [](FunctionBuilder& b, P p) {
                 return b.Concatenate({p[0], p[1], p[2]}, 0);
               },
               I32({4}, {1, 2, 3, 4})});
  // reduce over [2, 2, 3] = 0..11.
  c.push_back({"reduce_sum_dims_0_2",
               Op::kReduce,
               {F32({2, 2, 3}, Range(12))},
               [](FunctionBuilder& b, P p) {
                 return b.ReduceSum(p[0], {0, 2});
               },
               F32({2}, {24, 42})});
  c.push_back({"reduce_sum_all",
               Op::kReduce,
               {F32({2, 2, 3}, Range(12))},
               [](FunctionBuilder& b, P p) {
                 return b.ReduceSum(p[0], {0, 1, 2});
               },
               F32({}, {66})});
  c.push_back({"reduce_max_dim1",
               Op::kReduce,
               {F32({2, 2, 3}, Range(12))},
               [](FunctionBuilder& b, P p) { return b.ReduceMax(p[0], {1}); },
               F32({2, 3}, {3, 4, 5, 9, 10, 11})});
  c.push_back({"reduce_max_dims_0_1",
               Op::kReduce,
               {F32({2, 2, 3}, {0, 9, 2, 3, 4, -5, 6, 7, 8, -9, 10, 1})},
               [](FunctionBuilder& b, P p) {
                 return b.ReduceMax(p[0], {0, 1});
               },
               F32({3}, {6, 10, 8})});
  c.push_back({"reduce_sum_init_counted_once",
               Op::kReduce,
               {F32({2, 2, 3}, Range(12))},
               [](FunctionBuilder& b, P p) {
                 Attributes a;
                 a.dims = {0, 2};
                 return b.Emit(Op::kReduce, {p[0], b.ScalarConstant(100.0)}, a);
               },
               F32({2}, {124, 142})});
  // In f32 arithmetic 1e8 + 1 == 1e8, so only a double accumulator gets 2.
  c.push_back({"reduce_sum_accumulates_in_double",
               Op::kReduce,
               {F32({4}, {1e8f, 1, -1e8f, 1})},
               [](FunctionBuilder& b, P p) { return b.ReduceSum(p[0], {0}); },
               F32({}, {2})});
  c.push_back({"reduce_max_nan",
               Op::kReduce,
               {F32({3}, {1, kNaN, 3})},
               [](FunctionBuilder& b, P p) { return b.ReduceMax(p[0], {0}); },
               F32({}, {kNaN})});
  c.push_back({"reduce_sum_i32",
               Op::kReduce,
               {I32({2, 2}, {1, 2, 3, 4})},
               [](FunctionBuilder& b, P p) { return b.ReduceSum(p[0], {1}); },
               I32({2}, {3, 7})});
  c.push_back({"reduce_max_i64",
               Op::kReduce,
               {I64({2, 2}, {-1, -2, -3, -4})},
               [](FunctionBuilder& b, P p) { return b.ReduceMax(p[0], {0}); },
               I64({2}, {-1, -2})});
  // dot_general.
  Tensor l6 = F32({2, 3}, {1, 2, 3, 4, 5, 6}), r6 = F32({3, 2}, {1, -1, 2, 0.5f, 3, -2});
  c.push_back({"dot_matmul",
               Op::kDotGeneral,
               {l6, r6},
               [](FunctionBuilder& b, P p) { return b.MatMul(p[0], p[1]); },
               F32({2, 2}, {14, -6, 32, -13.5f})});
  c.push_back({"dot_two_contracting_dims",
               Op::kDotGeneral,
               {l6, r6},
               [](FunctionBuilder& b, P p) {
                 return b.DotGeneral(p[0], p[1], {{}, {}, {0, 1}, {1, 0}});
               },
               F32({}, {0.5f})});
  // lhs [k=3, m=2, b=2], rhs [n=4, k=3, b=2]: batch and contracting dims in unusual places;
  // the result is [b, m, n].
  std::vector<float> rhs_values;
  for (int i = 0; i < 24; ++i) rhs_values.push_back(static_cast<float>(i % 5 - 2));
  c.push_back({"dot_batch_and_contract_permuted",
               Op::kDotGeneral,
               {F32({3, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}), F32({4, 3, 2}, rhs_values)},
               [](FunctionBuilder& b, P p) {
                 return b.DotGeneral(p[0], p[1], {{2}, {2}, {0}, {1}});
               },
               F32({2, 2, 4}, {16, -14, 1, -9, 16, -18, 3, -11, -16, 2, -10, 8, -20, 4, -12, 12})});
  // gather / scatter rows.
  Tensor table = F32({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  c.push_back({"gather_repeated",
               Op::kGather,
               {table, I32({3}, {2, 0, 2})},
               [](FunctionBuilder& b, P p) { return b.Gather(p[0], p[1]); },
               F32({3, 2}, {20, 21, 0, 1, 20, 21})});
  c.push_back({"gather_clamps_2d_indices",
               Op::kGather,
               {table, I64({2, 2}, {-1, 7, 1, 3})},
               [](FunctionBuilder& b, P p) { return b.Gather(p[0], p[1]); },
               F32({2, 2, 2}, {0, 1, 30, 31, 10, 11, 30, 31})});
  c.push_back(
      {"scatter_add_repeated_skips_out_of_range",
       Op::kScatter,
       {F32({3, 2}, {1, 1, 1, 1, 1, 1}), I32({5}, {1, 1, 0, 5, -1}), F32({5, 2}, {1, 2, 10, 20, 100, 200, 7, 7, 9, 9})},
       [](FunctionBuilder& b, P p) { return b.ScatterAdd(p[0], p[1], p[2]); },
       F32({3, 2}, {101, 201, 12, 23, 1, 1})});
  c.push_back({"scatter_add_i32",
               Op::kScatter,
               {I32({2}, {0, 0}), I64({3}, {1, 0, 1}), I32({3}, {1, 2, 3})},
               [](FunctionBuilder& b, P p) { return b.ScatterAdd(p[0], p[1], p[2]); },
               I32({2}, {2, 4})});
  // Fused attention (attention.h), causal, T = S = 2, D = E = 1, scale 1: q = [1, 1],
  // k = [1, 3], v = [10, 20]. Row 0 sees key 0 only; row 1 has scores 1 and 3, so
  // lse = log(e + e^3), P = [1/(1+e^2), e^2/(1+e^2)]. With do = [1, 2]: delta = do o.
  const Tensor q = F32({1, 2, 1}, {1, 1}), k = F32({1, 2, 1}, {1, 3}), v = F32({1, 2, 1}, {10, 20});
  const Tensor lse = F32({1, 2}, {1, 3.12692801f}), delta = F32({1, 2}, {10, 37.6159416f});
  const Tensor d_out = F32({1, 2, 1}, {1, 2});
  auto attention = [](Op op) {
    return [op](FunctionBuilder& b, P p) {
      Attributes a;
      a.causal = true;
      return b.Emit(op, p, a);
    };
  };
  c.push_back({"attention_causal",
               Op::kAttention,
               {q, k, v},
               attention(Op::kAttention),
               F32({1, 2, 1}, {10, 18.8079708f}),
               1e-6});
  c.push_back({"attention_lse", Op::kAttentionLse, {q, k}, attention(Op::kAttentionLse), lse, 1e-6});
  c.push_back({"attention_grad_q",
               Op::kAttentionGradQ,
               {q, k, v, lse, delta, d_out},
               attention(Op::kAttentionGradQ),
               F32({1, 2, 1}, {0, 4.19974342f}),
               1e-5});
  c.push_back({"attention_grad_k",
               Op::kAttentionGradK,
               {q, k, v, lse, delta, d_out},
               attention(Op::kAttentionGradK),
               F32({1, 2, 1}, {-2.09987171f, 2.09987171f}),
               1e-5});
  c.push_back({"attention_grad_v",
               Op::kAttentionGradV,
               {q, k, lse, d_out},
               attention(Op::kAttentionGradV),
               F32({1, 2, 1}, {1.23840584f, 1.76159416f}),
               1e-6});
  return c;
}

class InterpreterCaseTest : public ::testing::TestWithParam<Case> {};

TEST_P(InterpreterCaseTest, MatchesHandComputedValue) {
  const Case& c = GetParam();
  absl::StatusOr<Function> f = BuildCase(c);
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<std::vector<Tensor>> out = Interpret(*f, c.args);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  const Tensor& got = (*out)[0];
  if (c.rtol == 0.0) {
    EXPECT_TRUE(Identical(got, c.expected));
  } else {
    EXPECT_TRUE(TensorsNear(got, c.expected, c.rtol, 1e-7));
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, InterpreterCaseTest, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(InterpreterCoverageTest, EveryOpHasACase) {
  std::set<Op> covered;
  for (const Case& c : AllCases()) {
    absl::StatusOr<Function> f = BuildCase(c);
    ASSERT_TRUE(f.ok()) << c.name << ": " << f.status();
    bool contains = false;
    for (const Instruction& inst : f->instructions) contains |= inst.op == c.op;
    EXPECT_TRUE(contains) << c.name << " does not contain " << OpName(c.op);
    if (contains) covered.insert(c.op);
  }
  for (int i = 0; i < kNumOps; ++i) {
    EXPECT_TRUE(covered.count(AllOps()[i])) << "no interpreter case for " << OpName(AllOps()[i]);
  }
}

// ---- Interface and error behaviour -------------------------------------------------------

Function AddFunction() {
  FunctionBuilder b("addf");
  ValueId x = b.Parameter({DType::kF32, {2}}, "x");
  ValueId y = b.Parameter({DType::kF32, {2}}, "y");
  b.Return({b.Add(x, y), x});
  return *b.Build();
}

TEST(InterpreterTest, ReturnsEveryResultInOrder) {
  absl::StatusOr<std::vector<Tensor>> out = Interpret(AddFunction(), {F32({2}, {1, 2}), F32({2}, {3, 4})});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 2u);
  EXPECT_TRUE(BitwiseEqual((*out)[0], F32({2}, {4, 6})));
  EXPECT_TRUE(BitwiseEqual((*out)[1], F32({2}, {1, 2})));
}

TEST(InterpreterTest, RejectsWrongArgumentCount) {
  absl::StatusOr<std::vector<Tensor>> out = Interpret(AddFunction(), {F32({2}, {1, 2})});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("takes 2 arguments, got 1"), std::string::npos) << out.status();
}

TEST(InterpreterTest, RejectsWrongArgumentTypeNamingIt) {
  absl::StatusOr<std::vector<Tensor>> out = Interpret(AddFunction(), {F32({2}, {1, 2}), F32({3}, {1, 2, 3})});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("argument 1 ('y')"), std::string::npos) << out.status();
  EXPECT_NE(out.status().message().find("tensor<2xf32>"), std::string::npos) << out.status();
  out = Interpret(AddFunction(), {F32({2}, {1, 2}), I32({2}, {1, 2})});
  EXPECT_FALSE(out.ok());
  out = Interpret(AddFunction(), {F32({2}, {1, 2}), Tensor()});
  EXPECT_FALSE(out.ok());
}

TEST(InterpreterTest, RejectsInvalidFunction) {
  Function f = AddFunction();
  f.instructions[0].operands[1] = 7;  // no such value
  absl::StatusOr<std::vector<Tensor>> out = Interpret(f, {F32({2}, {1, 2}), F32({2}, {3, 4})});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("before it is defined"), std::string::npos) << out.status();
}

TEST(InterpreterTest, HalfPrecisionComputeIsUnimplementedButLayoutWorks) {
  FunctionBuilder b("half");
  ValueId x = b.Parameter({DType::kF16, {2}}, "x");
  b.Return({b.Exp(x), b.BroadcastInDim(x, {2, 2}, {1})});
  absl::StatusOr<Function> f = b.Build();
  ASSERT_TRUE(f.ok()) << f.status();
  Tensor h(DType::kF16, {2});
  h.data<uint16_t>()[0] = 0x3C00;  // 1.0
  h.data<uint16_t>()[1] = 0x4000;  // 2.0
  absl::StatusOr<std::vector<Tensor>> out = Interpret(*f, {h});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(out.status().message().find("instruction 0 (stablehlo.exponential)"), std::string::npos) << out.status();

  Instruction broadcast{Op::kBroadcastInDim, {0}, 1, {}};
  broadcast.attrs.dims = {1};
  absl::StatusOr<Tensor> t = EvaluateInstruction(broadcast, {DType::kF16, {2, 2}}, {h});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->data<uint16_t>()[0], 0x3C00);
  EXPECT_EQ(t->data<uint16_t>()[3], 0x4000);
}

TEST(InterpreterTest, EvaluateInstructionChecksOperandsAndResultType) {
  Instruction add{Op::kAdd, {0, 1}, 2, {}};
  const TensorType t{DType::kF32, {2}};
  absl::StatusOr<Tensor> r = EvaluateInstruction(add, t, {F32({2}, {1, 2}), F32({2}, {3, 4})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(BitwiseEqual(*r, F32({2}, {4, 6})));
  // Mismatched operand shapes, a wrong declared result, too few operands, a missing tensor.
  EXPECT_EQ(EvaluateInstruction(add, t, {F32({2}, {1, 2}), F32({3}, {3, 4, 5})}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(EvaluateInstruction(add, {DType::kF32, {3}}, {F32({2}, {1, 2}), F32({2}, {3, 4})}).ok());
  EXPECT_FALSE(EvaluateInstruction(add, t, {F32({2}, {1, 2})}).ok());
  EXPECT_FALSE(EvaluateInstruction(add, t, {F32({2}, {1, 2}), Tensor()}).ok());
  Instruction slice{Op::kSlice, {0}, 1, {}};
  slice.attrs.start = {0};
  slice.attrs.limit = {9};  // beyond the operand
  slice.attrs.stride = {1};
  EXPECT_FALSE(EvaluateInstruction(slice, {DType::kF32, {9}}, {F32({2}, {1, 2})}).ok());
}

TEST(InterpreterTest, GatherFromEmptyTableIsAnError) {
  Instruction gather{Op::kGather, {0, 1}, 2, {}};
  absl::StatusOr<Tensor> r =
      EvaluateInstruction(gather, {DType::kF32, {1, 2}}, {Tensor(DType::kF32, {0, 2}), I32({1}, {0})});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no rows"), std::string::npos) << r.status();
}

TEST(InterpreterTest, ConstantResultDoesNotAliasTheLiteral) {
  FunctionBuilder b("c");
  b.Return({b.Constant(F32({2}, {1, 2}))});
  Function f = *b.Build();
  std::vector<Tensor> out = *Interpret(f, {});
  out[0].data<float>()[0] = 99;
  EXPECT_EQ(f.instructions[0].attrs.literal.data<float>()[0], 1.0f);
}

TEST(InterpreterTest, EmptyTensors) {
  FunctionBuilder b("empty");
  ValueId x = b.Parameter({DType::kF32, {0, 3}}, "x");
  b.Return({b.ReduceSum(x, {0}), b.Transpose(x, {1, 0}), b.Exp(x)});
  Function f = *b.Build();
  absl::StatusOr<std::vector<Tensor>> out = Interpret(f, {Tensor(DType::kF32, {0, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(BitwiseEqual((*out)[0], F32({3}, {0, 0, 0})));
  EXPECT_EQ((*out)[1].shape(), (Shape{3, 0}));
}

}  // namespace
}  // namespace pcp
