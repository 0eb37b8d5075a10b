// Job files (SubmitJob's YAML, from any Admin caller): parse and validate against a folder
// holding one small data file `d.txt`, confined to it as the shepherd confines to its data
// roots; an accepted job prints (ToYaml) to text that parses back to an equal job.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "fuzz_target.h"
#include "pcp/training/job_config.h"

namespace {
std::string* g_dir = nullptr;
pcp::DataRoots* g_roots = nullptr;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char path[] = "/tmp/pcp-job-fuzz-XXXXXX";
  if (mkdtemp(path) == nullptr) std::abort();
  g_dir = new std::string(path);
  std::ofstream out(*g_dir + "/d.txt");
  for (int i = 0; i < 64; ++i) out << "First Citizen:\nBefore we proceed any further, hear me speak.\n";
  absl::StatusOr<pcp::DataRoots> roots = pcp::DataRoots::Confined({*g_dir});
  if (!roots.ok()) std::abort();
  g_roots = new pcp::DataRoots(*std::move(roots));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (g_dir == nullptr) LLVMFuzzerInitialize(nullptr, nullptr);
  absl::StatusOr<pcp::JobConfig> job =
      pcp::ParseJobConfig(pcp::fuzz::AsText(data, size), "fuzz.yaml", *g_dir, *g_roots);
  if (!job.ok()) return 0;
  absl::StatusOr<pcp::JobConfig> again = pcp::ParseJobConfig(pcp::ToYaml(*job), "printed.yaml", *g_dir, *g_roots);
  PCP_FUZZ_CHECK(again.ok());
  PCP_FUZZ_CHECK(*again == *job);
  return 0;
}
