#include "pcp/tensor/safetensors.h"

#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/base/file.h"
#include "pcp/tensor/convert.h"
#include "pcp/testing/temp_dir.h"

namespace pcp {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

namespace fs = std::filesystem;

std::string Msg(const absl::Status& s) { return std::string(s.message()); }

// 8-byte little-endian length (default: the header's size), header, data.
std::string RawFile(const std::string& header, const std::string& data = "",
                    std::optional<uint64_t> length = std::nullopt) {
  uint64_t n = length.value_or(header.size());
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return out + header + data;
}

// One tensor of every dtype, plus a scalar and an empty tensor.
std::vector<NamedTensor> AllDTypeTensors() {
  std::vector<NamedTensor> out;
  out.push_back({"f32", Tensor::FromVector<float>({2, 3}, {1.5f, -2, 0, 3.25f, 1e-30f, -7})});
  Tensor f16(DType::kF16, {3});
  Tensor bf16(DType::kBF16, {2, 2});
  for (int i = 0; i < 3; ++i) f16.data<uint16_t>()[i] = FloatToHalf(0.5f * i - 1);
  for (int i = 0; i < 4; ++i) bf16.data<uint16_t>()[i] = FloatToBFloat16(100.0f * i + 0.3f);
  out.push_back({"f16", f16});
  out.push_back({"bf16", bf16});
  out.push_back({"i32", Tensor::FromVector<int32_t>({4}, {INT32_MIN, -1, 0, INT32_MAX})});
  out.push_back({"i64", Tensor::FromVector<int64_t>({1, 2}, {INT64_MIN, INT64_MAX})});
  out.push_back({"bool", Tensor::FromVector<bool>({5}, {true, false, false, true, true})});
  out.push_back({"f64", Tensor::FromVector<double>({2}, {0.1, -1e300})});
  out.push_back({"scalar", Tensor::Scalar<float>(42.0f)});
  out.push_back({"empty", Tensor(DType::kI64, {0, 4})});
  return out;
}

void ExpectSameTensors(const std::vector<NamedTensor>& got, const std::vector<NamedTensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i].name);
    EXPECT_TRUE(BitwiseEqual(got[i].tensor, want[i].tensor))
        << want[i].name << ": " << got[i].tensor.TypeString() << " vs " << want[i].tensor.TypeString();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(got[i].tensor.raw_data()) % kTensorAlignment, 0u);
  }
}

TEST(SafetensorsTest, RoundTripsEveryDTypeInMemory) {
  std::vector<NamedTensor> tensors = AllDTypeTensors();
  SafetensorsMetadata metadata = {{"format", "pt"}, {"step", "100"}, {"note", "a \"q\"\n"}};
  std::string bytes = SerializeSafetensors(tensors, metadata);
  absl::StatusOr<SafetensorsContents> c = ParseSafetensors(bytes);
  ASSERT_TRUE(c.ok()) << c.status();
  ExpectSameTensors(c->tensors, tensors);
  EXPECT_EQ(c->metadata, metadata);
  ASSERT_NE(c->Find("bf16"), nullptr);
  EXPECT_EQ(c->Find("bf16")->dtype(), DType::kBF16);
  EXPECT_EQ(c->Find("nope"), nullptr);
  // Parsed tensors own their storage.
  bytes.assign(bytes.size(), '\0');
  EXPECT_EQ(c->Find("f32")->data<float>()[0], 1.5f);
}

