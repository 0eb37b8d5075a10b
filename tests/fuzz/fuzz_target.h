// The one entry point every fuzz target defines, as libFuzzer expects, plus a check that
// stops the run when a property the target asserts does not hold (a crash libFuzzer and the
// replay driver both report, with the input saved).
//
//   extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
//     absl::StatusOr<Json> doc = Json::Parse(pcp::fuzz::AsText(data, size));
//     if (doc.ok()) PCP_FUZZ_CHECK(Json::Parse(doc->Serialize()).ok());
//     return 0;
//   }
//
// Targets must return 0 for every input: the parsers under test answer bad bytes with a
// Status, so anything else (a crash, an uncaught exception, a sanitizer report, a failed
// PCP_FUZZ_CHECK) is a finding.
#ifndef PCP_TESTS_FUZZ_FUZZ_TARGET_H_
#define PCP_TESTS_FUZZ_FUZZ_TARGET_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/string_view.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// Optional one-time set-up (libFuzzer calls it if defined; so does the replay driver).
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace pcp::fuzz {

inline absl::string_view AsText(const uint8_t* data, size_t size) {
  return absl::string_view(reinterpret_cast<const char*>(data), size);
}

}  // namespace pcp::fuzz

#define PCP_FUZZ_CHECK(cond)                                                                \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      std::fprintf(stderr, "%s:%d: fuzz property failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                         \
    }                                                                                       \
  } while (0)

#endif  // PCP_TESTS_FUZZ_FUZZ_TARGET_H_
