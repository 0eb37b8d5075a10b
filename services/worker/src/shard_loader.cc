#include "pcp/worker/shard_loader.h"

#include "absl/strings/str_cat.h"
#include "pcp/base/status_macros.h"
#include "pcp/training/tokenizer.h"

namespace pcp::worker {
namespace {

absl::StatusOr<TokenSequence> FromSharedFile(const v1::SharedFileShard& s, const DataRoots& roots) {
  if (s.begin_token() > s.end_token()) {
    return absl::InvalidArgumentError(
        absl::StrCat("shared shard: begin_token ", s.begin_token(), " > end_token ", s.end_token()));
  }
  const int64_t begin = static_cast<int64_t>(s.begin_token());
  const int64_t length = static_cast<int64_t>(s.end_token() - s.begin_token());
  switch (s.format()) {
    case v1::SHARED_FILE_FORMAT_TOKENS_U16_LE: {
      PCP_ASSIGN_OR_RETURN(TokenSequence all, ReadTokenBin(s.path(), roots));
      return all.Slice(begin, length);
    }
    case v1::SHARED_FILE_FORMAT_TEXT_CHAR:
    case v1::SHARED_FILE_FORMAT_TEXT_BYTE: {
      PCP_ASSIGN_OR_RETURN(std::string text, roots.Read(s.path()));
      if (static_cast<uint64_t>(text.size()) < s.end_token()) {
        return absl::InvalidArgumentError(absl::StrCat("shared shard: '", s.path(), "' has ", text.size(),
                                                       " bytes, the shard ends at ", s.end_token()));
      }
      const absl::string_view part =
          absl::string_view(text).substr(static_cast<size_t>(begin), static_cast<size_t>(length));
      Tokenizer tokenizer = Tokenizer::Byte();
      if (s.format() == v1::SHARED_FILE_FORMAT_TEXT_CHAR) {
        PCP_ASSIGN_OR_RETURN(tokenizer, Tokenizer::FromChars(s.char_vocabulary()), _ << "shared shard vocabulary");
      }
      PCP_ASSIGN_OR_RETURN(std::vector<uint16_t> ids, tokenizer.EncodeCompact(part),
                           _ << "shared shard '" << s.path() << "'");
      return TokenSequence(std::move(ids));
    }
    default: return absl::InvalidArgumentError(absl::StrCat("shared shard: unknown format ", s.format()));
  }
}

}  // namespace

absl::StatusOr<TokenSequence> LoadShard(const v1::DataShard& shard, absl::string_view inline_bytes,
                                        const DataRoots& roots) {
  switch (shard.source_case()) {
    case v1::DataShard::kInlineTokens: {
      const v1::InlineShard& s = shard.inline_tokens();
      if (s.encoding() != v1::TOKEN_ENCODING_U16_LE) {
        return absl::InvalidArgumentError(absl::StrCat("inline shard: unknown token encoding ", s.encoding()));
      }
      if (inline_bytes.size() != s.num_tokens() * 2) {
        return absl::InvalidArgumentError(absl::StrCat("inline shard: ", inline_bytes.size(), " bytes for ",
                                                       s.num_tokens(), " tokens (2 bytes each)"));
      }
      return ParseTokenBin(inline_bytes, "inline shard");
    }
    case v1::DataShard::kSharedFile: return FromSharedFile(shard.shared_file(), roots);
    case v1::DataShard::SOURCE_NOT_SET: break;
  }
  return absl::InvalidArgumentError("Assignment.shard has no source");
}

}  // namespace pcp::worker
