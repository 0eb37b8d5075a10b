#include "pcp/tensor/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pcp/base/file.h"
#include "pcp/base/json.h"
#include "pcp/base/status_macros.h"

namespace pcp {

// Tensor storage is host order and the format is little-endian; we copy bytes verbatim.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

namespace {

constexpr absl::string_view kMetadataKey = "__metadata__";

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin;
  uint64_t end;
};

struct ParsedHeader {
  std::vector<Entry> entries;  // sorted by data offset
  SafetensorsMetadata metadata;
};

std::string OffsetsString(uint64_t begin, uint64_t end) { return absl::StrCat("[", begin, ", ", end, "]"); }

// The 8-byte length prefix followed by the space-padded JSON header.
std::string BuildHeader(const std::vector<NamedTensor>& tensors, const SafetensorsMetadata& metadata) {
  Json header = Json::Object();
  Json::ObjectType& members = header.object_items();
  if (!metadata.empty()) {
    Json::ObjectType meta;
    for (const auto& [key, value] : metadata) meta.emplace_back(key, Json(value));
    members.emplace_back(std::string(kMetadataKey), Json::Object(std::move(meta)));
  }
  int64_t offset = 0;
  for (const NamedTensor& t : tensors) {
    Json::ArrayType shape;
    for (int64_t d : t.tensor.shape()) shape.emplace_back(d);
    int64_t end = offset + t.tensor.byte_size();
    members.emplace_back(t.name, Json::Object({{"dtype", Json(SafetensorsName(t.tensor.dtype()))},
                                               {"shape", Json::Array(std::move(shape))},
                                               {"data_offsets", Json::Array({offset, end})}}));
    offset = end;
  }
  std::string json = header.Serialize();
  json.append((8 - json.size() % 8) % 8, ' ');  // as the reference implementation pads
  std::string out(8, '\0');
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  out += json;
  return out;
}

// Reads N from the first 8 bytes and checks it against the file size.
absl::StatusOr<uint64_t> HeaderLength(absl::string_view prefix, uint64_t file_size) {
  if (file_size < 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("file is ", file_size, " bytes, too short for the 8-byte header length"));
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(prefix[i]);
  if (n > kMaxSafetensorsHeaderBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("header length ", n, " exceeds the limit of ", kMaxSafetensorsHeaderBytes, " bytes"));
  }
  if (n > file_size - 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("header length ", n, " exceeds the ", file_size - 8, " bytes that follow the length field"));
  }
  return n;
}

absl::StatusOr<uint64_t> NonNegativeInt(const Json& v) {
  if (!v.is_int() || v.int_value() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("expected a non-negative integer, found ",
                                                   v.is_number() ? v.Serialize() : JsonTypeName(v.type())));
  }
  return static_cast<uint64_t>(v.int_value());
}

absl::StatusOr<Entry> ParseEntry(const std::string& name, const Json& info, uint64_t data_size) {
  if (!info.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", name, "': expected an object, found ", JsonTypeName(info.type())));
  }
  Entry e;
  e.name = name;
  auto field = [&](absl::string_view key, Json::Type type) -> absl::StatusOr<const Json*> {
    const Json* v = info.Find(key);
    if (v == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "': missing \"", key, "\""));
    }
    if (v->type() != type) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "': \"", key, "\" must be a JSON ",
                                                     JsonTypeName(type), ", found ", JsonTypeName(v->type())));
    }
    return v;
  };
  PCP_ASSIGN_OR_RETURN(const Json* dtype, field("dtype", Json::Type::kString));
  PCP_ASSIGN_OR_RETURN(e.dtype, ParseSafetensorsDType(dtype->string_value()), _ << "tensor '" << name << "'");
  PCP_ASSIGN_OR_RETURN(const Json* shape, field("shape", Json::Type::kArray));
  // Every partial product must fit in int64 (even if a later dimension is 0) so that
  // NumElements() never overflows.
  int64_t elements = 1;
  for (size_t i = 0; i < shape->size(); ++i) {
    const Json& d = shape->array_items()[i];
    PCP_ASSIGN_OR_RETURN(uint64_t dim, NonNegativeInt(d), _ << "tensor '" << name << "': shape dimension " << i);
    e.shape.push_back(static_cast<int64_t>(dim));
    if (dim != 0 && __builtin_mul_overflow(elements, static_cast<int64_t>(dim), &elements)) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", name, "': shape ", shape->Serialize(), " is too large"));
    }
  }
  PCP_ASSIGN_OR_RETURN(const Json* offsets, field("data_offsets", Json::Type::kArray));
  if (offsets->size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", name, "': data_offsets must be [begin, end], found ", offsets->Serialize()));
  }
  PCP_ASSIGN_OR_RETURN(e.begin, NonNegativeInt(offsets->array_items()[0]),
                       _ << "tensor '" << name << "': data_offsets[0]");
  PCP_ASSIGN_OR_RETURN(e.end, NonNegativeInt(offsets->array_items()[1]),
                       _ << "tensor '" << name << "': data_offsets[1]");
  if (e.begin > e.end) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", name, "': data_offsets ", OffsetsString(e.begin, e.end), " end before they begin"));
  }
  if (e.end > data_size) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "': data_offsets ", OffsetsString(e.begin, e.end),
                                                   " are out of range: the data section is ", data_size, " bytes"));
  }
  // elements * size cannot overflow: elements fits in int64 and the check is in uint128.
  unsigned __int128 needed = static_cast<unsigned __int128>(NumElements(e.shape)) * SizeOf(e.dtype);
  if (needed != e.end - e.begin) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "': shape ", shape->Serialize(), " of ",
                                                   SafetensorsName(e.dtype), " needs ", static_cast<uint64_t>(needed),
                                                   " bytes but data_offsets ", OffsetsString(e.begin, e.end), " span ",
                                                   e.end - e.begin));
  }
  return e;
}

