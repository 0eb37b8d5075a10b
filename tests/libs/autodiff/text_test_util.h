// Helpers for tests of the IR's text form (text.h): modules that use every op, the example
// modules kept in libs/autodiff/examples/, structural equality, and RunMlirOpt, which pipes
// text through LLVM's mlir-opt. Compile text_test_util.cc into a test to use them:
//
//   pcp_cc_test(NAME my_test SRCS my_test.cc text_test_util.cc DEPS pcp::autodiff ...)
//
//   absl::StatusOr<std::string> mlir_opt = FindMlirOpt();
//   if (!mlir_opt.ok()) GTEST_SKIP() << mlir_opt.status().message();
//   MlirOptResult r = RunMlirOpt(*mlir_opt, PrintFunction(train_step));
//   EXPECT_TRUE(r.status.ok()) << r.status.message() << "\n" << r.stderr_text;
#ifndef PCP_TESTS_LIBS_AUTODIFF_TEXT_TEST_UTIL_H_
#define PCP_TESTS_LIBS_AUTODIFF_TEXT_TEST_UTIL_H_

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "pcp/autodiff/ir.h"

namespace pcp::text_testing {

// A small function whose body uses `op` (plus constants or parameters feeding it), named
// after the op ("add", "dot_general", ...).
absl::StatusOr<Function> SingleOpFunction(Op op);
// Empty dimension lists, rank-0 indices, an outer product, a zero-size slice.
absl::StatusOr<Function> EdgeCaseFunction();
// `text` with 1 to 4 random edits (replace, insert or erase 1-8 characters), the characters
// drawn from `interesting` or any byte: what the parser tests feed it.
std::string MutateText(const std::string& text, std::mt19937& rng, const std::string& interesting);
// A module holding just `f`.
Module OneFunction(Function f);
// A function "constants" returning one constant per literal (with a failed EXPECT, and an
// empty function, when the builder refuses them).
Function ConstantsFunction(const std::vector<Tensor>& literals);
// One function per op, a composed function that chains many ops, and EdgeCaseFunction.
absl::StatusOr<Module> AllOpsModule();
// A function mixing several ops the way a model does (attention-like scores, softmax, an
// embedding gather and its scatter-add gradient).
absl::StatusOr<Function> ComposedFunction();

// The example modules checked into libs/autodiff/examples/<name>.mlir, in file order.
absl::StatusOr<std::vector<std::pair<std::string, Module>>> ExampleModules();
// The first line of every example file (the rest is PrintModule's output).
extern const char kExampleHeader[];

// Same functions, names, value types, params, instructions (op, operands, attributes with
// literals bit-exact), results and result names; the message names the first difference.
::testing::AssertionResult ModulesEqual(const Module& a, const Module& b);

// Path of mlir-opt: $PCP_MLIR_OPT, /usr/lib/llvm-15/bin/mlir-opt, or mlir-opt-15 / mlir-opt
// on PATH; NotFound with a reason if none is installed.
absl::StatusOr<std::string> FindMlirOpt();

struct MlirOptResult {
  absl::Status status;      // OK iff mlir-opt exited with status 0
  std::string output;       // what it printed
  std::string stderr_text;  // its diagnostics
};
// Runs `mlir_opt --allow-unregistered-dialect --mlir-print-op-generic <extra_args>` on `text`
// (without --mlir-print-op-generic unless `print_generic`: then mlir-opt prints the module and
// functions in their pretty form and the unregistered StableHLO ops generically).
MlirOptResult RunMlirOpt(const std::string& mlir_opt, const std::string& text,
                         const std::vector<std::string>& extra_args = {}, bool print_generic = true);

}  // namespace pcp::text_testing

#endif  // PCP_TESTS_LIBS_AUTODIFF_TEXT_TEST_UTIL_H_
