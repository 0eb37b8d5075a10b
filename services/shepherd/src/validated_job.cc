#include "pcp/shepherd/validated_job.h"

#include <utility>

#include "pcp/base/status_macros.h"

namespace pcp::shepherd {

absl::StatusOr<ValidatedJob> ValidateJob(absl::string_view yaml, absl::string_view file_name,
                                         const std::string& base_dir, const DataRoots& data_roots,
                                         const MemoryBudgets& budgets, std::optional<Dataset>* data) {
  ValidatedJob v;
  PCP_ASSIGN_OR_RETURN(v.config, ParseJobConfig(yaml, file_name, base_dir, data_roots));
  PCP_ASSIGN_OR_RETURN(v.memory, EstimateJobMemory(v.config), _ << file_name);
  PCP_RETURN_IF_ERROR(CheckMemoryBudgets(v.memory, budgets), _ << file_name);
  const int64_t declared_vocab = v.config.model.vocab_size;
  PCP_ASSIGN_OR_RETURN(Dataset read, LoadJobDataset(&v.config, data_roots), _ << file_name << ": data");
  if (v.config.model.vocab_size != declared_vocab) {
    PCP_ASSIGN_OR_RETURN(v.memory, EstimateJobMemory(v.config), _ << file_name);
    PCP_RETURN_IF_ERROR(CheckMemoryBudgets(v.memory, budgets), _ << file_name);
  }
  if (data != nullptr) data->emplace(std::move(read));
  return v;
}

}  // namespace pcp::shepherd
