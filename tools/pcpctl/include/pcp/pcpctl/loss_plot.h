// The loss plot of `pcpctl plot`: train and val loss of a job's history (RoundRecords)
// against rounds (left panel) and against tokens processed (right panel), as a PNG.
//
//   PCP_ASSIGN_OR_RETURN(std::string png, LossPlotPng(records, "job-0001 (tiny)"));
//   PCP_RETURN_IF_ERROR(WriteFileAtomic("loss.png", png));
#ifndef PCP_PCPCTL_LOSS_PLOT_H_
#define PCP_PCPCTL_LOSS_PLOT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pcp/v1/admin.pb.h"

namespace pcp::pcpctl {

// Train loss is a line through every record that has one; val loss a line with a marker
// at each evaluated round. FailedPrecondition when no record has a loss.
absl::StatusOr<std::string> LossPlotPng(const std::vector<v1::RoundRecord>& records, const std::string& title);

}  // namespace pcp::pcpctl

#endif  // PCP_PCPCTL_LOSS_PLOT_H_
