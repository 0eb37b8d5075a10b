// The conformance cases (conformance_cases.h).
#include "conformance_cases.h"

#include <cstdio>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/general_indexing.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/passes.h"
#include "pcp/testing/tensor_testing.h"

namespace pcp::conformance {
namespace {}  // namespace

absl::string_view Short(Op op) { return OpName(op).substr(OpName(op).rfind('.') + 1); }

std::string ShapeName(const Shape& s) { return s.empty() ? "scalar" : ShapeToString(s); }

namespace {

const std::vector<Shape>& ElementwiseShapes() {
  static const auto* shapes = new std::vector<Shape>{{}, {1}, {17}, {3, 129}, {2, 3, 4, 5}, {1029}};
  return *shapes;
}

}  // namespace

std::vector<Case> ElementwiseCases() {
  std::vector<Case> cases;
  struct Binary {
    Op op;
    Range a, b;
    double rtol;
  };
  // Tolerances are the loosest precision a conforming backend may have: Vulkan's SPIR-V
  // precision table allows OpFDiv 2.5 ULP (relative <= 2.5 * 2^-23 = 2.98e-7) and sqrt
  // "inherited from 1.0 / inversesqrt()" (2.5 + 2 ULP). NVIDIA's driver on an H100 is 1 ULP
  // off in both where the CPU and lavapipe round correctly; 1e-7 held on lavapipe alone.
  const std::vector<Binary> binaries = {
      {Op::kAdd, {}, {}, 1e-7},
      {Op::kSubtract, {}, {}, 1e-7},
      {Op::kMultiply, {}, {}, 1e-7},
      {Op::kDivide, {}, {0.25, 2.0}, 3e-7},
      {Op::kMaximum, {}, {}, 0},
      {Op::kMinimum, {}, {}, 0},
      {Op::kPower, {0.05, 3.0}, {-2.0, 2.0}, 1e-6},
  };
  for (const Binary& bin : binaries) {
    for (const Shape& s : ElementwiseShapes()) {
      cases.push_back({absl::StrCat(Short(bin.op), "_f32_", ShapeName(s)),
                       bin.op,
                       {F32(s), F32(s)},
                       [op = bin.op](FunctionBuilder& b, const std::vector<ValueId>& p) {
                         return b.Emit(op, {p[0], p[1]});
                       },
                       bin.rtol,
                       0.0,
                       {bin.a, bin.b}});
    }
  }
  // Integer arithmetic: wrap-around, x / 0 = -1 (divisors include 0).
  for (Op op : {Op::kAdd, Op::kSubtract, Op::kMultiply, Op::kDivide, Op::kMaximum, Op::kMinimum}) {
    for (DType d : {DType::kI32, DType::kI64}) {
      TensorType t{d, {3, 41}};
      cases.push_back({absl::StrCat(Short(op), "_", MlirName(d)),
                       op,
                       {t, t},
                       [op](FunctionBuilder& b, const std::vector<ValueId>& p) {
                         return b.Emit(op, {p[0], p[1]});
                       },
                       0,
                       0,
                       {{-1000, 1000}, {-3, 4}}});
    }
  }
  struct Unary {
    Op op;
    Range range;
    double rtol, atol;
  };
  const std::vector<Unary> unaries = {
      {Op::kNegate, {}, 0, 0},
      {Op::kAbs, {}, 0, 0},
      {Op::kExponential, {-20.0, 20.0}, 3e-7, 0},
      {Op::kLog, {1e-4, 100.0}, 3e-7, 1e-7},
      {Op::kSqrt, {0.0, 100.0}, 6e-7, 0},  // see the binaries' tolerances
      {Op::kRsqrt, {1e-3, 100.0}, 3e-7, 0},
      {Op::kTanh, {-6.0, 6.0}, 6e-7, 1e-7},
      {Op::kLogistic, {-20.0, 20.0}, 6e-7, 0},
      {Op::kErf, {-4.5, 4.5}, 6e-7, 1e-7},
      {Op::kCeil, {-5.0, 5.0}, 0, 0},
  };
  for (const Unary& u : unaries) {
    for (const Shape& s : ElementwiseShapes()) {
      cases.push_back({absl::StrCat(Short(u.op), "_f32_", ShapeName(s)),
                       u.op,
                       {F32(s)},
                       [op = u.op](FunctionBuilder& b, const std::vector<ValueId>& p) { return b.Emit(op, {p[0]}); },
                       u.rtol,
                       u.atol,
                       {u.range}});
    }
  }
  // Near zero, where relative accuracy is hardest.
  for (Op op : {Op::kTanh, Op::kErf, Op::kLog, Op::kExponential}) {
    const Range r = op == Op::kLog ? Range{0.5, 2.0} : Range{-0.01, 0.01};
    cases.push_back({absl::StrCat(Short(op), "_f32_small"),
                     op,
                     {F32({4099})},
                     [op](FunctionBuilder& b, const std::vector<ValueId>& p) { return b.Emit(op, {p[0]}); },
                     6e-7,
                     op == Op::kLog ? 1e-7 : 0,
                     {r}});
  }
  for (Op op : {Op::kNegate, Op::kAbs}) {
    for (DType d : {DType::kI32, DType::kI64}) {
      cases.push_back({absl::StrCat(Short(op), "_", MlirName(d)),
                       op,
                       {TensorType{d, {130}}},
                       [op](FunctionBuilder& b, const std::vector<ValueId>& p) { return b.Emit(op, {p[0]}); },
                       0,
                       0,
                       {{-1000, 1000}}});
    }
  }
  const ComparisonDirection dirs[] = {ComparisonDirection::kEQ, ComparisonDirection::kNE, ComparisonDirection::kLT,
                                      ComparisonDirection::kLE, ComparisonDirection::kGT, ComparisonDirection::kGE};
  for (ComparisonDirection dir : dirs) {
    for (DType d : {DType::kF32, DType::kI32, DType::kI64}) {
      TensorType t{d, {7, 37}};
      cases.push_back({absl::StrCat("compare_", ComparisonName(dir), "_", MlirName(d)),
                       Op::kCompare,
                       {t, t},
                       [dir](FunctionBuilder& b, const std::vector<ValueId>& p) { return b.Compare(p[0], p[1], dir); },
                       0,
                       0,
                       {{0, 3}, {0, 3}}});
    }
  }
  cases.push_back(
      {"compare_EQ_i1", Op::kCompare, {Bool({70}), Bool({70})}, [](FunctionBuilder& b, const std::vector<ValueId>& p) {
         return b.Compare(p[0], p[1], ComparisonDirection::kEQ);
       }});
  for (DType d : {DType::kF32, DType::kI32, DType::kI64, DType::kBool}) {
    TensorType t{d, {5, 103}};
    cases.push_back({absl::StrCat("select_", MlirName(d)),
                     Op::kSelect,
                     {Bool({5, 103}), t, t},
                     [](FunctionBuilder& b, const std::vector<ValueId>& p) { return b.Select(p[0], p[1], p[2]); },
                     0,
                     0,
                     {{}, {-100, 100}, {-100, 100}}});
  }
  // and / or / not: logical on i1, bitwise on integers; fed by compares, feeding a select.
  for (DType d : {DType::kBool, DType::kI32, DType::kI64}) {
    TensorType t{d, {5, 103}};
    for (Op op : {Op::kAnd, Op::kOr}) {
      cases.push_back({absl::StrCat(Short(op), "_", MlirName(d)),
                       op,
                       {t, t},
                       [op](FunctionBuilder& b, const std::vector<ValueId>& p) {
                         return b.Emit(op, {p[0], p[1]});
                       },
                       0,
                       0,
                       {{-1000, 1000}, {-1000, 1000}}});
    }
    cases.push_back({absl::StrCat("not_", MlirName(d)),
                     Op::kNot,
                     {t},
                     [](FunctionBuilder& b, const std::vector<ValueId>& p) { return b.Not(p[0]); },
                     0,
                     0,
                     {{-1000, 1000}}});
  }
  cases.push_back({"and_not_of_compares_into_select",
                   Op::kAnd,
                   {F32({3, 129}), F32({3, 129})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     ValueId lt = b.Compare(p[0], p[1], ComparisonDirection::kLT);
                     ValueId pos = b.Compare(p[0], b.Full(0.0, F32({3, 129})), ComparisonDirection::kGT);
                     ValueId pred = b.Or(b.And(lt, b.Not(pos)), b.Not(b.Or(lt, pos)));
                     return b.Select(pred, p[0], p[1]);
                   }});
  for (const Shape& s : ElementwiseShapes()) {
    cases.push_back({absl::StrCat("clamp_f32_", ShapeName(s)),
                     Op::kClamp,
                     {F32(s), F32(s), F32(s)},
                     [](FunctionBuilder& b, const std::vector<ValueId>& p) { return b.Clamp(p[0], p[1], p[2]); },
                     0,
                     0,
                     {{-1.0, 0.0}, {-2.0, 2.0}, {0.0, 1.0}}});
  }
  for (DType d : {DType::kI32, DType::kI64}) {
    TensorType t{d, {3, 77}};
    cases.push_back({absl::StrCat("clamp_", MlirName(d)),
                     Op::kClamp,
                     {t, t, t},
                     [](FunctionBuilder& b, const std::vector<ValueId>& p) { return b.Clamp(p[0], p[1], p[2]); },
                     0,
                     0,
                     {{-50, 0}, {-100, 100}, {0, 50}}});
  }
  cases.push_back(
      {"clamp_scalar_bounds_f32", Op::kClamp, {F32({4, 33})}, [](FunctionBuilder& b, const std::vector<ValueId>& p) {
         ValueId lo = b.BroadcastInDim(b.ScalarConstant(-0.25), {4, 33}, {});
         ValueId hi = b.BroadcastInDim(b.ScalarConstant(0.5), {4, 33}, {});
         return b.Clamp(lo, p[0], hi);
       }});
  // Converts between every pair of computing types; floats beyond the i32 range saturate.
  for (DType from : {DType::kF32, DType::kI32, DType::kI64, DType::kBool}) {
    for (DType to : {DType::kF32, DType::kI32, DType::kI64, DType::kBool}) {
      const Range r = from == DType::kF32 ? Range{-6e9, 6e9} : Range{-100, 100};
      cases.push_back({absl::StrCat("convert_", MlirName(from), "_", MlirName(to)),
                       Op::kConvert,
                       {TensorType{from, {9, 67}}},
                       [to](FunctionBuilder& b, const std::vector<ValueId>& p) { return b.Convert(p[0], to); },
                       0,
                       0,
                       {r}});
    }
  }
  cases.push_back({"convert_f32_i32_small",
                   Op::kConvert,
                   {F32({300})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) { return b.Convert(p[0], DType::kI32); },
                   0,
                   0,
                   {{-3, 3}}});
  // Mixed precision's roundings (pcp/autodiff/mixed_precision.h): f32 -> bf16 / f16 -> f32,
  // bit for bit (round to nearest even), over ordinary values, f16's overflow to inf and its
  // subnormals; then a product of rounded operands whose result is rounded.
  for (DType half : {DType::kBF16, DType::kF16}) {
    for (const auto& [range_name, r] : {std::pair<const char*, Range>{"", Range{-3, 3}},
                                        {"_wide", Range{-1e5, 1e5}},
                                        {"_tiny", Range{-2e-7, 2e-7}}}) {
      cases.push_back({absl::StrCat("round_", MlirName(half), range_name),
                       Op::kConvert,
                       {F32({5, 131})},
                       [half](FunctionBuilder& b, const std::vector<ValueId>& p) {
                         return b.Convert(b.Convert(p[0], half), DType::kF32);
                       },
                       0,
                       0,
                       {r}});
    }
    cases.push_back({absl::StrCat("dot_rounded_", MlirName(half)),
                     Op::kDotGeneral,
                     {F32({33, 70}), F32({70, 65})},
                     [half](FunctionBuilder& b, const std::vector<ValueId>& p) {
                       auto round = [&](ValueId v) { return b.Convert(b.Convert(v, half), DType::kF32); };
                       return round(b.MatMul(round(p[0]), round(p[1])));
                     },
                     // One ulp of the 16-bit type: the f32 sums may differ in order and land
                     // on the other side of a rounding boundary.
                     half == DType::kBF16 ? 1.0 / 128 : 1.0 / 1024,
                     1e-5});
  }
  return cases;
}

std::vector<Case> LayoutCases() {
  std::vector<Case> cases;
  struct Bcast {
    Shape from, to;
    std::vector<int64_t> dims;
  };
  const std::vector<Bcast> bcasts = {
      {{}, {2, 3, 4}, {}},
      {{3}, {2, 3}, {1}},
      {{3}, {3, 4}, {0}},
      {{1, 3}, {4, 3}, {0, 1}},
      {{2, 1, 4}, {2, 3, 4}, {0, 1, 2}},
      {{17}, {3, 17, 129}, {1}},
      {{129}, {5, 129}, {1}},
      {{5, 1}, {5, 600}, {0, 1}},
  };
  for (const Bcast& bc : bcasts) {
    const std::string name = absl::StrCat(ShapeName(bc.from), "_to_", ShapeName(bc.to));
    // Alone (materialised as a result) and feeding an elementwise op (read through the view).
    cases.push_back(
        {absl::StrCat("broadcast_", name),
         Op::kBroadcastInDim,
         {F32(bc.from)},
         [bc](FunctionBuilder& b, const std::vector<ValueId>& p) { return b.BroadcastInDim(p[0], bc.to, bc.dims); }});
    cases.push_back({absl::StrCat("broadcast_add_", name),
                     Op::kBroadcastInDim,
                     {F32(bc.from), F32(bc.to)},
                     [bc](FunctionBuilder& b, const std::vector<ValueId>& p) {
                       return b.Add(b.BroadcastInDim(p[0], bc.to, bc.dims), p[1]);
                     },
                     1e-7});
  }
  cases.push_back(
      {"reshape_3d_to_2d", Op::kReshape, {F32({2, 3, 4})}, [](FunctionBuilder& b, const std::vector<ValueId>& p) {
         return b.Reshape(p[0], {6, 4});
       }});
  cases.push_back(
      {"reshape_to_scalar", Op::kReshape, {F32({1, 1})}, [](FunctionBuilder& b, const std::vector<ValueId>& p) {
         return b.Reshape(p[0], {});
       }});
  // A reshape strides cannot express (merging transposed dimensions) forces a copy.
  cases.push_back(
      {"reshape_of_transpose", Op::kReshape, {F32({4, 6, 5})}, [](FunctionBuilder& b, const std::vector<ValueId>& p) {
         return b.Reshape(b.Transpose(p[0], {1, 0, 2}), {24, 5});
       }});
  cases.push_back({"reshape_of_transpose_into_dot",
                   Op::kReshape,
                   {F32({4, 6, 5}), F32({5, 3})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     return b.MatMul(b.Reshape(b.Transpose(p[0], {1, 0, 2}), {24, 5}), p[1]);
                   },
                   1e-5,
                   1e-6});
  cases.push_back({"reshape_of_slice_add",
                   Op::kReshape,
                   {F32({6, 8}), F32({24})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     return b.Add(b.Reshape(b.Slice(p[0], {0, 2}, {6, 6}), {24}), p[1]);
                   },
                   1e-7});
  struct Perm {
    Shape shape;
    std::vector<int64_t> perm;
  };
  for (const Perm& t : std::vector<Perm>{{{2, 3}, {1, 0}},
                                         {{2, 3, 4, 5}, {3, 1, 0, 2}},
                                         {{67, 130}, {1, 0}},
                                         {{3, 40, 50}, {0, 2, 1}},
                                         {{1, 5, 1}, {2, 0, 1}}}) {
    cases.push_back({absl::StrCat("transpose_", ShapeName(t.shape), "_", absl::StrJoin(t.perm, "")),
                     Op::kTranspose,
                     {F32(t.shape)},
                     [t](FunctionBuilder& b, const std::vector<ValueId>& p) { return b.Transpose(p[0], t.perm); }});
  }
  cases.push_back({"transpose_mul",
                   Op::kTranspose,
                   {F32({17, 33}), F32({33, 17})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     return b.Mul(b.Transpose(p[0], {1, 0}), p[1]);
                   },
                   1e-7});
  cases.push_back({"slice_1d_strided", Op::kSlice, {F32({10})}, [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     return b.Slice(p[0], {2}, {9}, {3});
                   }});
  cases.push_back({"slice_2d", Op::kSlice, {F32({5, 7})}, [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     return b.Slice(p[0], {1, 2}, {4, 7}, {1, 2});
                   }});
  cases.push_back({"slice_columns_exp",
                   Op::kSlice,
                   {F32({4, 129})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     return b.Exp(b.Slice(p[0], {0, 64}, {4, 129}));
                   },
                   3e-7});
  cases.push_back({"slice_empty", Op::kSlice, {F32({4, 3})}, [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     return b.Slice(p[0], {2, 0}, {2, 3});
                   }});
  cases.push_back({"concatenate_dim0",
                   Op::kConcatenate,
                   {F32({2, 3}), F32({1, 3}), F32({4, 3})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     return b.Concatenate({p[0], p[1], p[2]}, 0);
                   }});
  cases.push_back({"concatenate_dim1_views",
                   Op::kConcatenate,
                   {F32({3, 2}), F32({3, 5})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     return b.Concatenate({b.Transpose(b.Transpose(p[0], {1, 0}), {1, 0}), p[1], p[0]}, 1);
                   }});
  cases.push_back({"concatenate_i32_rank3",
                   Op::kConcatenate,
                   {I32({2, 3, 4}), I32({2, 1, 4})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     return b.Concatenate({p[0], p[1]}, 1);
                   },
                   0,
                   0,
                   {{-50, 50}, {-50, 50}}});
  return cases;
}

std::vector<Case> ComputeCases() {
  std::vector<Case> cases;
  // Sources.
  cases.push_back({"constant_plus_param",
                   Op::kConstant,
                   {F32({2, 3})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     return b.Add(b.Constant(Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6})), p[0]);
                   },
                   1e-7});
  cases.push_back({"constant_result", Op::kConstant, {}, [](FunctionBuilder& b, const std::vector<ValueId>&) {
                     return b.Constant(Tensor::FromVector<int32_t>({3}, {7, -8, 9}));
                   }});
  for (DType d : {DType::kF32, DType::kI32, DType::kI64}) {
    cases.push_back(
        {absl::StrCat("iota_", MlirName(d)), Op::kIota, {}, [d](FunctionBuilder& b, const std::vector<ValueId>&) {
           return b.Iota({d, {3, 5, 2}}, 1);
         }});
  }
  cases.push_back(
      {"iota_causal_mask", Op::kIota, {F32({16, 16})}, [](FunctionBuilder& b, const std::vector<ValueId>& p) {
         ValueId row = b.Iota(I32({16, 16}), 0), col = b.Iota(I32({16, 16}), 1);
         return b.Select(b.Compare(col, row, ComparisonDirection::kLE), p[0], b.Full(-1e9, F32({16, 16})));
       }});
  // Reductions: trailing, leading, middle, all, non-adjacent, split, integer, max.
  struct Red {
    Shape shape;
    std::vector<int64_t> dims;
  };
  const std::vector<Red> reds = {{{7, 129}, {1}},     {{129, 7}, {0}},
                                 {{3, 17, 5}, {1}},   {{3, 4, 5}, {0, 1, 2}},
                                 {{3, 4, 5}, {0, 2}}, {{3, 20000}, {1}},
                                 {{20000, 3}, {0}},   {{2, 9000, 2}, {1}},
                                 {{1029}, {0}},       {{4, 600, 1}, {1, 2}},
                                 {{600, 4}, {1}},     {{5, 1, 3}, {1}},
                                 {{2, 3}, {}},        {{}, {}},
                                 {{0, 3}, {0}},       {{40, 1300}, {0}}};
  for (const Red& r : reds) {
    const std::string name =
        absl::StrCat(ShapeName(r.shape), "_over_", r.dims.empty() ? "none" : absl::StrJoin(r.dims, ""));
    const double atol = NumElements(r.shape) > 5000 ? 2e-5 : 1e-6;
    cases.push_back({absl::StrCat("reduce_sum_", name),
                     Op::kReduce,
                     {F32(r.shape)},
                     [r](FunctionBuilder& b, const std::vector<ValueId>& p) { return b.ReduceSum(p[0], r.dims); },
                     1e-5,
                     atol});
    cases.push_back({absl::StrCat("reduce_max_", name),
                     Op::kReduce,
                     {F32(r.shape)},
                     [r](FunctionBuilder& b, const std::vector<ValueId>& p) { return b.ReduceMax(p[0], r.dims); }});
  }
  for (DType d : {DType::kI32, DType::kI64}) {
    cases.push_back({absl::StrCat("reduce_sum_", MlirName(d)),
                     Op::kReduce,
                     {TensorType{d, {9, 33, 4}}},
                     [](FunctionBuilder& b, const std::vector<ValueId>& p) { return b.ReduceSum(p[0], {1}); },
                     0,
                     0,
                     {{-1000, 1000}}});
    cases.push_back({absl::StrCat("reduce_max_", MlirName(d)),
                     Op::kReduce,
                     {TensorType{d, {9, 33, 4}}},
                     [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                       return b.ReduceMax(p[0], {0, 2});
                     },
                     0,
                     0,
                     {{-1000, 1000}}});
  }
  cases.push_back({"reduce_sum_with_init_param",
                   Op::kReduce,
                   {F32({6, 40}), F32({})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     Attributes a;
                     a.dims = {1};
                     a.reduce_kind = ReduceKind::kSum;
                     return b.Emit(Op::kReduce, {p[0], p[1]}, a);
                   },
                   1e-6,
                   1e-6});
  cases.push_back(
      {"reduce_sum_of_squares_fused",
       Op::kReduce,
       {F32({24, 130})},
       [](FunctionBuilder& b, const std::vector<ValueId>& p) { return b.ReduceSum(b.Mul(p[0], p[0]), {1}); },
       1e-5,
       1e-6});
  // A reduction whose result is used, through a broadcast, next to its own input: the two
  // cannot share one loop (the result exists only after the loop).
  cases.push_back({"reduce_max_then_subtract",
                   Op::kReduce,
                   {F32({12, 70})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     ValueId scaled = b.Mul(p[0], p[0]);
                     ValueId m = b.BroadcastInDim(b.ReduceMax(scaled, {1}), {12, 70}, {0});
                     return b.Add(b.Sub(scaled, m),
                                  b.Convert(b.Compare(scaled, m, ComparisonDirection::kEQ), DType::kF32));
                   },
                   1e-6,
                   1e-6});
  // A softmax and a LayerNorm over rows: one row kernel each on the Vulkan backend
  // (libs/kernels/vulkan/src/kernel_groups.h), the softmax's rows longer than its work group.
  cases.push_back({"reduce_softmax_rows",
                   Op::kReduce,
                   {F32({3, 5, 300})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     const Shape s = {3, 5, 300};
                     ValueId e = b.Exp(b.Sub(p[0], b.BroadcastInDim(b.ReduceMax(p[0], {2}), s, {0, 1})));
                     return b.Div(e, b.BroadcastInDim(b.ReduceSum(e, {2}), s, {0, 1}));
                   },
                   1e-5,
                   1e-6});
  cases.push_back({"reduce_layer_norm_rows",
                   Op::kReduce,
                   {F32({7, 3, 45})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     const Shape s = {7, 3, 45};
                     ValueId inv = b.ScalarConstant(1.0 / 45);
                     ValueId mean = b.BMul(b.ReduceSum(p[0], {2}), inv);
                     ValueId c = b.Sub(p[0], b.BroadcastInDim(mean, s, {0, 1}));
                     ValueId var = b.BMul(b.ReduceSum(b.Mul(c, c), {2}), inv);
                     ValueId rstd = b.Rsqrt(b.BAdd(var, b.ScalarConstant(1e-5)));
                     return b.Mul(c, b.BroadcastInDim(rstd, s, {0, 1}));
                   },
                   1e-5,
                   1e-5});
  cases.push_back({"reduce_sum_of_transpose",
                   Op::kReduce,
                   {F32({30, 20, 3})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     return b.ReduceSum(b.Transpose(p[0], {2, 0, 1}), {1});
                   },
                   1e-5,
                   1e-6});
  // dot_general: plain, transposed operands, batched, multiple and reordered contracting
  // dimensions, batch dimensions in the middle, vectors, outer products, views.
  auto dot = [](DotDims d) {
    return [d](FunctionBuilder& b, const std::vector<ValueId>& p) { return b.DotGeneral(p[0], p[1], d); };
  };
  struct DotCase {
    std::string name;
    Shape lhs, rhs;
    DotDims dims;
  };
  const std::vector<DotCase> dots = {
      {"matmul", {5, 7}, {7, 3}, {{}, {}, {1}, {0}}},
      {"matmul_large", {96, 128}, {128, 65}, {{}, {}, {1}, {0}}},
      {"lhs_transposed", {7, 5}, {7, 3}, {{}, {}, {0}, {0}}},
      {"rhs_transposed", {5, 7}, {3, 7}, {{}, {}, {1}, {1}}},
      {"both_transposed", {7, 5}, {3, 7}, {{}, {}, {0}, {1}}},
      {"batched", {4, 5, 6}, {4, 6, 7}, {{0}, {0}, {2}, {1}}},
      {"batched_nt", {2, 3, 16, 8}, {2, 3, 16, 8}, {{0, 1}, {0, 1}, {3}, {3}}},
      {"two_contracting", {2, 3, 4}, {3, 4, 5}, {{}, {}, {1, 2}, {0, 1}}},
      {"reordered_contracting", {2, 4, 3}, {3, 4, 5}, {{}, {}, {2, 1}, {0, 1}}},
      {"batch_in_middle", {3, 2, 5}, {5, 2, 4}, {{1}, {1}, {2}, {0}}},
      {"vector_dot", {129}, {129}, {{}, {}, {0}, {0}}},
      {"outer_product", {3}, {4}, {{}, {}, {}, {}}},
      {"ones", {1, 7}, {7, 1}, {{}, {}, {1}, {0}}},
      {"empty_contraction", {3, 0}, {0, 2}, {{}, {}, {1}, {0}}},
      {"free_dims_split", {2, 3, 7}, {7, 2, 2}, {{}, {}, {2}, {0}}},
  };
  for (const DotCase& d : dots) {
    cases.push_back({absl::StrCat("dot_", d.name), Op::kDotGeneral, {F32(d.lhs), F32(d.rhs)}, dot(d.dims), 1e-5, 1e-5});
  }
  cases.push_back({"dot_column_slice_lhs",
                   Op::kDotGeneral,
                   {F32({6, 12}), F32({4, 5})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     return b.MatMul(b.Slice(p[0], {0, 4}, {6, 8}), p[1]);
                   },
                   1e-5,
                   1e-5});
  cases.push_back({"dot_broadcast_operand",
                   Op::kDotGeneral,
                   {F32({5}), F32({5, 3})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     return b.MatMul(b.BroadcastInDim(p[0], {4, 5}, {1}), p[1]);
                   },
                   1e-5,
                   1e-5});
  cases.push_back({"dot_attention_heads",
                   Op::kDotGeneral,
                   {F32({2, 8, 48})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     // q, k = split(qkv); [B, T, H, D] -> [B, H, T, D]; q @ k^T.
                     ValueId q = b.Slice(p[0], {0, 0, 0}, {2, 8, 16});
                     ValueId k = b.Slice(p[0], {0, 0, 16}, {2, 8, 32});
                     auto heads = [&](ValueId x) { return b.Transpose(b.Reshape(x, {2, 8, 2, 8}), {0, 2, 1, 3}); };
                     return b.DotGeneral(heads(q), heads(k), {{0, 1}, {0, 1}, {3}, {3}});
                   },
                   1e-5,
                   1e-5});
  // A product followed by a transpose: written straight in the transposed order where sgemm
  // can (heads back to [B, T, H, D]), not where the transpose swaps rows and columns.
  cases.push_back({"dot_then_transpose_heads",
                   Op::kDotGeneral,
                   {F32({2, 3, 8, 8}), F32({2, 3, 8, 5})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     ValueId y = b.DotGeneral(p[0], p[1], {{0, 1}, {0, 1}, {3}, {2}});  // [2, 3, 8, 5]
                     return b.Reshape(b.Transpose(y, {0, 2, 1, 3}), {2, 8, 15});
                   },
                   1e-5,
                   1e-5});
  cases.push_back({"dot_then_transpose_rows_cols",
                   Op::kDotGeneral,
                   {F32({6, 4}), F32({4, 7})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     return b.Transpose(b.MatMul(p[0], p[1]), {1, 0});
                   },
                   1e-5,
                   1e-5});
  // gather / scatter rows, with repeated and out-of-range indices.
  cases.push_back({"gather_rows_i32",
                   Op::kGather,
                   {F32({10, 4}), I32({13})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) { return b.Gather(p[0], p[1]); },
                   0,
                   0,
                   {{}, {-3, 13}}});
  cases.push_back({"gather_2d_indices_i64",
                   Op::kGather,
                   {F32({65, 3, 2}), I64({2, 3})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) { return b.Gather(p[0], p[1]); },
                   0,
                   0,
                   {{}, {0, 65}}});
  cases.push_back({"gather_from_vector",
                   Op::kGather,
                   {I32({10}), I32({7})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) { return b.Gather(p[0], p[1]); },
                   0,
                   0,
                   {{-9, 9}, {0, 10}}});
  cases.push_back({"scatter_add_f32",
                   Op::kScatter,
                   {F32({10, 4}), I32({25}), F32({25, 4})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) { return b.ScatterAdd(p[0], p[1], p[2]); },
                   1e-6,
                   1e-6,
                   {{}, {-2, 12}, {}}});
  cases.push_back({"scatter_add_into_zeros",
                   Op::kScatter,
                   {I64({2, 40}), F32({2, 40, 64})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     return b.ScatterAdd(b.Full(0.0, F32({65, 64})), p[0], p[1]);
                   },
                   1e-6,
                   1e-6,
                   {{0, 65}, {}}});
  cases.push_back({"scatter_add_i32",
                   Op::kScatter,
                   {I32({6, 3}), I64({9}), I32({9, 3})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) { return b.ScatterAdd(p[0], p[1], p[2]); },
                   0,
                   0,
                   {{-9, 9}, {0, 6}, {-9, 9}}});
  // StableHLO's general forms, as the importer emits them (general_indexing.h): the
  // cross-entropy point pick, windows with clamped starts, batching dims, and scatter's
  // skipped out-of-range elements and assign region.
  cases.push_back({"gather_point_pick",
                   Op::kGather,
                   {F32({48, 65}), I64({48, 1, 2})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     return EmitGather(b, p[0], p[1], {{}, {0, 1}, {}, {}, {0, 1}, 2}, {1, 1});
                   },
                   0,
                   0,
                   {{}, {-2, 70}}});
  cases.push_back({"gather_windows_batching",
                   Op::kGather,
                   {F32({2, 3, 4, 2}), I32({2, 2, 3, 2})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     return EmitGather(b, p[0], p[1], {{3, 4}, {1}, {0}, {1}, {2, 1}, 3}, {1, 1, 2, 2});
                   },
                   0,
                   0,
                   {{}, {-1, 5}}});
  cases.push_back({"scatter_windows_batching",
                   Op::kScatter,
                   {F32({2, 3, 4, 2}), I64({2, 2, 3, 2}), F32({2, 2, 3, 2, 2})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     return EmitScatter(b, p[0], p[1], p[2], {{3, 4}, {1}, {0}, {1}, {2, 1}, 3}, ScatterCombiner::kAdd);
                   },
                   1e-6,
                   1e-6,
                   {{}, {-1, 5}, {}}});
  cases.push_back({"scatter_assign_columns",
                   Op::kScatter,
                   {F32({4, 5}), F32({4, 2})},
                   [](FunctionBuilder& b, const std::vector<ValueId>& p) {
                     ValueId columns = b.Constant(Tensor::FromVector<int32_t>({1, 2}, {3, 1}));
                     return EmitScatter(b, p[0], columns, p[1], {{0}, {1}, {}, {}, {1}, 0}, ScatterCombiner::kAssign);
                   },
                   0,
                   0,
                   {{}, {}}});
  return cases;
}

}  // namespace pcp::conformance
