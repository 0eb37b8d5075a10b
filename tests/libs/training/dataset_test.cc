#include "pcp/training/dataset.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace pcp {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// gmock string matchers want std::string; absl::Status::message() is absl::string_view.
std::string Message(const absl::Status& s) { return std::string(s.message()); }

const std::string kShakespeare = PCP_DATA_DIR "/tiny_shakespeare.txt";

// A fresh directory for this test's files.
std::string TestDir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  fs::path dir = fs::path(::testing::TempDir()) / "pcp_dataset_test" / info->name();
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

// Tokens 0, 1, ..., n-1 (mod 65536): a token's value tells its position.
TokenSequence Iota(int64_t n) {
  std::vector<uint16_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<uint16_t>(i);
  return TokenSequence(std::move(v));
}

TEST(DatasetTest, TextSplitIsNanoGpt90_10) {
  absl::StatusOr<Dataset> data = Dataset::LoadTextFile(kShakespeare, TokenizerKind::kChar, DataRoots::Unconfined());
  ASSERT_TRUE(data.ok()) << data.status();
  // nanoGPT's prepare.py: "train has 1,003,854 tokens", "val has 111,540 tokens".
  EXPECT_EQ(data->train().size(), 1003854);
  EXPECT_EQ(data->val().size(), 111540);
  EXPECT_EQ(data->vocab_size(), 65);
  ASSERT_TRUE(data->tokenizer().has_value());
  // "First Citizen:" starts the train split.
  std::vector<int32_t> head(data->train().data(), data->train().data() + 14);
  EXPECT_EQ(*data->tokenizer()->Decode(head), "First Citizen:");

  absl::StatusOr<Dataset> small = Dataset::FromText("abcdefghij", Tokenizer::Byte(), "ten");
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->train().size(), 9);
  EXPECT_EQ(small->val().size(), 1);
  EXPECT_EQ(small->val()[0], 'j');
  EXPECT_EQ(small->vocab_size(), 256);
}

TEST(DatasetTest, TextWithGivenTokenizerReportsUnknownCharacter) {
  const std::string dir = TestDir();
  WriteBytes(dir + "/t.txt", "abcabcabc#");
  absl::StatusOr<Dataset> data =
      Dataset::LoadTextFile(dir + "/t.txt", *Tokenizer::BuildChar("abc"), DataRoots::Unconfined());
  ASSERT_FALSE(data.ok());
  EXPECT_THAT(Message(data.status()), HasSubstr("t.txt"));
  EXPECT_THAT(Message(data.status()), HasSubstr("'#'"));
  EXPECT_THAT(Message(data.status()), HasSubstr("position 9"));
}

TEST(DatasetTest, BinFilesAreLittleEndianUint16) {
  const std::string dir = TestDir();
  // Tokens 1, 0x1234, 65535, 7 written byte by byte, low byte first.
  WriteBytes(dir + "/train.bin", std::string("\x01\x00\x34\x12\xff\xff\x07\x00", 8));
  WriteBytes(dir + "/val.bin", std::string("\x02\x00\x03\x00", 4));
  absl::StatusOr<Dataset> data = Dataset::LoadBinFiles(dir + "/train.bin", dir + "/val.bin", DataRoots::Unconfined());
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->train().ToVector(), (std::vector<uint16_t>{1, 0x1234, 65535, 7}));
  EXPECT_EQ(data->val().ToVector(), (std::vector<uint16_t>{2, 3}));
  EXPECT_FALSE(data->tokenizer().has_value());
  EXPECT_EQ(data->vocab_size(), 65536);

  // WriteTokenBin produces the same bytes.
  ASSERT_TRUE(WriteTokenBin(dir + "/copy.bin", data->train()).ok());
  std::ifstream in(dir + "/copy.bin", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes, std::string("\x01\x00\x34\x12\xff\xff\x07\x00", 8));
}

