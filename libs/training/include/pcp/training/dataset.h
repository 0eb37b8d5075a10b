// Token data sets for language-model training, following nanoGPT: a text file tokenized and
// split 90/10 (train = the first int(n * 0.9) tokens), or nanoGPT's flat little-endian
// uint16 token files (train.bin / val.bin); contiguous shards for distributed workers; and
// random batches as nanoGPT's get_batch, reproducible from (seed, cursor).
//
//   PCP_ASSIGN_OR_RETURN(Dataset data,
//                        LoadDataset(DataFormat::kTextChar, "tiny_shakespeare.txt", "",
//                                    /*block_size=*/64, DataRoots::Unconfined()));
//   PCP_ASSIGN_OR_RETURN(TokenSequence mine, data.Shard(worker_index, worker_count, 64));
//   BatchSampler sampler(/*seed=*/1337);
//   PCP_ASSIGN_OR_RETURN(Batch b, sampler.Next(mine, /*batch_size=*/12, /*block_size=*/64));
//   // b.x, b.y: i32 tensors [12, 64]; b.y[r][t] == b.x[r][t + 1] (the next token).
//   BatchSampler::State saved = sampler.state();   // {seed, cursor}: store in a checkpoint
//   BatchSampler resumed(saved);                    // continues with the same batches
//
// Tokens are stored as uint16 (vocabularies up to 65536) in shared, immutable storage, so
// shards and copies of a TokenSequence are cheap views. Every file is read through a
// DataRoots (data_roots.h): a service confines what a caller may name; a local tool may not.
#ifndef PCP_TRAINING_DATASET_H_
#define PCP_TRAINING_DATASET_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "pcp/tensor/tensor.h"
#include "pcp/training/data_roots.h"
#include "pcp/training/tokenizer.h"

namespace pcp {

// The largest vocabulary whose ids fit the uint16 token storage.
inline constexpr int64_t kMaxTokenVocab = 65536;
// nanoGPT's train fraction: train = tokens[:int(n * 0.9)], val = the rest.
inline constexpr double kTrainFraction = 0.9;

enum class DataFormat { kTextChar, kTextByte, kBin };
// Every format with its name in job files: the one place the names are spelled.
inline constexpr std::pair<DataFormat, absl::string_view> kDataFormatNames[] = {
    {DataFormat::kTextChar, "text_char"},
    {DataFormat::kTextByte, "text_byte"},
    {DataFormat::kBin, "bin"},
};
absl::string_view DataFormatName(DataFormat format);
// ".bin" files are kBin; anything else is text, tokenized by characters (kTextChar).
DataFormat InferDataFormat(absl::string_view path);

// An immutable sequence of token ids; copies and slices share the storage.
class TokenSequence {
 public:
  TokenSequence() = default;
  explicit TokenSequence(std::vector<uint16_t> tokens);
  // Error if an id is outside [0, kMaxTokenVocab).
  static absl::StatusOr<TokenSequence> FromIds(absl::Span<const int32_t> ids);

  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const uint16_t* data() const { return storage_ ? storage_->data() + begin_ : nullptr; }
  uint16_t operator[](int64_t i) const { return data()[i]; }
  absl::Span<const uint16_t> span() const { return {data(), static_cast<size_t>(size_)}; }
  std::vector<uint16_t> ToVector() const { return {data(), data() + size_}; }
  // Tokens [begin, begin + length); error unless 0 <= begin <= begin + length <= size().
  absl::StatusOr<TokenSequence> Slice(int64_t begin, int64_t length) const;
  // The largest id (0 when empty).
  uint16_t MaxToken() const;

