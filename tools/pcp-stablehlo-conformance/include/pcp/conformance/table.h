// Tallies case results per op and per suite (testdata, interpret) and renders them as the
// markdown of bench/results/stablehlo_conformance.md: totals, then per op the cases in scope,
// passed, failed (the commonest reason) and unsupported (the commonest things lacked).
//
//   Table table;
//   table.Add("testdata", "abs", "abs_float32_20_20.mlir", result);
//   std::string md = table.Markdown({"date: ...", "snapshot: ..."});
#ifndef PCP_CONFORMANCE_TABLE_H_
#define PCP_CONFORMANCE_TABLE_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "pcp/conformance/runner.h"

namespace pcp::conformance {

struct Tally {
  int passed = 0, failed = 0, unsupported = 0;
  int in_scope() const { return passed + failed; }
  std::map<std::string, int> failure_reasons;  // ReasonClass(reason) -> cases
  std::map<std::string, int> lacks;            // what is lacked -> cases
  void Add(const CaseResult& r);
};

// A failure's reason with positions and numbers blurred and a check's worst element left
// out, so that alike failures group.
std::string ReasonClass(const std::string& reason);

class Table {
 public:
  void Add(const std::string& suite, const std::string& op, const std::string& case_name, const CaseResult& r);
  const Tally& total() const { return total_; }
  // `header_lines` go first, one per line.
  std::string Markdown(const std::vector<std::string>& header_lines) const;

 private:
  Tally total_;
  std::map<std::string, Tally> suites_;
  std::map<std::pair<std::string, std::string>, Tally> ops_;   // (suite, op)
  std::vector<std::pair<std::string, std::string>> failures_;  // (case, reason)
};

}  // namespace pcp::conformance

#endif  // PCP_CONFORMANCE_TABLE_H_
