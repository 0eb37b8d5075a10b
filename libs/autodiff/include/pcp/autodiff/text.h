// The IR's text form: MLIR generic operation syntax with StableHLO op names, so LLVM's
// `mlir-opt --allow-unregistered-dialect` parses every module PCP prints. Printing then
// parsing gives back an identical module (literals bit-exact), and printing is deterministic.
//
//   std::string text = PrintModule(module);
//   absl::StatusOr<Module> m = ParseModule(text, "step.mlir");
//   // errors: "step.mlir:12:7: expected ')' to close the operand list, got ':'"
//
// Functions print as "func.func" with parameter and result names kept in arg_attrs /
// res_attrs ({pcp.name = "..."}), reduce/scatter bodies as regions, dot_general/gather/
// scatter dimension numbers as #stablehlo.* attributes.
//
// The printed text is what `mlir-opt-15 --allow-unregistered-dialect --mlir-print-op-generic`
// prints back for it, up to how floats and non-splat literals are spelled
// (tests/libs/autodiff/mlir_opt_test.cc): attributes sorted by name,
// values %0, %1, ... and %arg0, ..., a region's values numbered after its function's
// (^bb0(%argP: tensor<f32>, %argP+1: tensor<f32>) and %N, P params, N instructions).
// Spellings, all accepted by mlir-opt 15 with unregistered dialects:
//   "stablehlo.reduce"(%x, %init) ({ ^bb0(...): %N = "stablehlo.add"|"stablehlo.maximum"(...)
//       "stablehlo.return"(%N) }) {dimensions = dense<[0, 1]> : tensor<2xi64>}
//   broadcast_dimensions / permutation / dimensions / start_indices / limit_indices / strides:
//       dense<[0, 1]> : tensor<2xi64>; dense<1> : tensor<3xi64> when all equal (as MLIR
//       prints it); dense<> : tensor<0xi64> when empty (array<i64: ...> is too new for 15)
//   iota_dimension / dimension: 0 : i64
//   comparison_direction = #stablehlo<comparison_direction GE>
//   dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = [0], rhs_batching_dimensions
//       = [0], lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]> (empty lists
//       left out, as StableHLO prints them)
//   gather: dimension_numbers = #stablehlo.gather<offset_dims = [k..], collapsed_slice_dims = [0],
//       start_index_map = [0], index_vector_dim = k>, slice_sizes = dense<[1, D...]> : tensor<Nxi64>
//   scatter: scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [k..],
//       inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = k>
//       with an add body (k = rank of the indices; only these row forms of ir.h parse)
//   constants: value = dense<1.000000e+00> : tensor<4xf32> for a splat (the shortest %.6e..%.8e
//       form that reads back bit-exactly; inf / nan as their bits, dense<0x7F800000>); otherwise
//       the raw little-endian bytes, dense<"0x0000803F..."> (i1 bit-packed, as MLIR stores it);
//       dense<> for no elements. Integers in decimal, i1 as true / false.
//   names: strings escaped as MLIR does ("a\22b" for a"b, "\\" for a backslash).
// The parser also takes what mlir-opt prints (nested lists dense<[[1.0, 2.0]]>, 9.99999974E-6,
// any SSA / block names, attributes in any order, // comments, functions without the module
// wrapper) and rejects anything PCP's IR cannot hold with an error naming the place.
#ifndef PCP_AUTODIFF_TEXT_H_
#define PCP_AUTODIFF_TEXT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pcp/autodiff/ir.h"

namespace pcp {

std::string PrintModule(const Module& module);
// A module holding just `function`.
std::string PrintFunction(const Function& function);
// Parses and verifies. `source_name` prefixes error positions (file:line:column).
absl::StatusOr<Module> ParseModule(absl::string_view text, absl::string_view source_name = "<input>");

}  // namespace pcp

#endif  // PCP_AUTODIFF_TEXT_H_