TEST(SafetensorsTest, HeaderLayoutMatchesTheReferenceImplementation) {
  std::string bytes = SerializeSafetensors({{"w", Tensor::FromVector<float>({2}, {1, 2})},
                                            {"b", Tensor::FromVector<bool>({1}, {true})}},
                                           {{"k", "v"}});
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  const std::string json = R"({"__metadata__":{"k":"v"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                           R"("b":{"dtype":"BOOL","shape":[1],"data_offsets":[8,9]}})";
  std::string padded = json + std::string((8 - json.size() % 8) % 8, ' ');
  EXPECT_EQ(bytes.substr(8, n), padded);
  std::string data = bytes.substr(8 + n);
  ASSERT_EQ(data.size(), 9u);
  float w[2];
  std::memcpy(w, data.data(), 8);
  EXPECT_EQ(w[0], 1.0f);
  EXPECT_EQ(w[1], 2.0f);
  EXPECT_EQ(data[8], '\x01');
  // No tensors and no metadata: "{}" padded to 8 bytes.
  EXPECT_EQ(SerializeSafetensors({}), RawFile("{}      "));
  absl::StatusOr<SafetensorsContents> empty = ParseSafetensors(RawFile("{}      "));
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->tensors.empty());
}

TEST(SafetensorsTest, TensorsComeBackInDataOrderAndExtraFieldsAreIgnored) {
  std::string data(12, '\0');
  int32_t v[3] = {10, 20, 30};
  std::memcpy(data.data(), v, 12);
  std::string header = R"({"c":{"dtype":"I32","shape":[1],"data_offsets":[8,12]},)"
                       R"( "a":{"dtype":"I32","shape":[],"data_offsets":[4,8], "extra": [1]},)"
                       R"( "z":{"dtype":"I32","shape":[0],"data_offsets":[0,0]},)"
                       R"( "b":{"dtype":"I32","shape":[1],"data_offsets":[0,4]},)"
                       R"( "__metadata__":{"x":"1"}})";
  absl::StatusOr<SafetensorsContents> c = ParseSafetensors(RawFile(header, data));
  ASSERT_TRUE(c.ok()) << c.status();
  std::vector<std::string> names;
  for (const auto& t : c->tensors) names.push_back(t.name);
  EXPECT_THAT(names, ElementsAre("z", "b", "a", "c"));
  EXPECT_EQ(c->Find("a")->rank(), 0);
  EXPECT_EQ(c->Find("a")->data<int32_t>()[0], 20);
  EXPECT_EQ(c->Find("c")->data<int32_t>()[0], 30);
  EXPECT_THAT(c->metadata, ElementsAre(Pair("x", "1")));
}

struct CorruptCase {
  const char* what;
  std::string bytes;
  const char* expected;
};

std::string F32Header(const std::string& shape, const std::string& offsets, const std::string& dtype = "\"F32\"") {
  return R"({"t":{"dtype":)" + dtype + R"(,"shape":)" + shape + R"(,"data_offsets":)" + offsets + "}}";
}

