// Decides, before parsing, whether a StableHLO test module is one PCP claims to run: every op
// is in PCP's op list (op_list.h) or is structure PCP reads (func.*, call, return, the checks
// of StableHLO's test dialect), every tensor element type is one PCP computes, and every
// reduce / scatter region is one PCP has (reduce: add or maximum; scatter: add or assign).
// Scanning the text rather than parsing it lets an out-of-scope module name everything it
// lacks at once, instead of the first parse error.
//
//   ScopeReport r = ScanScope(text);
//   if (!r.in_scope()) std::cout << absl::StrJoin(r.lacks, ", ");  // "op stablehlo.pad", "type ui32"
//
// Element types: f32, i32, i64 and i1 are in scope. f64 is not ("type f64 (PCP computes f64
// in f32)"): the parser reads it but every backend computes it in f32, so an exact f64 check
// would not be a fair claim. f16 / bf16 (no arithmetic in the interpreter), i2..i16, ui*,
// complex, f8 and quantized types are out.
#ifndef PCP_CONFORMANCE_SCOPE_H_
#define PCP_CONFORMANCE_SCOPE_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace pcp::conformance {

struct ScopeReport {
  // What the module uses that PCP lacks, each named once, in order of first use:
  // "op stablehlo.pad", "type ui32", "custom_call @foo", "scatter with a multiply region",
  // "reduce with several inputs", "dynamic shape", "no checks" (nothing to compare against).
  std::vector<std::string> lacks;
  bool in_scope() const { return lacks.empty(); }
};

ScopeReport ScanScope(absl::string_view text);

}  // namespace pcp::conformance

#endif  // PCP_CONFORMANCE_SCOPE_H_