absl::StatusOr<ParsedHeader> ParseHeader(absl::string_view text, uint64_t data_size) {
  PCP_ASSIGN_OR_RETURN(Json header, Json::Parse(text), _ << "invalid JSON header");
  if (!header.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("header must be a JSON object, found ", JsonTypeName(header.type())));
  }
  ParsedHeader out;
  for (const auto& [key, value] : header.object_items()) {
    if (key == kMetadataKey) {
      if (!value.is_object()) {
        return absl::InvalidArgumentError(
            absl::StrCat("\"__metadata__\" must be an object of strings, found ", JsonTypeName(value.type())));
      }
      for (const auto& [k, v] : value.object_items()) {
        if (!v.is_string()) {
          return absl::InvalidArgumentError(
              absl::StrCat("\"__metadata__\" value of '", k, "' must be a string, found ", JsonTypeName(v.type())));
        }
        out.metadata.emplace_back(k, v.string_value());
      }
      continue;
    }
    PCP_ASSIGN_OR_RETURN(Entry e, ParseEntry(key, value, data_size));
    out.entries.push_back(std::move(e));
  }
  std::stable_sort(out.entries.begin(), out.entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  // The tensors must tile the data section exactly, as the reference implementation demands.
  uint64_t expected = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : out.entries) {
    if (e.begin < expected) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", e.name, "': data_offsets ",
                                                     OffsetsString(e.begin, e.end), " overlap tensor '", previous->name,
                                                     "' at ", OffsetsString(previous->begin, previous->end)));
    }
    if (e.begin > expected) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", e.name, "': data_offsets ",
                                                     OffsetsString(e.begin, e.end),
                                                     " leave a gap: the previous tensor data ends at ", expected));
    }
    expected = e.end;
    previous = &e;
  }
  if (expected != data_size) {
    return absl::InvalidArgumentError(absl::StrCat("the data section is ", data_size,
                                                   " bytes but the tensors cover only ", expected,
                                                   " (trailing bytes)"));
  }
  return out;
}

// Reads exactly `size` bytes at `offset`; a short read means the file shrank under us.
absl::Status PreadAll(int fd, void* buf, uint64_t size, uint64_t offset) {
  char* p = static_cast<char*>(buf);
  while (size > 0) {
    ssize_t n = ::pread(fd, p, size, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::Status(absl::ErrnoToStatusCode(errno),
                          absl::StrCat("reading: ", std::error_code(errno, std::generic_category()).message()));
    }
    if (n == 0) return absl::DataLossError(absl::StrCat("unexpected end of file at byte ", offset));
    p += n;
    size -= static_cast<uint64_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<SafetensorsContents> ReadOpenFile(int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    return absl::Status(absl::ErrnoToStatusCode(errno),
                        absl::StrCat("stat: ", std::error_code(errno, std::generic_category()).message()));
  }
  if (!S_ISREG(st.st_mode)) return absl::InvalidArgumentError("not a regular file");
  uint64_t file_size = static_cast<uint64_t>(st.st_size);
  char prefix[8] = {};
  if (file_size >= 8) PCP_RETURN_IF_ERROR(PreadAll(fd, prefix, 8, 0));
  PCP_ASSIGN_OR_RETURN(uint64_t n, HeaderLength(absl::string_view(prefix, 8), file_size));
  std::string header(n, '\0');
  PCP_RETURN_IF_ERROR(PreadAll(fd, header.data(), n, 8));
  uint64_t data_start = 8 + n;
  PCP_ASSIGN_OR_RETURN(ParsedHeader parsed, ParseHeader(header, file_size - data_start));
  SafetensorsContents out;
  out.metadata = std::move(parsed.metadata);
  out.tensors.reserve(parsed.entries.size());
  for (Entry& e : parsed.entries) {
    Tensor t(e.dtype, std::move(e.shape));
    PCP_RETURN_IF_ERROR(PreadAll(fd, t.raw_data(), e.end - e.begin, data_start + e.begin),
                        _ << "tensor '" << e.name << "'");
    out.tensors.push_back({std::move(e.name), std::move(t)});
  }
  return out;
}

}  // namespace

