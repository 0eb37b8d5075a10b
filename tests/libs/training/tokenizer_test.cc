#include "pcp/training/tokenizer.h"

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pcp {
namespace {

using ::testing::HasSubstr;

// gmock string matchers want std::string; absl::Status::message() is absl::string_view.
std::string Message(const absl::Status& s) { return std::string(s.message()); }

std::string ReadShakespeare() {
  std::ifstream in(PCP_DATA_DIR "/tiny_shakespeare.txt", std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(TokenizerTest, CharVocabularyOfTinyShakespeareIsNanoGptS) {
  const std::string text = ReadShakespeare();
  ASSERT_EQ(text.size(), 1115394u) << "tiny_shakespeare.txt missing or changed";
  absl::StatusOr<Tokenizer> tok = Tokenizer::BuildChar(text);
  ASSERT_TRUE(tok.ok()) << tok.status();
  EXPECT_EQ(tok->kind(), TokenizerKind::kChar);
  EXPECT_EQ(tok->vocab_size(), 65);
  // nanoGPT's prepare.py prints these as "all the unique characters".
  EXPECT_EQ(tok->chars(), "\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz");
  // The example from nanoGPT's character-level walkthrough.
  absl::StatusOr<std::vector<int32_t>> ids = tok->Encode("hii there");
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(*ids, (std::vector<int32_t>{46, 47, 47, 1, 58, 46, 43, 56, 43}));

  absl::StatusOr<std::vector<int32_t>> all = tok->Encode(text);
  ASSERT_TRUE(all.ok()) << all.status();
  absl::StatusOr<std::string> back = tok->Decode(*all);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, text);
}

TEST(TokenizerTest, EncodeNamesUnknownCharacterAndPosition) {
  absl::StatusOr<Tokenizer> tok = Tokenizer::BuildChar("abc ");
  ASSERT_TRUE(tok.ok());
  absl::StatusOr<std::vector<int32_t>> ids = tok->Encode("ab cab~a");
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(ids.status()), HasSubstr("'~'"));
  EXPECT_THAT(Message(ids.status()), HasSubstr("position 6"));
  EXPECT_THAT(Message(tok->Encode("\n").status()), HasSubstr("'\\n' (byte 0x0a)"));
}

TEST(TokenizerTest, DecodeRejectsIdsOutsideVocabulary) {
  absl::StatusOr<Tokenizer> tok = Tokenizer::BuildChar("xyz");
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ(*tok->Decode(std::vector<int32_t>{2, 0, 1}), "zxy");
  absl::StatusOr<std::string> bad = tok->Decode(std::vector<int32_t>{0, 3});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(Message(bad.status()), HasSubstr("token id 3 at position 1"));
  EXPECT_FALSE(tok->Decode(std::vector<int32_t>{-1}).ok());
  EXPECT_FALSE(Tokenizer::BuildChar("").ok());
}

TEST(TokenizerTest, ByteTokenizerIsIdentityOnAllBytes) {
  Tokenizer tok = Tokenizer::Byte();
  EXPECT_EQ(tok.kind(), TokenizerKind::kByte);
  EXPECT_EQ(tok.vocab_size(), 256);
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  absl::StatusOr<std::vector<int32_t>> ids = tok.Encode(all);
  ASSERT_TRUE(ids.ok());
  for (int b = 0; b < 256; ++b) EXPECT_EQ((*ids)[b], b);
  EXPECT_EQ(*tok.Decode(*ids), all);
  EXPECT_FALSE(tok.Decode(std::vector<int32_t>{256}).ok());
}

TEST(TokenizerTest, SerializeRoundTrips) {
  absl::StatusOr<Tokenizer> chars = Tokenizer::BuildChar("ba\nab");
  ASSERT_TRUE(chars.ok());
  EXPECT_EQ(chars->Serialize(), "v1:char:0a6162");
  absl::StatusOr<Tokenizer> back = Tokenizer::Deserialize(chars->Serialize());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, *chars);
  EXPECT_EQ(*back->Encode("ab\n"), (std::vector<int32_t>{1, 2, 0}));
  EXPECT_EQ(*Tokenizer::Deserialize("v1:char:0A6162"), *chars);

  EXPECT_EQ(Tokenizer::Byte().Serialize(), "v1:byte");
  EXPECT_EQ(*Tokenizer::Deserialize("v1:byte"), Tokenizer::Byte());

  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  absl::StatusOr<Tokenizer> full = Tokenizer::BuildChar(all);
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(*Tokenizer::Deserialize(full->Serialize()), *full);
}

TEST(TokenizerTest, DeserializeRejectsMalformedText) {
  for (const char* bad : {"", "v2:byte", "v1:word", "v1:char:", "v1:char:0a0", "v1:char:zz", "v1:char:6160",
                          "v1:char:6161", "v1:byte:00"}) {
    absl::StatusOr<Tokenizer> t = Tokenizer::Deserialize(bad);
    EXPECT_FALSE(t.ok()) << "accepted '" << bad << "'";
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace pcp
