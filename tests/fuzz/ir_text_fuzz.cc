// IR text (MLIR generic or pretty form, or both mixed; programs arrive from the shepherd, from
// users and from exporters such as JAX and torch-mlir): parse and verify; an accepted module
// prints, in either form, to text that parses back to the same module and the same text.
#include "fuzz_target.h"
#include "pcp/autodiff/text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<pcp::Module> module = pcp::ParseModule(pcp::fuzz::AsText(data, size), "fuzz.mlir");
  if (!module.ok()) return 0;
  const std::string text = pcp::PrintModule(*module);
  absl::StatusOr<pcp::Module> again = pcp::ParseModule(text, "printed.mlir");
  PCP_FUZZ_CHECK(again.ok());
  PCP_FUZZ_CHECK(pcp::PrintModule(*again) == text);
  const std::string pretty = pcp::PrintModule(*module, pcp::TextForm::kPretty);
  absl::StatusOr<pcp::Module> from_pretty = pcp::ParseModule(pretty, "pretty.mlir");
  PCP_FUZZ_CHECK(from_pretty.ok());
  PCP_FUZZ_CHECK(pcp::PrintModule(*from_pretty) == text);
  PCP_FUZZ_CHECK(pcp::PrintModule(*from_pretty, pcp::TextForm::kPretty) == pretty);
  return 0;
}
