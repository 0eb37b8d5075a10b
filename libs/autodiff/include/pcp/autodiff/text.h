// The IR's text form: MLIR with StableHLO op names, in either of MLIR's two syntaxes.
//
//   std::string text = PrintModule(module);                        // generic form (default)
//   std::string pretty = PrintModule(module, TextForm::kPretty);   // pretty (custom) form
//   absl::StatusOr<Module> m = ParseModule(text, "step.mlir");      // either form, or both mixed
//   // errors: "step.mlir:12:7: expected ')' to close the operand list, got ':'"
//
// Printing then parsing gives back an identical module (literals bit-exact) in both forms,
// and printing is deterministic.
//
// ---- Generic form (the default printer output) -------------------------------------------
// MLIR's generic operation syntax, so LLVM's `mlir-opt --allow-unregistered-dialect` parses
// every module PCP prints. Functions print as "func.func" with parameter and result names kept
// in arg_attrs / res_attrs ({pcp.name = "..."}), reduce/scatter bodies as regions,
// dot_general/gather/scatter dimension numbers as #stablehlo.* attributes.
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
// The parser also takes what mlir-opt and newer MLIR print: nested lists dense<[[1.0, 2.0]]>,
// 9.99999974E-6, any SSA / block names, attributes in any order, properties <{...}> beside or
// instead of the attribute dictionary, array<i64: 1, 2> lists, compare_type (FLOAT / SIGNED /
// UNSIGNED as the operands' default; TOTALORDER is rejected), precision_config (ignored: PCP
// computes at least that precisely), sym_visibility, exporters' metadata beside pcp.name in
// arg_attrs / res_attrs, // comments, functions without the module wrapper.
//
// ---- Pretty form (StableHLO's custom syntax, as JAX and torch-mlir export it) ---------------
//   module @m attributes {mhlo.num_partitions = 1 : i32} {
//     func.func public @main(%arg0: tensor<4x8xf32> {pcp.name = "x"}) -> (tensor<f32> {jax.result_info = ""}) {
//       %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
//       %w = stablehlo.constant dense_resource<torch_tensor_8_torch.float32> : tensor<8xf32>
//       %0 = stablehlo.broadcast_in_dim %w, dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>
//       %1 = stablehlo.add %arg0, %0 : tensor<4x8xf32> loc(#loc3)
//       %2 = stablehlo.reduce(%1 init: %cst) applies stablehlo.maximum across dimensions = [0, 1]
//            : (tensor<4x8xf32>, tensor<f32>) -> tensor<f32>
//       return %2 : tensor<f32>
//     }
//   }
//   #loc3 = loc("model.py":3:4)
//   {-# dialect_resources: { builtin: { torch_tensor_8_torch.float32: "0x04000000..." } } #-}
// Ops: stablehlo.OP %a, %b : t (or : (a, b) -> r) for elementwise ops and convert;
// chlo.erf %a : t -> t; select %p, %a, %b : tp, t; compare GT, %a, %b[, FLOAT] : (..) -> ..;
// broadcast_in_dim / transpose %a, dims = [..]; reshape %a; slice %a [s:l, s:l:stride];
// concatenate %a, %b, dim = N; iota dim = N : t; dot_general %a, %b[, batching_dims = [..] x
// [..]][, contracting_dims = [..] x [..]][, precision = [DEFAULT, ..]]; reduce(%x init: %c)
// applies stablehlo.add|maximum across dimensions = [..], or the same with `reducer(%a: t, %b: t)
// { %m = stablehlo.add|maximum %a, %b : t  stablehlo.return %m : t }` after the type;
// stablehlo.constant / arith.constant dense<..> | dense_resource<key> : t; return / func.return /
// stablehlo.return. Gather and scatter have no pretty form: they stay generic, with <{...}>.
// Element types: f32, f64, f16, bf16, i32, i64, i1. f64 (which exporters use for scales,
// masks and shape arithmetic) parses and prints like f32, with 16 hex digits for its bits
// (dense<0x3FC0000000000000> : tensor<f64>); the parser keeps it as f64. The policy for it is
// passes.h's: fold f64 exactly (in double), then LowerF64ToF32 computes what is left in f32
// with a warning; no backend ever runs f64.
// stablehlo.and / or / not print like any elementwise op (`%2 = stablehlo.and %0, %1 :
// tensor<4xi1>`, `%3 = stablehlo.not %0 : tensor<4xi1>`), as do stablehlo.ceil and
// stablehlo.clamp (`stablehlo.clamp %lo, %x, %hi : t`, or `: (tensor<f32>, t, tensor<f32>) -> t`
// with scalar bounds, which the parser broadcasts: PCP's clamp is elementwise). A select's
// scalar predicate (`stablehlo.select %p, %a, %b : tensor<i1>, tensor<4xf32>`, as jnp.where
// writes it) is broadcast the same way.
// stablehlo.dynamic_iota is not an IR op: `%1 = stablehlo.dynamic_iota %0, dim = 0 :
// (tensor<1xi64>) -> tensor<4xi64>` (generic: {iota_dimension = 0 : i64}) with a static result
// type parses as `stablehlo.iota dim = 0 : tensor<4xi64>`; the shape operand must be a rank-1
// integer tensor with one entry per result dimension and, when it is a constant or folds to
// one, equal the result shape (else an error at the operand). A dynamic result type
// (tensor<?xi64>) is an error at line:col: PCP has static shapes only. Printing gives iota.
// Older exporters' spellings, rewritten while parsing into the ops above (text_compat.cc):
// old MHLO (byteir, tt-xla) reads as StableHLO: "mhlo.X" / mhlo.X is stablehlo.X for the ops
// PCP has (errors name the op as written: unsupported operation 'mhlo.rng'), #mhlo.dot /
// #mhlo.gather / #mhlo.scatter<..>, #mhlo<comparison_direction LT>, #mhlo<comparison_type ..>,
// #mhlo<precision ..> as their #stablehlo forms, and comparison_direction = "LT" as a string.
// The legacy `stablehlo.dot %a, %b[, precision = [..]] : (t1, t2) -> r` ("stablehlo.dot" /
// "mhlo.dot" generic, precision_config ignored) of rank-1 / rank-2 operands is dot_general
// contracting lhs's last dimension with rhs's first; other ranks are an error at the op.
// A generic "builtin.module"() <{sym_name = ..}> ({..}) {torch.debug_module_name = ..} reads
// past its name and the metadata attributes the pretty module does (which include tt-xla's
// mhlo.input_output_alias: buffer reuse, not values).
// stablehlo.reduce over i1 with an or body (`applies stablehlo.or`, or a region) is convert to
// f32, reduce maximum, compare NE 0, or the init; an and body is not(or(not x, not init));
// or / and over integers (bitwise) and other bodies (multiply, ...) stay errors.
// The generic "arith.constant"() {value = dense<..>} reads as stablehlo.constant, as the pretty
// form does; a custom call with several results (%0:3 = ...) is refused by its target's name.
// Locations (loc(...), #loc aliases) are skipped. Attributes that only shard, lay out or name
// things (mhlo.sharding, jax.result_info, ...; text_pretty_parser.cc lists them) are read past;
// any other attribute, op or element type PCP cannot honour is an error naming it at line:col.
// The pretty printer prints `module { func.func @name(...) ... }` with names in {pcp.name = ..}
// and every op as above (reduce always in the `applies` form).
// mlir-opt-15 cannot parse the pretty form: without the StableHLO dialect registered, MLIR
// only reads unregistered ops in the generic form.
#ifndef PCP_AUTODIFF_TEXT_H_
#define PCP_AUTODIFF_TEXT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pcp/autodiff/ir.h"

