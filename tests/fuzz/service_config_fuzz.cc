// The services' own config files (shepherd.yaml, supervisor.yaml): the first input byte
// picks which parser gets the rest.
#include "fuzz_target.h"
#include "pcp/shepherd/shepherd_config.h"
#include "pcp/supervisor/supervisor_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const absl::string_view text = pcp::fuzz::AsText(data + 1, size - 1);
  if (data[0] % 2 == 0) {
    (void)pcp::shepherd::ParseShepherdConfig(text, "shepherd.yaml");
  } else {
    (void)pcp::supervisor::ParseSupervisorConfig(text, "supervisor.yaml");
  }
  return 0;
}
