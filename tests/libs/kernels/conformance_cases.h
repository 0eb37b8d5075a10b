// Private to backend_conformance_test: the conformance cases, one small function about one op
// each, with its parameter types, input ranges and tolerance. Elementwise cases (every
// elementwise op over ranks 0-4 and block-crossing sizes), layout cases (reshape, transpose,
// broadcast, slices, concatenate, gather/scatter views) and compute cases (dot_general with
// unusual dimension numbers, reductions, convert, fused chains) and fused attention.
#ifndef PCP_TESTS_LIBS_KERNELS_CONFORMANCE_CASES_H_
#define PCP_TESTS_LIBS_KERNELS_CONFORMANCE_CASES_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "pcp/autodiff/builder.h"

namespace pcp::conformance {

using Body = std::function<ValueId(FunctionBuilder&, const std::vector<ValueId>&)>;

struct Range {
  double lo = -1.0, hi = 1.0;
};

struct Case {
  std::string name;
  Op op;  // the op under test
  std::vector<TensorType> params;
  Body body;
  double rtol = 1e-6, atol = 1e-6;
  std::vector<Range> ranges;  // per parameter; default [-1, 1)
};

inline TensorType F32(Shape s) { return {DType::kF32, std::move(s)}; }
inline TensorType I32(Shape s) { return {DType::kI32, std::move(s)}; }
inline TensorType I64(Shape s) { return {DType::kI64, std::move(s)}; }
inline TensorType Bool(Shape s) { return {DType::kBool, std::move(s)}; }

// "stablehlo.add" -> "add".
absl::string_view Short(Op op);
std::string ShapeName(const Shape& s);

std::vector<Case> ElementwiseCases();
std::vector<Case> LayoutCases();
std::vector<Case> ComputeCases();
// conformance_attention.cc: the pcp.attention* ops.
std::vector<Case> AttentionCases();

}  // namespace pcp::conformance

#endif  // PCP_TESTS_LIBS_KERNELS_CONFORMANCE_CASES_H_
