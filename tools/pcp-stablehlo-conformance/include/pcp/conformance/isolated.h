// Runs a test case in a child process, so that a crash or a hang in the code under test
// becomes one failed case ("crashed: signal 11 (Segmentation fault)", "timed out after 60 s")
// instead of ending a run over thousands of files. POSIX fork: call it from a process that
// has started no threads (create backends inside `run`, which runs in the child).
//
//   CaseResult r = RunIsolated([&] { return RunCase(text, name, options); }, /*timeout_s=*/60);
#ifndef PCP_CONFORMANCE_ISOLATED_H_
#define PCP_CONFORMANCE_ISOLATED_H_

#include <functional>

#include "pcp/conformance/runner.h"

namespace pcp::conformance {

CaseResult RunIsolated(const std::function<CaseResult()>& run, int timeout_s);

}  // namespace pcp::conformance

#endif  // PCP_CONFORMANCE_ISOLATED_H_
