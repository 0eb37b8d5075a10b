// JSON text (pcp::Json, used for safetensors headers, model configs and tool output):
// parse; what parses serializes to text that parses back to the same serialization.
#include "fuzz_target.h"
#include "pcp/base/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<pcp::Json> doc = pcp::Json::Parse(pcp::fuzz::AsText(data, size));
  if (!doc.ok()) return 0;
  const std::string text = doc->Serialize();
  absl::StatusOr<pcp::Json> again = pcp::Json::Parse(text);
  PCP_FUZZ_CHECK(again.ok());
  PCP_FUZZ_CHECK(again->Serialize() == text);
  return 0;
}