std::vector<CorruptCase> CorruptCases() {
  const std::string d24(24, '\0');
  return {
      {"shorter than 8 bytes", std::string(5, '\0'), "file is 5 bytes, too short for the 8-byte header length"},
      {"header length beyond file", RawFile("{}", "", 1000), "header length 1000 exceeds the 2 bytes that follow"},
      {"header length absurd", RawFile("{}", "", uint64_t{1} << 62), "exceeds the limit of 100000000 bytes"},
      {"bad JSON", RawFile("{\"t\": {\"dtype\" \"F32\"}}"),
       "invalid JSON header: 1:16: expected ':' after an object key"},
      {"bad JSON, line 2", RawFile("{\n  \"t\": [1,]}"), "invalid JSON header: 2:11: expected a value"},
      {"header not an object", RawFile("[1, 2]  "), "header must be a JSON object, found array"},
      {"entry not an object", RawFile(R"({"t": 3})"), "tensor 't': expected an object, found number"},
      {"unknown dtype", RawFile(F32Header("[3]", "[0,3]", "\"F8_E4M3\""), "abc"),
       "tensor 't': unsupported safetensors dtype 'F8_E4M3'"},
      {"dtype not a string", RawFile(F32Header("[3]", "[0,24]", "7"), d24),
       "tensor 't': \"dtype\" must be a JSON string, found number"},
      {"missing dtype", RawFile(R"({"t":{"shape":[1],"data_offsets":[0,4]}})", "abcd"),
       "tensor 't': missing \"dtype\""},
      {"missing shape", RawFile(R"({"t":{"dtype":"F32","data_offsets":[0,4]}})", "abcd"),
       "tensor 't': missing \"shape\""},
      {"byte count mismatch", RawFile(F32Header("[2,3]", "[0,20]"), std::string(20, '\0')),
       "tensor 't': shape [2,3] of F32 needs 24 bytes but data_offsets [0, 20] span 20"},
      {"negative dimension", RawFile(F32Header("[-2,3]", "[0,24]"), d24),
       "tensor 't': shape dimension 0: expected a non-negative integer, found -2"},
      {"fractional dimension", RawFile(F32Header("[2.5]", "[0,10]"), std::string(10, '\0')),
       "shape dimension 0: expected a non-negative integer, found 2.5"},
      {"string dimension", RawFile(F32Header("[\"2\"]", "[0,8]"), std::string(8, '\0')),
       "shape dimension 0: expected a non-negative integer, found string"},
      {"shape overflows", RawFile(F32Header("[4294967296,4294967296,0]", "[0,0]")),
       "tensor 't': shape [4294967296,4294967296,0] is too large"},
      {"offsets out of range", RawFile(F32Header("[3]", "[0,24]"), std::string(20, '\0')),
       "tensor 't': data_offsets [0, 24] are out of range: the data section is 20 bytes"},
      {"offsets reversed", RawFile(F32Header("[1]", "[8,4]"), std::string(8, '\0')),
       "data_offsets [8, 4] end before they begin"},
      {"offsets wrong arity", RawFile(F32Header("[1]", "[0,4,8]"), std::string(8, '\0')),
       "data_offsets must be [begin, end], found [0,4,8]"},
      {"negative offset", RawFile(F32Header("[1]", "[-4,0]"), std::string(8, '\0')),
       "data_offsets[0]: expected a non-negative integer, found -4"},
      {"overlapping offsets",
       RawFile(
           R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
           std::string(12, '\0')),
       "tensor 'b': data_offsets [4, 12] overlap tensor 'a' at [0, 8]"},
      {"gap between tensors",
       RawFile(
           R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
           std::string(12, '\0')),
       "tensor 'b': data_offsets [8, 12] leave a gap: the previous tensor data ends at 4"},
      {"trailing bytes", RawFile(F32Header("[1]", "[0,4]"), std::string(6, '\0')),
       "the data section is 6 bytes but the tensors cover only 4 (trailing bytes)"},
      {"duplicate names",
       RawFile(
           R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
           std::string(8, '\0')),
       "invalid JSON header: 1:55: duplicate key \"a\""},
      {"metadata not an object", RawFile(R"({"__metadata__":[]})"),
       "\"__metadata__\" must be an object of strings, found array"},
      {"metadata value not a string", RawFile(R"({"__metadata__":{"step":3}})"),
       "\"__metadata__\" value of 'step' must be a string, found number"},
  };
}

TEST(SafetensorsTest, CorruptInputsGiveSpecificErrors) {
  for (const CorruptCase& c : CorruptCases()) {
    absl::StatusOr<SafetensorsContents> parsed = ParseSafetensors(c.bytes);
    ASSERT_FALSE(parsed.ok()) << c.what;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << c.what;
    EXPECT_THAT(Msg(parsed.status()), HasSubstr(c.expected)) << c.what;
  }
}

class SafetensorsFileTest : public testing::TempDirTest {};