const Tensor* SafetensorsContents::Find(absl::string_view name) const {
  for (const NamedTensor& t : tensors) {
    if (t.name == name) return &t.tensor;
  }
  return nullptr;
}

absl::Status ValidateSafetensorsInput(const std::vector<NamedTensor>& tensors, const SafetensorsMetadata& metadata) {
  std::unordered_set<std::string> names;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const NamedTensor& t = tensors[i];
    if (t.name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("safetensors: tensor #", i, " has an empty name"));
    }
    if (t.name == kMetadataKey) {
      return absl::InvalidArgumentError("safetensors: a tensor cannot be named \"__metadata__\"");
    }
    if (!t.tensor.valid()) {
      return absl::InvalidArgumentError(absl::StrCat("safetensors: tensor '", t.name, "' is invalid (empty)"));
    }
    if (!names.insert(t.name).second) {
      return absl::InvalidArgumentError(absl::StrCat("safetensors: duplicate tensor name '", t.name, "'"));
    }
  }
  std::unordered_set<std::string> keys;
  for (const auto& [key, value] : metadata) {
    if (!keys.insert(key).second) {
      return absl::InvalidArgumentError(absl::StrCat("safetensors: duplicate metadata key '", key, "'"));
    }
  }
  return absl::OkStatus();
}

std::string SerializeSafetensors(const std::vector<NamedTensor>& tensors, const SafetensorsMetadata& metadata) {
  assert(ValidateSafetensorsInput(tensors, metadata).ok());
  std::string out = BuildHeader(tensors, metadata);
  for (const NamedTensor& t : tensors) {
    out.append(static_cast<const char*>(t.tensor.raw_data()), t.tensor.byte_size());
  }
  return out;
}

absl::StatusOr<SafetensorsContents> ParseSafetensors(absl::string_view bytes) {
  PCP_ASSIGN_OR_RETURN(uint64_t n, HeaderLength(bytes, bytes.size()));
  absl::string_view data = bytes.substr(8 + n);
  PCP_ASSIGN_OR_RETURN(ParsedHeader parsed, ParseHeader(bytes.substr(8, n), data.size()));
  SafetensorsContents out;
  out.metadata = std::move(parsed.metadata);
  out.tensors.reserve(parsed.entries.size());
  for (Entry& e : parsed.entries) {
    Tensor t(e.dtype, std::move(e.shape));
    std::memcpy(t.raw_data(), data.data() + e.begin, e.end - e.begin);
    out.tensors.push_back({std::move(e.name), std::move(t)});
  }
  return out;
}

absl::Status WriteSafetensorsFile(const std::string& path, const std::vector<NamedTensor>& tensors,
                                  const SafetensorsMetadata& metadata) {
  PCP_RETURN_IF_ERROR(ValidateSafetensorsInput(tensors, metadata), _ << "writing '" << path << "'");
  std::string header = BuildHeader(tensors, metadata);
  std::vector<absl::string_view> parts;
  parts.reserve(tensors.size() + 1);
  parts.emplace_back(header);
  for (const NamedTensor& t : tensors) {
    parts.emplace_back(static_cast<const char*>(t.tensor.raw_data()), static_cast<size_t>(t.tensor.byte_size()));
  }
  return WriteFileAtomicParts(path, parts);
}

absl::StatusOr<SafetensorsContents> ReadSafetensorsFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    return absl::Status(absl::ErrnoToStatusCode(err),
                        absl::StrCat("'", path, "': ", std::error_code(err, std::generic_category()).message()));
  }
  absl::StatusOr<SafetensorsContents> out = ReadOpenFile(fd);
  ::close(fd);
  if (!out.ok()) return Annotate(out.status(), absl::StrCat("'", path, "'"));
  return out;
}

}  // namespace pcp