 private:
  std::shared_ptr<const std::vector<uint16_t>> storage_;
  int64_t begin_ = 0;
  int64_t size_ = 0;
};

// Decodes nanoGPT's .bin bytes (uint16 little-endian, no header). `name` is for messages.
// Errors: empty input, odd byte count.
absl::StatusOr<TokenSequence> ParseTokenBin(absl::string_view bytes, absl::string_view name);
absl::StatusOr<TokenSequence> ReadTokenBin(const std::string& path, const DataRoots& roots);
// Writes tokens in the same format (for data preparation and tests).
absl::Status WriteTokenBin(const std::string& path, const TokenSequence& tokens);

// A train/val pair of token sequences, with the tokenizer when the source was text.
class Dataset {
 public:
  // Tokenizes `text` with `tokenizer` and splits it 90/10. `name` is for messages.
  static absl::StatusOr<Dataset> FromText(absl::string_view text, const Tokenizer& tokenizer, absl::string_view name);
  // Reads a text file; kChar builds the vocabulary from the whole file (as nanoGPT).
  static absl::StatusOr<Dataset> LoadTextFile(const std::string& path, TokenizerKind kind, const DataRoots& roots);
  // Reads a text file with a given tokenizer (e.g. the one saved in a checkpoint).
  static absl::StatusOr<Dataset> LoadTextFile(const std::string& path, const Tokenizer& tokenizer,
                                              const DataRoots& roots);
  // Reads nanoGPT's train.bin and val.bin.
  static absl::StatusOr<Dataset> LoadBinFiles(const std::string& train_path, const std::string& val_path,
                                              const DataRoots& roots);
  // From ready token sequences (vocab_size: the tokenizer's, or max token + 1 without one).
  Dataset(TokenSequence train, TokenSequence val, std::optional<Tokenizer> tokenizer);

  const TokenSequence& train() const { return train_; }
  const TokenSequence& val() const { return val_; }
  // Present for text sources.
  const std::optional<Tokenizer>& tokenizer() const { return tokenizer_; }
  // The tokenizer's vocabulary, or (token files) the largest id in either split plus one.
  int64_t vocab_size() const { return vocab_size_; }

  // Both splits must hold at least block_size + 1 tokens (one window plus its target).
  absl::Status CheckBlockSize(int64_t block_size) const;
  // Every token id must be below `vocab_size` (a model's embedding size).
  absl::Status CheckVocab(int64_t vocab_size) const;
  // Worker `index` of `count` gets training tokens [n*index/count, n*(index+1)/count);
  // error unless 0 <= index < count and the shard holds at least block_size + 1 tokens.
  absl::StatusOr<TokenSequence> Shard(int64_t index, int64_t count, int64_t block_size) const;

 private:
  TokenSequence train_;
  TokenSequence val_;
  std::optional<Tokenizer> tokenizer_;
  int64_t vocab_size_ = 0;
};

// Loads `path` in `format` (`val_path` only for kBin) and checks both splits against
// `block_size`. Errors name the file: refused by `roots` (data_roots.h), empty, odd byte
// count, too short.
absl::StatusOr<Dataset> LoadDataset(DataFormat format, const std::string& path, const std::string& val_path,
                                    int64_t block_size, const DataRoots& roots);

// One batch: inputs and next-token targets, both i32 [batch_size, block_size].
struct Batch {
  Tensor x;
  Tensor y;
};

// nanoGPT's get_batch offsets for batch number `cursor`: batch_size values, each uniform in
// [0, data_size - block_size - 1] (torch.randint(len(data) - block_size, (B,))), drawn with
// UniformBelow from Xoshiro256ss::FromSeed(MixSeed(seed, cursor)) (see rng.h).
absl::StatusOr<std::vector<int64_t>> BatchOffsets(int64_t data_size, int64_t batch_size, int64_t block_size,
                                                  uint64_t seed, uint64_t cursor);
// x[b] = data[i_b : i_b + block_size], y[b] = data[i_b + 1 : i_b + block_size + 1], with
// i_b = BatchOffsets(...)[b]. A pure function of its arguments.
absl::StatusOr<Batch> GetBatch(const TokenSequence& data, int64_t batch_size, int64_t block_size, uint64_t seed,
                               uint64_t cursor);

// Walks the batch sequence of one seed: Next() returns GetBatch(..., seed, cursor) and
// advances the cursor. Its whole state is two integers.
class BatchSampler {
 public:
  struct State {
    uint64_t seed = 0;
    uint64_t cursor = 0;  // number of batches drawn so far
    bool operator==(const State&) const = default;
  };
  explicit BatchSampler(uint64_t seed, uint64_t cursor = 0) : state_{seed, cursor} {}
  explicit BatchSampler(State state) : state_(state) {}

  // The cursor advances only on success.
  absl::StatusOr<Batch> Next(const TokenSequence& data, int64_t batch_size, int64_t block_size);
  const State& state() const { return state_; }

 private:
  State state_;
};

}  // namespace pcp

#endif  // PCP_TRAINING_DATASET_H_
