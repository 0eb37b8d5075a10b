#include "pcp/rpc/chunk_wire.h"

#include <grpcpp/support/proto_buffer_reader.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"

namespace pcp {
namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedOutputStream;

uint32_t LengthTag(int field) { return WireFormatLite::MakeTag(field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED); }

// The slice's reference to the payload's storage (the tensor or the encoded buffer).
void DeletePayload(void* owner) { delete static_cast<ChunkPayload*>(owner); }

// Sequential reads over the slices of a received ByteBuffer.
class SliceReader {
 public:
  explicit SliceReader(const std::vector<grpc::Slice>& slices) : slices_(slices) {
    for (const grpc::Slice& s : slices) remaining_ += s.size();
  }
  size_t remaining() const { return remaining_; }

  bool ReadVarint(uint64_t* value) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t b;
      if (!ReadByte(&b)) return false;
      v |= static_cast<uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) {
        *value = v;
        return true;
      }
    }
    return false;
  }
  // Appends the next n bytes to *out.
  bool CopyTo(size_t n, std::string* out) {
    return Consume(n, [&](const char* p, size_t k) { out->append(p, k); });
  }
  // Records views of the next n bytes.
  bool ViewInto(size_t n, std::vector<absl::string_view>* out) {
    return Consume(n, [&](const char* p, size_t k) { out->emplace_back(p, k); });
  }

 private:
  bool ReadByte(uint8_t* b) {
    return Consume(1, [&](const char* p, size_t) { *b = static_cast<uint8_t>(*p); });
  }
  template <typename Fn>
  bool Consume(size_t n, Fn&& fn) {
    if (n > remaining_) return false;
    remaining_ -= n;
    while (n > 0) {
      const grpc::Slice& s = slices_[slice_];
      const size_t k = std::min(n, s.size() - offset_);
      if (k > 0) fn(reinterpret_cast<const char*>(s.begin()) + offset_, k);
      n -= k;
      offset_ += k;
      if (offset_ == s.size()) {
        ++slice_;
        offset_ = 0;
      }
    }
    return true;
  }

  const std::vector<grpc::Slice>& slices_;
  size_t slice_ = 0, offset_ = 0, remaining_ = 0;
};

void AppendVarint(uint64_t v, std::string* out) {
  uint8_t buf[10];
  uint8_t* end = CodedOutputStream::WriteVarint64ToArray(v, buf);
  out->append(reinterpret_cast<char*>(buf), end - buf);
}

// Copies the `length` bytes of one message from `r` to *head, except the bytes field at
// `path` (field numbers, outermost first), whose bytes are recorded in *data instead. An
// embedded message on the path is re-encoded with its new length.
bool SplitMessage(SliceReader& r, size_t length, absl::Span<const int> path, std::string* head,
                  std::vector<absl::string_view>* data) {
  if (length > r.remaining()) return false;
  const size_t end = r.remaining() - length;
  while (r.remaining() > end) {
    uint64_t tag;
    if (!r.ReadVarint(&tag) || tag > UINT32_MAX || (tag >> 3) == 0) return false;
    const int field = static_cast<int>(tag >> 3);
    switch (tag & 7) {
      case WireFormatLite::WIRETYPE_VARINT: {
        uint64_t v;
        if (!r.ReadVarint(&v)) return false;
        AppendVarint(tag, head);
        AppendVarint(v, head);
        break;
      }
      case WireFormatLite::WIRETYPE_FIXED64:
        AppendVarint(tag, head);
        if (!r.CopyTo(8, head)) return false;
        break;
      case WireFormatLite::WIRETYPE_FIXED32:
        AppendVarint(tag, head);
        if (!r.CopyTo(4, head)) return false;
        break;
      case WireFormatLite::WIRETYPE_LENGTH_DELIMITED: {
        uint64_t n;
        if (!r.ReadVarint(&n) || n > r.remaining() - end) return false;
        if (!path.empty() && field == path[0] && path.size() == 1) {
          data->clear();  // a repeated bytes field: the last occurrence wins
          if (!r.ViewInto(n, data)) return false;
        } else if (!path.empty() && field == path[0]) {
          std::string nested;
          if (!SplitMessage(r, n, path.subspan(1), &nested, data)) return false;
          AppendVarint(tag, head);
          AppendVarint(nested.size(), head);
          head->append(nested);
        } else {
          AppendVarint(tag, head);
          AppendVarint(n, head);
          if (!r.CopyTo(n, head)) return false;
        }
        break;
      }
      default:  // groups: not in proto3
        return false;
    }
  }
  return r.remaining() == end;
}

}  // namespace

absl::Status ChunkMessageParser::Parse(grpc::ByteBuffer* buffer, absl::Span<const int> path,
                                       google::protobuf::MessageLite* msg) {
  slices_.clear();
  pieces_.clear();
  head_.clear();
  msg->Clear();
  const auto malformed = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed ", msg->GetTypeName(), " (", buffer->Length(), " bytes)"));
  };
  if (!buffer->Dump(&slices_).ok()) return malformed();
  SliceReader reader(slices_);
  if (!SplitMessage(reader, reader.remaining(), path, &head_, &pieces_) || !msg->ParseFromString(head_)) {
    pieces_.clear();
    return malformed();
  }
  return absl::OkStatus();
}

ReceivedPayload ChunkMessageParser::TakePayload() {
  ReceivedPayload taken;
  taken.slices_ = std::move(slices_);
  taken.pieces_ = std::move(pieces_);
  slices_.clear();
  pieces_.clear();
  return taken;
}

grpc::ByteBuffer SerializeWithPayload(const google::protobuf::MessageLite& head, absl::Span<const int> path,
                                      const ChunkPayload& payload) {
  // The header of the nested path, outermost first: tag, length of everything inside.
  // Lengths are computed innermost first.
  std::vector<size_t> inner(path.size());
  size_t length = payload.size;
  for (size_t i = path.size(); i-- > 0;) {
    inner[i] = length;
    length += CodedOutputStream::VarintSize32(LengthTag(path[i])) + CodedOutputStream::VarintSize64(length);
  }
  std::string prefix = head.SerializeAsString();
  for (size_t i = 0; i < path.size(); ++i) {
    uint8_t buf[16];
    uint8_t* end = CodedOutputStream::WriteVarint32ToArray(LengthTag(path[i]), buf);
    end = CodedOutputStream::WriteVarint64ToArray(inner[i], end);
    prefix.append(reinterpret_cast<char*>(buf), end - buf);
  }
  grpc::Slice slices[2] = {grpc::Slice(prefix), payload.size == 0
                                                    ? grpc::Slice()
                                                    : grpc::Slice(const_cast<char*>(payload.data), payload.size,
                                                                  &DeletePayload, new ChunkPayload(payload))};
  return grpc::ByteBuffer(slices, payload.size == 0 ? 1 : 2);
}

absl::Status ParseByteBuffer(grpc::ByteBuffer* buffer, google::protobuf::MessageLite* msg) {
  grpc::ProtoBufferReader reader(buffer);
  msg->Clear();
  if (!reader.status().ok() || !msg->ParseFromZeroCopyStream(&reader)) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed ", msg->GetTypeName(), " (", buffer->Length(), " bytes)"));
  }
  return absl::OkStatus();
}

}  // namespace pcp
