#include "pcp/plot/png.h"

#include <zlib.h>

#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace pcp::plot {
namespace {

void PutU32(std::string* out, uint32_t v) {
  const char bytes[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                         static_cast<char>(v)};
  out->append(bytes, 4);
}

// length, type, data, CRC of type + data.
void PutChunk(std::string* out, const char type[4], const std::string& data) {
  PutU32(out, static_cast<uint32_t>(data.size()));
  const size_t type_at = out->size();
  out->append(type, 4);
  out->append(data);
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, reinterpret_cast<const Bytef*>(out->data() + type_at), static_cast<uInt>(4 + data.size()));
  PutU32(out, static_cast<uint32_t>(crc));
}

}  // namespace

absl::StatusOr<std::string> EncodePng(const Canvas& canvas) {
  const auto w = static_cast<size_t>(canvas.width()), h = static_cast<size_t>(canvas.height());
  // Each scanline: filter type 0 (none), then the row's RGB bytes.
  std::string raw;
  raw.reserve(h * (1 + 3 * w));
  for (size_t y = 0; y < h; ++y) {
    raw.push_back('\0');
    raw.append(reinterpret_cast<const char*>(canvas.pixels().data() + y * 3 * w), 3 * w);
  }
  uLongf compressed_size = compressBound(static_cast<uLong>(raw.size()));
  std::string compressed(compressed_size, '\0');
  const int z = compress2(reinterpret_cast<Bytef*>(compressed.data()), &compressed_size,
                          reinterpret_cast<const Bytef*>(raw.data()), static_cast<uLong>(raw.size()), 6);
  if (z != Z_OK) return absl::ResourceExhaustedError(absl::StrCat("PNG: zlib compress2 failed (", z, ")"));
  compressed.resize(compressed_size);

  std::string png("\x89PNG\r\n\x1a\n", 8);
  std::string header;
  PutU32(&header, static_cast<uint32_t>(w));
  PutU32(&header, static_cast<uint32_t>(h));
  header.append({8, 2, 0, 0, 0});  // 8 bits per sample, RGB, deflate, adaptive filters, no interlace
  PutChunk(&png, "IHDR", header);
  PutChunk(&png, "IDAT", compressed);
  PutChunk(&png, "IEND", "");
  return png;
}

}  // namespace pcp::plot
