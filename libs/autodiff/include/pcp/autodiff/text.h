// The IR's text form: MLIR generic operation syntax with StableHLO op names, so LLVM's
// `mlir-opt --allow-unregistered-dialect` parses every module PCP prints. Printing then
// parsing gives back an identical module (literals bit-exact), and printing is deterministic.
//
//   std::string text = PrintModule(module);
//   absl::StatusOr<Module> m = ParseModule(text, "step.mlir");
//   // errors: "step.mlir:12:7: expected ')' after operands"
//
// Functions print as "func.func" with parameter and result names kept in arg_attrs /
// res_attrs ({pcp.name = "..."}), reduce/scatter bodies as regions, dot_general/gather/
// scatter dimension numbers as #stablehlo.* attributes.
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
