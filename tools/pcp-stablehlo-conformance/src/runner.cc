#include "pcp/conformance/runner.h"

#include <algorithm>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "pcp/autodiff/interpreter.h"
#include "pcp/autodiff/text.h"
#include "pcp/base/status_macros.h"
#include "pcp/conformance/check_compare.h"
#include "pcp/conformance/scope.h"
#include "pcp/kernels/backend_factory.h"

namespace pcp::conformance {
namespace {

// The element-type words of JAX's test file names (abs_float32_20_20.mlir).
constexpr absl::string_view kTypeWords[] = {"bool",    "int4",     "int8",    "int16",   "int32",     "int64",
                                            "uint4",   "uint8",    "uint16",  "uint32",  "uint64",    "float8",
                                            "float16", "bfloat16", "float32", "float64", "complex64", "complex128"};

absl::StatusOr<std::vector<Tensor>> RunOnBackend(Backend& backend, const Function& f) {
  PCP_ASSIGN_OR_RETURN(std::unique_ptr<Executable> exe, backend.Compile(f));
  std::vector<std::unique_ptr<Buffer>> buffers;
  std::vector<Buffer*> results;
  for (ValueId r : f.results) {
    PCP_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> b, backend.Allocate(f.type(r)));
    results.push_back(b.get());
    buffers.push_back(std::move(b));
  }
  PCP_RETURN_IF_ERROR(exe->Run({}, results));
  std::vector<Tensor> out;
  for (Buffer* b : results) {
    PCP_ASSIGN_OR_RETURN(Tensor t, backend.CopyOut(*b));
    out.push_back(std::move(t));
  }
  return out;
}

// The first failing check of `checks` (those of `f`) on `values`, or "".
std::string FailedCheck(const std::vector<ParsedCheck>& checks, const Function& f, const std::vector<Tensor>& values) {
  for (const ParsedCheck& c : checks) {
    if (c.function != f.name) continue;
    CheckOutcome o =
        CompareCheck(c, values[static_cast<size_t>(c.lhs_result)], values[static_cast<size_t>(c.rhs_result)]);
    if (o.passed) continue;
    // The lhs result's name is "check.KIND@LINE:COL:lhs"; the message names the check so.
    absl::string_view name = f.result_names[static_cast<size_t>(c.lhs_result)];
    absl::ConsumeSuffix(&name, ":lhs");
    return absl::StrCat(name, ": ", o.detail);
  }
  return "";
}

}  // namespace

absl::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kPassed: return "passed";
    case Verdict::kFailed: return "failed";
    case Verdict::kUnsupported: return "unsupported";
  }
  return "?";
}

CaseResult RunCase(absl::string_view text, absl::string_view source_name, const RunOptions& options) {
  CaseResult result;
  ScopeReport scope = ScanScope(text);
  if (!scope.in_scope()) {
    result.verdict = Verdict::kUnsupported;
    result.lacks = std::move(scope.lacks);
    result.reason = absl::StrJoin(result.lacks, "; ");
    return result;
  }
  std::vector<ParsedCheck> checks;
  absl::StatusOr<Module> module = ParseModule(text, source_name, ParseOptions{.checks = &checks});
  if (!module.ok()) {
    result.reason = absl::StrCat("parse: ", module.status().message());
    return result;
  }
  std::vector<std::unique_ptr<Backend>> backends;
  for (const std::string& name : options.backends) {
    absl::StatusOr<std::unique_ptr<Backend>> b = CreateBackend(name, options.threads);
    if (!b.ok()) {
      result.reason = absl::StrCat(name, ": ", b.status().message());
      return result;
    }
    backends.push_back(*std::move(b));
  }
  // Every evaluator runs every check, so that a failure says which of them disagree.
  std::vector<std::string> failures;
  for (const Function& f : module->functions) {
    bool has_checks = false;
    for (const ParsedCheck& c : checks) has_checks |= c.function == f.name;
    if (!has_checks || !f.params.empty()) continue;  // a function with arguments runs only when called
    for (const ParsedCheck& c : checks) result.checks += c.function == f.name ? 1 : 0;
    absl::StatusOr<std::vector<Tensor>> reference = Interpret(f, {});
    if (!reference.ok()) {
      failures.push_back(absl::StrCat("interpreter: @", f.name, ": ", reference.status().message()));
    } else if (std::string failed = FailedCheck(checks, f, *reference); !failed.empty()) {
      failures.push_back(absl::StrCat("interpreter: ", failed));
    }
    for (const std::unique_ptr<Backend>& backend : backends) {
      absl::StatusOr<std::vector<Tensor>> values = RunOnBackend(*backend, f);
      if (!values.ok()) {
        failures.push_back(absl::StrCat(backend->Name(), ": @", f.name, ": ", values.status().message()));
      } else if (std::string failed = FailedCheck(checks, f, *values); !failed.empty()) {
        failures.push_back(absl::StrCat(backend->Name(), ": ", failed));
      }
    }
  }
  if (!failures.empty()) {
    result.reason = absl::StrJoin(failures, "; ");
    return result;
  }
  if (result.checks == 0) {
    result.verdict = Verdict::kUnsupported;
    result.lacks = {"no checks"};
    result.reason = "no checks";
    return result;
  }
  result.verdict = Verdict::kPassed;
  return result;
}

std::vector<std::string> SplitCases(absl::string_view text) {
  std::vector<std::string> cases;
  std::string current;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(line, "// -----")) {
      cases.push_back(std::move(current));
      current.clear();
      continue;
    }
    absl::StrAppend(&current, line, "\n");
  }
  cases.push_back(std::move(current));
  return cases;
}

std::string TableOp(absl::string_view file_name) {
  absl::string_view stem = file_name.substr(file_name.rfind('/') + 1);
  if (absl::EndsWith(stem, ".mlir")) stem.remove_suffix(5);
  std::vector<absl::string_view> parts = absl::StrSplit(stem, '_');
  std::vector<absl::string_view> op;
  for (absl::string_view p : parts) {
    if (std::find(std::begin(kTypeWords), std::end(kTypeWords), p) != std::end(kTypeWords) ||
        absl::StartsWith(p, "float8")) {
      if (!op.empty()) return absl::StrJoin(op, "_");
    }
    op.push_back(p);
  }
  return std::string(stem);
}

}  // namespace pcp::conformance