TEST_F(SafetensorsFileTest, WriteThenReadRoundTripsAndLeavesNoTempFile) {
  std::string path = dir_ + "/model.safetensors";
  std::vector<NamedTensor> tensors = AllDTypeTensors();
  ASSERT_TRUE(WriteSafetensorsFile(path, tensors, {{"step", "7"}}).ok());
  EXPECT_THAT(Listing(), ElementsAre("model.safetensors"));
  // Byte-identical to the in-memory serialization.
  EXPECT_EQ(*ReadFile(path), SerializeSafetensors(tensors, {{"step", "7"}}));
  absl::StatusOr<SafetensorsContents> c = ReadSafetensorsFile(path);
  ASSERT_TRUE(c.ok()) << c.status();
  ExpectSameTensors(c->tensors, tensors);
  EXPECT_THAT(c->metadata, ElementsAre(Pair("step", "7")));
  // Overwriting replaces the file atomically, still without leftovers.
  ASSERT_TRUE(WriteSafetensorsFile(path, {{"only", Tensor::Scalar<int64_t>(5)}}).ok());
  EXPECT_THAT(Listing(), ElementsAre("model.safetensors"));
  c = ReadSafetensorsFile(path);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->tensors.size(), 1u);
  EXPECT_EQ(c->tensors[0].tensor.data<int64_t>()[0], 5);
}

TEST_F(SafetensorsFileTest, InvalidInputIsRejectedBeforeWriting) {
  std::string path = dir_ + "/bad.safetensors";
  Tensor t = Tensor::Scalar<float>(1);
  struct {
    std::vector<NamedTensor> tensors;
    SafetensorsMetadata metadata;
    const char* expected;
  } cases[] = {
      {{{"a", t}, {"a", t}}, {}, "duplicate tensor name 'a'"},
      {{{"__metadata__", t}}, {}, "cannot be named \"__metadata__\""},
      {{{"", t}}, {}, "tensor #0 has an empty name"},
      {{{"x", Tensor()}}, {}, "tensor 'x' is invalid"},
      {{{"x", t}}, {{"k", "1"}, {"k", "2"}}, "duplicate metadata key 'k'"},
  };
  for (const auto& c : cases) {
    absl::Status s = WriteSafetensorsFile(path, c.tensors, c.metadata);
    ASSERT_FALSE(s.ok()) << c.expected;
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(Msg(s), HasSubstr(c.expected));
    EXPECT_THAT(Msg(s), HasSubstr(path));
  }
  EXPECT_TRUE(Listing().empty());
}

TEST_F(SafetensorsFileTest, ReadErrorsNameTheFile) {
  std::string missing = dir_ + "/missing.safetensors";
  absl::StatusOr<SafetensorsContents> c = ReadSafetensorsFile(missing);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Msg(c.status()), HasSubstr(missing));
  EXPECT_FALSE(ReadSafetensorsFile(dir_).ok());  // a directory
  for (const CorruptCase& cc : CorruptCases()) {
    std::string path = dir_ + "/corrupt.safetensors";
    ASSERT_TRUE(WriteFileAtomic(path, cc.bytes).ok());
    c = ReadSafetensorsFile(path);
    ASSERT_FALSE(c.ok()) << cc.what;
    EXPECT_THAT(Msg(c.status()), HasSubstr("'" + path + "': ")) << cc.what;
    EXPECT_THAT(Msg(c.status()), HasSubstr(cc.expected)) << cc.what;
  }
}

TEST(SafetensorsTest, EveryTruncationFailsCleanly) {
  std::string bytes = SerializeSafetensors(AllDTypeTensors(), {{"a", "b"}});
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(ParseSafetensors(absl::string_view(bytes).substr(0, n)).ok()) << n;
  }
  EXPECT_TRUE(ParseSafetensors(bytes).ok());
}

TEST(SafetensorsTest, RandomByteFlipsNeverCrash) {
  std::string good = SerializeSafetensors(AllDTypeTensors(), {{"a", "b"}});
  std::mt19937 rng(11);
  int rejected = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string bytes = good;
    size_t pos = rng() % (i % 2 ? bytes.size() : 8 + 200);  // favour the length and header
    bytes[pos] = static_cast<char>(rng());
    absl::StatusOr<SafetensorsContents> c = ParseSafetensors(bytes);
    if (!c.ok()) {
      ++rejected;
      EXPECT_FALSE(c.status().message().empty());
    }
  }
  EXPECT_GT(rejected, 100);
}

}  // namespace
}  // namespace pcp
