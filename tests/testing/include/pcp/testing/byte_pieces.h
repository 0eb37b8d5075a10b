// Bytes cut into pieces, as gRPC hands a message over in slices: for tests of code that reads
// values across piece boundaries (F32Pieces, the streamed chunk checks).
#ifndef PCP_TESTING_BYTE_PIECES_H_
#define PCP_TESTING_BYTE_PIECES_H_

#include <cstddef>
#include <vector>

#include "absl/strings/string_view.h"

namespace pcp::testing {

// `bytes` cut at `cuts` (ascending byte offsets; equal ones give empty pieces).
inline std::vector<absl::string_view> CutBytes(absl::string_view bytes, const std::vector<size_t>& cuts) {
  std::vector<absl::string_view> pieces;
  size_t at = 0;
  for (size_t c : cuts) {
    pieces.push_back(bytes.substr(at, c - at));
    at = c;
  }
  pieces.push_back(bytes.substr(at));
  return pieces;
}

}  // namespace pcp::testing

#endif  // PCP_TESTING_BYTE_PIECES_H_
