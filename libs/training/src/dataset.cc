#include "pcp/training/dataset.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "pcp/base/enum_names.h"
#include "pcp/base/file.h"
#include "pcp/base/status_macros.h"
#include "pcp/training/rng.h"

namespace pcp {

absl::string_view DataFormatName(DataFormat format) { return NameOf(kDataFormatNames, format); }

DataFormat InferDataFormat(absl::string_view path) {
  return absl::EndsWith(path, ".bin") ? DataFormat::kBin : DataFormat::kTextChar;
}

// ---------------------------------------------------------------------------- TokenSequence

TokenSequence::TokenSequence(std::vector<uint16_t> tokens)
    : storage_(std::make_shared<const std::vector<uint16_t>>(std::move(tokens))),
      size_(static_cast<int64_t>(storage_->size())) {}

absl::StatusOr<TokenSequence> TokenSequence::FromIds(absl::Span<const int32_t> ids) {
  std::vector<uint16_t> tokens(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= kMaxTokenVocab) {
      return absl::InvalidArgumentError(absl::StrCat("token id ", ids[i], " at position ", i,
                                                     " does not fit uint16 token storage [0, ", kMaxTokenVocab, ")"));
    }
    tokens[i] = static_cast<uint16_t>(ids[i]);
  }
  return TokenSequence(std::move(tokens));
}

absl::StatusOr<TokenSequence> TokenSequence::Slice(int64_t begin, int64_t length) const {
  if (begin < 0 || length < 0 || begin > size_ || length > size_ - begin) {
    return absl::OutOfRangeError(
        absl::StrCat("slice [", begin, ", ", begin, " + ", length, ") of a sequence of ", size_, " tokens"));
  }
  TokenSequence s = *this;
  s.begin_ = begin_ + begin;
  s.size_ = length;
  return s;
}

uint16_t TokenSequence::MaxToken() const {
  absl::Span<const uint16_t> s = span();
  return s.empty() ? 0 : *std::max_element(s.begin(), s.end());
}

// ------------------------------------------------------------------------------- .bin files

absl::StatusOr<TokenSequence> ParseTokenBin(absl::string_view bytes, absl::string_view name) {
  if (bytes.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": empty token file"));
  }
  if (bytes.size() % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": odd byte count ", bytes.size(),
                                                   "; a token file holds little-endian uint16 tokens (2 bytes each)"));
  }
  std::vector<uint16_t> tokens(bytes.size() / 2);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = static_cast<uint16_t>(p[2 * i] | (p[2 * i + 1] << 8));
  }
  return TokenSequence(std::move(tokens));
}

absl::StatusOr<TokenSequence> ReadTokenBin(const std::string& path, const DataRoots& roots) {
  PCP_ASSIGN_OR_RETURN(std::string bytes, roots.Read(path));
  return ParseTokenBin(bytes, path);
}

absl::Status WriteTokenBin(const std::string& path, const TokenSequence& tokens) {
  std::string bytes(2 * tokens.size(), '\0');
  for (int64_t i = 0; i < tokens.size(); ++i) {
    bytes[2 * i] = static_cast<char>(tokens[i] & 0xff);
    bytes[2 * i + 1] = static_cast<char>(tokens[i] >> 8);
  }
  return WriteFileAtomic(path, bytes);
}

// ------------------------------------------------------------------------------------ Dataset

Dataset::Dataset(TokenSequence train, TokenSequence val, std::optional<Tokenizer> tokenizer)
    : train_(std::move(train)), val_(std::move(val)), tokenizer_(std::move(tokenizer)) {
  vocab_size_ =
      tokenizer_.has_value() ? tokenizer_->vocab_size() : int64_t{std::max(train_.MaxToken(), val_.MaxToken())} + 1;
}

absl::StatusOr<Dataset> Dataset::FromText(absl::string_view text, const Tokenizer& tokenizer, absl::string_view name) {
  if (text.empty()) return absl::InvalidArgumentError(absl::StrCat(name, ": empty text file"));
  PCP_ASSIGN_OR_RETURN(std::vector<uint16_t> ids, tokenizer.EncodeCompact(text), _ << name);
  // Python's int(n * 0.9): the product in double precision, truncated.
  const auto n = static_cast<int64_t>(ids.size());
  const auto n_train = static_cast<int64_t>(static_cast<double>(n) * kTrainFraction);
  TokenSequence all(std::move(ids));
  PCP_ASSIGN_OR_RETURN(TokenSequence train, all.Slice(0, n_train));
  PCP_ASSIGN_OR_RETURN(TokenSequence val, all.Slice(n_train, n - n_train));
  return Dataset(std::move(train), std::move(val), tokenizer);
}

absl::StatusOr<Dataset> Dataset::LoadTextFile(const std::string& path, TokenizerKind kind, const DataRoots& roots) {
  PCP_ASSIGN_OR_RETURN(std::string text, roots.Read(path));
  if (text.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": empty text file"));
  Tokenizer tokenizer = Tokenizer::Byte();
  if (kind == TokenizerKind::kChar) {
    PCP_ASSIGN_OR_RETURN(tokenizer, Tokenizer::BuildChar(text), _ << path);
  }
  return FromText(text, tokenizer, path);
}

