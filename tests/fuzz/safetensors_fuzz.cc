// safetensors files (checkpoints, imported parameters): parse from memory; every tensor of
// an accepted file lies inside the file.
#include "fuzz_target.h"
#include "pcp/tensor/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<pcp::SafetensorsContents> contents = pcp::ParseSafetensors(pcp::fuzz::AsText(data, size));
  (void)contents;
  return 0;
}
