// pcp/base/utf8.h: sequence lengths at the edges of each UTF-8 form, and text made valid.
#include "pcp/base/utf8.h"

#include <string>

#include "gtest/gtest.h"

namespace pcp {
namespace {

TEST(Utf8Test, SequenceLengths) {
  EXPECT_EQ(Utf8SequenceLength(""), 0u);
  EXPECT_EQ(Utf8SequenceLength("a"), 1u);
  EXPECT_EQ(Utf8SequenceLength("\xC3\xA9"), 2u);          // é
  EXPECT_EQ(Utf8SequenceLength("\xE2\x82\xAC"), 3u);      // €
  EXPECT_EQ(Utf8SequenceLength("\xF0\x9F\x98\x80"), 4u);  // U+1F600
  EXPECT_EQ(Utf8SequenceLength("\x80"), 0u);              // a continuation byte alone
  EXPECT_EQ(Utf8SequenceLength("\xC3"), 0u);              // cut short
  EXPECT_EQ(Utf8SequenceLength("\xC0\xAF"), 0u);          // overlong '/'
  EXPECT_EQ(Utf8SequenceLength("\xE0\x80\xAF"), 0u);      // overlong
  EXPECT_EQ(Utf8SequenceLength("\xED\xA0\x80"), 0u);      // a UTF-16 surrogate
  EXPECT_EQ(Utf8SequenceLength("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(Utf8SequenceLength("\xFF"), 0u);
}

TEST(Utf8Test, InvalidBytesBecomeReplacementCharacters) {
  const std::string valid = "ROMEO: caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\n";
  EXPECT_EQ(ToValidUtf8(valid), valid);
  EXPECT_EQ(ToValidUtf8("ab\xFF"
                        "c"),
            "ab\xEF\xBF\xBD"
            "c");
  // Half a character at the end, and a lead byte followed by ASCII: one U+FFFD per byte.
  EXPECT_EQ(ToValidUtf8("x\xE2\x82"), "x\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(ToValidUtf8("\xC3"
                        "a"),
            "\xEF\xBF\xBD"
            "a");
  // Every byte value alone: the result is valid throughout.
  for (int b = 0; b < 256; ++b) {
    const std::string out = ToValidUtf8(std::string(1, static_cast<char>(b)));
    for (size_t i = 0; i < out.size();) {
      const size_t n = Utf8SequenceLength(absl::string_view(out).substr(i));
      ASSERT_GT(n, 0u) << "byte " << b;
      i += n;
    }
    EXPECT_EQ(out.size(), b < 0x80 ? 1u : 3u) << "byte " << b;
  }
}

}  // namespace
}  // namespace pcp