absl::StatusOr<Dataset> Dataset::LoadTextFile(const std::string& path, const Tokenizer& tokenizer,
                                              const DataRoots& roots) {
  PCP_ASSIGN_OR_RETURN(std::string text, roots.Read(path));
  return FromText(text, tokenizer, path);
}

absl::StatusOr<Dataset> Dataset::LoadBinFiles(const std::string& train_path, const std::string& val_path,
                                              const DataRoots& roots) {
  PCP_ASSIGN_OR_RETURN(TokenSequence train, ReadTokenBin(train_path, roots));
  PCP_ASSIGN_OR_RETURN(TokenSequence val, ReadTokenBin(val_path, roots));
  return Dataset(std::move(train), std::move(val), std::nullopt);
}

absl::Status Dataset::CheckBlockSize(int64_t block_size) const {
  if (block_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat("block_size must be >= 1, got ", block_size));
  }
  for (const auto& [split, seq] : {std::pair{"train", &train_}, std::pair{"val", &val_}}) {
    if (seq->size() < block_size + 1) {
      return absl::InvalidArgumentError(absl::StrCat("the ", split, " split has ", seq->size(),
                                                     " tokens, shorter than block_size + 1 = ", block_size + 1));
    }
  }
  return absl::OkStatus();
}

absl::Status Dataset::CheckVocab(int64_t vocab_size) const {
  for (const auto& [split, seq] : {std::pair{"train", &train_}, std::pair{"val", &val_}}) {
    absl::Span<const uint16_t> s = seq->span();
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] >= vocab_size) {
        return absl::InvalidArgumentError(absl::StrCat("token id ", s[i], " at position ", i, " of the ", split,
                                                       " split is outside vocab_size ", vocab_size));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<TokenSequence> Dataset::Shard(int64_t index, int64_t count, int64_t block_size) const {
  if (count < 1 || index < 0 || index >= count) {
    return absl::InvalidArgumentError(absl::StrCat("shard index ", index, " of ", count, ": need 0 <= index < count"));
  }
  const int64_t n = train_.size();
  // n * index fits int64 for any realistic n (< 2^47 tokens) and count.
  const int64_t begin = n * index / count;
  const int64_t end = n * (index + 1) / count;
  if (end - begin < block_size + 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard ", index, " of ", count, " has ", end - begin, " training tokens (of ", n,
                     "), shorter than block_size + 1 = ", block_size + 1, "; use fewer workers or more data"));
  }
  return train_.Slice(begin, end - begin);
}

absl::StatusOr<Dataset> LoadDataset(DataFormat format, const std::string& path, const std::string& val_path,
                                    int64_t block_size, const DataRoots& roots) {
  absl::StatusOr<Dataset> data;
  switch (format) {
    case DataFormat::kTextChar: data = Dataset::LoadTextFile(path, TokenizerKind::kChar, roots); break;
    case DataFormat::kTextByte: data = Dataset::LoadTextFile(path, TokenizerKind::kByte, roots); break;
    case DataFormat::kBin: data = Dataset::LoadBinFiles(path, val_path, roots); break;
  }
  if (!data.ok()) return data.status();
  PCP_RETURN_IF_ERROR(data->CheckBlockSize(block_size), _ << path);
  return data;
}

// ------------------------------------------------------------------------------------ batches

absl::StatusOr<std::vector<int64_t>> BatchOffsets(int64_t data_size, int64_t batch_size, int64_t block_size,
                                                  uint64_t seed, uint64_t cursor) {
  if (batch_size < 1 || block_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch_size (", batch_size, ") and block_size (", block_size, ") must be >= 1"));
  }
  if (data_size < block_size + 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("data of ", data_size, " tokens is shorter than block_size + 1 = ", block_size + 1));
  }
  Xoshiro256ss rng = Xoshiro256ss::FromSeed(MixSeed(seed, cursor));
  const auto range = static_cast<uint64_t>(data_size - block_size);
  std::vector<int64_t> offsets(batch_size);
  for (int64_t& offset : offsets) offset = static_cast<int64_t>(rng.UniformBelow(range));
  return offsets;
}

absl::StatusOr<Batch> GetBatch(const TokenSequence& data, int64_t batch_size, int64_t block_size, uint64_t seed,
                               uint64_t cursor) {
  PCP_ASSIGN_OR_RETURN(std::vector<int64_t> offsets, BatchOffsets(data.size(), batch_size, block_size, seed, cursor));
  Batch batch{Tensor(DType::kI32, {batch_size, block_size}), Tensor(DType::kI32, {batch_size, block_size})};
  int32_t* x = batch.x.data<int32_t>();
  int32_t* y = batch.y.data<int32_t>();
  const uint16_t* tokens = data.data();
  for (int64_t b = 0; b < batch_size; ++b) {
    const uint16_t* window = tokens + offsets[b];
    for (int64_t t = 0; t < block_size; ++t) {
      x[b * block_size + t] = window[t];
      y[b * block_size + t] = window[t + 1];
    }
  }
  return batch;
}

absl::StatusOr<Batch> BatchSampler::Next(const TokenSequence& data, int64_t batch_size, int64_t block_size) {
  PCP_ASSIGN_OR_RETURN(Batch batch, GetBatch(data, batch_size, block_size, state_.seed, state_.cursor));
  ++state_.cursor;
  return batch;
}

}  // namespace pcp