namespace pcp {

// MLIR's two syntaxes for an operation: generic (`"stablehlo.add"(%a, %b) : (t, t) -> t`) and
// pretty, the dialect's custom form (`stablehlo.add %a, %b : t`).
enum class TextForm { kGeneric, kPretty };

std::string PrintModule(const Module& module, TextForm form = TextForm::kGeneric);
// A module holding just `function`.
std::string PrintFunction(const Function& function, TextForm form = TextForm::kGeneric);
// Parses (either form, mixed freely) and verifies. `source_name` prefixes error positions (file:line:column).
absl::StatusOr<Module> ParseModule(absl::string_view text, absl::string_view source_name = "<input>");

// ---- Calls, custom calls and checks ----------------------------------------------------------
// `%0 = call @f(%a) : (t) -> r`, `%1:2 = func.call @g() : () -> (r1, r2)` (uses: %1#0, %1#1)
// and the generic "func.call"(...) {callee = @f} are inlined while parsing: PCP's IR has no
// call op. A callee may be defined anywhere in the file (before or after its caller); calls
// are linked once the file is read. Recursion is an error naming the cycle; arity and type
// mismatches are errors at the call's line:col. Called functions stay in the module too.
// stablehlo.custom_call is an error naming its target (PCP cannot run foreign code) and
// stablehlo.composite one naming its decomposition function, unless ParseOptions::checks
// asks for the checks of StableHLO's test suites.

// One check of StableHLO's test dialect (check.expect_eq[_const], expect_almost_eq[_const],
// expect_close, or stablehlo.custom_call @check.expect_{eq,almost_eq,close}; IREE's spelling
// check.expect_eq_const(%a, dense<..> : t) : t with parenthesised operands too). Its two operands
// (the constant of a _const form becomes a stablehlo.constant) are appended to the results of
// `function`, named "check.KIND@LINE:COL:lhs" and "...:rhs", so any backend computes them.
struct ParsedCheck {
  enum class Kind { kEq, kAlmostEq, kClose };
  std::string function;
  Kind kind = Kind::kEq;
  std::string op;                            // as written: "check.expect_eq_const", "custom_call @check.expect_close"
  bool custom_call = false;                  // the custom_call form (whose tolerances its runner picks)
  std::string location;                      // "source:line:col" of the op
  int lhs_result = -1;                       // index into the function's results: the computed value
  int rhs_result = -1;                       // and the expected one
  std::optional<double> tolerance;           // expect_almost_eq's `tolerance = X`, if written
  std::optional<uint64_t> min_ulp, max_ulp;  // expect_close's limits, if written
};

struct ParseOptions {
  // Not null: check ops and custom calls are recorded here instead of being
  // errors. For conformance tools, not for training jobs. Filled function by function.
  std::vector<ParsedCheck>* checks = nullptr;
};

absl::StatusOr<Module> ParseModule(absl::string_view text, absl::string_view source_name, const ParseOptions& options);

}  // namespace pcp

#endif  // PCP_AUTODIFF_TEXT_H_
