// IR text (generic MLIR form; programs arrive from the shepherd and from users): parse and
// verify; an accepted module prints to text that parses back to the same text.
#include "fuzz_target.h"
#include "pcp/autodiff/text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<pcp::Module> module = pcp::ParseModule(pcp::fuzz::AsText(data, size), "fuzz.mlir");
  if (!module.ok()) return 0;
  const std::string text = pcp::PrintModule(*module);
  absl::StatusOr<pcp::Module> again = pcp::ParseModule(text, "printed.mlir");
  PCP_FUZZ_CHECK(again.ok());
  PCP_FUZZ_CHECK(pcp::PrintModule(*again) == text);
  return 0;
}