TEST(DatasetTest, LoadErrorsNameTheFileAndProblem) {
  const std::string dir = TestDir();
  WriteBytes(dir + "/odd.bin", std::string("\x01\x00\x02", 3));
  WriteBytes(dir + "/empty.bin", "");
  WriteBytes(dir + "/empty.txt", "");
  WriteBytes(dir + "/good.bin", std::string(200, '\0'));

  absl::StatusOr<Dataset> odd = Dataset::LoadBinFiles(dir + "/odd.bin", dir + "/good.bin", DataRoots::Unconfined());
  ASSERT_FALSE(odd.ok());
  EXPECT_THAT(Message(odd.status()), HasSubstr("odd.bin: odd byte count 3"));

  absl::StatusOr<Dataset> empty = Dataset::LoadBinFiles(dir + "/good.bin", dir + "/empty.bin", DataRoots::Unconfined());
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(Message(empty.status()), HasSubstr("empty.bin: empty token file"));

  absl::StatusOr<Dataset> missing =
      LoadDataset(DataFormat::kTextChar, dir + "/nope.txt", "", 8, DataRoots::Unconfined());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(missing.status()), HasSubstr(dir + "/nope.txt"));

  absl::StatusOr<Dataset> empty_text =
      LoadDataset(DataFormat::kTextByte, dir + "/empty.txt", "", 8, DataRoots::Unconfined());
  ASSERT_FALSE(empty_text.ok());
  EXPECT_THAT(Message(empty_text.status()), HasSubstr("empty.txt: empty text file"));

  // 100 train tokens but only 10 val tokens (text split), block 64.
  WriteBytes(dir + "/short.txt", std::string(100, 'a'));
  absl::StatusOr<Dataset> short_data =
      LoadDataset(DataFormat::kTextChar, dir + "/short.txt", "", 64, DataRoots::Unconfined());
  ASSERT_FALSE(short_data.ok());
  EXPECT_THAT(Message(short_data.status()), HasSubstr("short.txt"));
  EXPECT_THAT(Message(short_data.status()), HasSubstr("val split has 10 tokens, shorter than block_size + 1 = 65"));
  EXPECT_TRUE(LoadDataset(DataFormat::kTextChar, dir + "/short.txt", "", 9, DataRoots::Unconfined()).ok());
  EXPECT_FALSE(LoadDataset(DataFormat::kTextChar, dir + "/short.txt", "", 10, DataRoots::Unconfined()).ok());

  EXPECT_EQ(InferDataFormat("/d/train.bin"), DataFormat::kBin);
  EXPECT_EQ(InferDataFormat("/d/input.txt"), DataFormat::kTextChar);
}

TEST(BatchTest, YIsXShiftedByOneAndWindowsComeFromTheData) {
  TokenSequence data = Iota(1000);
  absl::StatusOr<Batch> batch = GetBatch(data, 12, 64, /*seed=*/1337, /*cursor=*/0);
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->x.dtype(), DType::kI32);
  EXPECT_EQ(batch->x.shape(), (Shape{12, 64}));
  EXPECT_EQ(batch->y.shape(), (Shape{12, 64}));
  const int32_t* x = batch->x.data<int32_t>();
  const int32_t* y = batch->y.data<int32_t>();
  std::vector<int64_t> offsets = *BatchOffsets(1000, 12, 64, 1337, 0);
  for (int b = 0; b < 12; ++b) {
    EXPECT_LE(offsets[b], 1000 - 64 - 1);
    for (int t = 0; t < 64; ++t) {
      EXPECT_EQ(x[b * 64 + t], offsets[b] + t);
      EXPECT_EQ(y[b * 64 + t], offsets[b] + t + 1);
    }
  }
}

TEST(BatchTest, OffsetsCoverNanoGptRangeInclusive) {
  // torch.randint(len(data) - block_size, ...): with len = block + 1 only offset 0; with
  // len = block + 2 both 0 and 1 (= len - block_size - 1) occur.
  EXPECT_EQ(*BatchOffsets(9, 50, 8, 3, 0), std::vector<int64_t>(50, 0));
  std::set<int64_t> seen;
  for (uint64_t cursor = 0; cursor < 20; ++cursor) {
    absl::StatusOr<std::vector<int64_t>> offsets = BatchOffsets(10, 8, 8, 3, cursor);
    ASSERT_TRUE(offsets.ok()) << offsets.status();
    seen.insert(offsets->begin(), offsets->end());
  }
  EXPECT_EQ(seen, (std::set<int64_t>{0, 1}));
  absl::StatusOr<std::vector<int64_t>> too_short = BatchOffsets(8, 1, 8, 3, 0);
  ASSERT_FALSE(too_short.ok());
  EXPECT_THAT(Message(too_short.status()), HasSubstr("shorter than block_size + 1 = 9"));
  EXPECT_FALSE(BatchOffsets(100, 0, 8, 3, 0).ok());
}

