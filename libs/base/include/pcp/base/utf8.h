// UTF-8 checks: the length of one valid sequence, and a string made valid for a protobuf
// `string` field (which parsers reject when it holds invalid UTF-8: a whole response lost).
//
//   Utf8SequenceLength("\xC3\xA9...") == 2;   // é
//   ToValidUtf8("ab\xFF" "c") == "ab\xEF\xBF\xBD" "c";   // the stray byte as U+FFFD
#ifndef PCP_BASE_UTF8_H_
#define PCP_BASE_UTF8_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace pcp {

// Length of the valid UTF-8 sequence at the start of `s` (1 for ASCII), or 0 if `s` is empty
// or starts with an invalid one (bad lead byte, missing continuation, overlong form, UTF-16
// surrogate, or above U+10FFFF).
size_t Utf8SequenceLength(absl::string_view s);

// `s` with every byte that does not begin a valid sequence (a byte-level model's stray bytes,
// a character cut in half) replaced by U+FFFD; valid text comes back unchanged.
std::string ToValidUtf8(absl::string_view s);

}  // namespace pcp

#endif  // PCP_BASE_UTF8_H_