TEST(BatchTest, PinnedOffsetsAreReproducibleFromSeedAndCursor) {
  // From an independent Python transcription of rng.h (see rng_test.cc).
  EXPECT_EQ(*BatchOffsets(1003854, 4, 64, 1337, 0), (std::vector<int64_t>{703371, 651925, 116579, 38680}));
  EXPECT_EQ(*BatchOffsets(1003854, 4, 64, 1337, 7), (std::vector<int64_t>{999844, 176982, 790272, 446496}));
}

TEST(BatchTest, SamplerResumesFromItsState) {
  TokenSequence data = Iota(5000);
  BatchSampler sampler(/*seed=*/99);
  std::vector<Batch> batches;
  BatchSampler::State after_two;
  for (int i = 0; i < 5; ++i) {
    if (i == 2) after_two = sampler.state();
    batches.push_back(*sampler.Next(data, 4, 16));
  }
  EXPECT_EQ(sampler.state(), (BatchSampler::State{99, 5}));
  EXPECT_EQ(after_two, (BatchSampler::State{99, 2}));
  EXPECT_FALSE(BitwiseEqual(batches[0].x, batches[1].x));

  BatchSampler resumed(after_two);
  for (int i = 2; i < 5; ++i) {
    Batch b = *resumed.Next(data, 4, 16);
    EXPECT_TRUE(BitwiseEqual(b.x, batches[i].x)) << "batch " << i;
    EXPECT_TRUE(BitwiseEqual(b.y, batches[i].y)) << "batch " << i;
  }
  // Another seed gives other batches; a failed draw does not advance the cursor.
  EXPECT_FALSE(BitwiseEqual(BatchSampler(100).Next(data, 4, 16)->x, batches[0].x));
  EXPECT_FALSE(resumed.Next(Iota(10), 4, 16).ok());
  EXPECT_EQ(resumed.state().cursor, 5u);
}

TEST(ShardTest, ContiguousSlicesCoverTheTrainingTokens) {
  Dataset data(Iota(1000), Iota(100), std::nullopt);
  int64_t expected_begin = 0;
  const std::vector<int64_t> sizes = {333, 333, 334};  // [0,333) [333,666) [666,1000)
  for (int64_t i = 0; i < 3; ++i) {
    absl::StatusOr<TokenSequence> shard = data.Shard(i, 3, 64);
    ASSERT_TRUE(shard.ok()) << shard.status();
    EXPECT_EQ(shard->size(), sizes[i]);
    EXPECT_EQ((*shard)[0], expected_begin);
    EXPECT_EQ((*shard)[shard->size() - 1], expected_begin + sizes[i] - 1);
    expected_begin += sizes[i];
  }
  EXPECT_EQ(data.Shard(0, 1, 64)->size(), 1000);

  absl::StatusOr<TokenSequence> bad_index = data.Shard(3, 3, 64);
  ASSERT_FALSE(bad_index.ok());
  EXPECT_THAT(Message(bad_index.status()), HasSubstr("shard index 3 of 3"));
  EXPECT_FALSE(data.Shard(-1, 3, 64).ok());
  EXPECT_FALSE(data.Shard(0, 0, 64).ok());

  // Shard 5 of 16 is [312, 375): 63 tokens, less than block_size + 1 = 65.
  absl::StatusOr<TokenSequence> tiny = data.Shard(5, 16, 64);
  ASSERT_FALSE(tiny.ok());
  EXPECT_THAT(Message(tiny.status()), HasSubstr("shard 5 of 16 has 63 training tokens"));
  EXPECT_THAT(Message(tiny.status()), HasSubstr("block_size + 1 = 65"));
  // Exactly block_size + 1 tokens is enough for one window.
  EXPECT_TRUE(data.Shard(0, 10, 99).ok());
  EXPECT_FALSE(data.Shard(0, 10, 100).ok());
}

TEST(DatasetTest, CheckVocabFindsTooLargeIds) {
  Dataset data(Iota(100), Iota(10), std::nullopt);
  EXPECT_EQ(data.vocab_size(), 100);
  EXPECT_TRUE(data.CheckVocab(100).ok());
  absl::Status s = data.CheckVocab(50);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(Message(s), HasSubstr("token id 50 at position 50 of the train split"));
  EXPECT_FALSE(TokenSequence::FromIds(std::vector<int32_t>{1, 65536}).ok());
  EXPECT_EQ(TokenSequence::FromIds(std::vector<int32_t>{1, 65535})->ToVector(), (std::vector<uint16_t>{1, 65535}));
}

}  // namespace
}  // namespace pcp
